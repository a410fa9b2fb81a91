"""What the runner last did, read from the inventory Secrets: ``lockgate status`` and ``lockgate sync``.

Everything ``status`` shows is in the parents (``runner.plan.inventory``), so it works with
or without a running ``serve`` and needs only ``get``/``list`` on Secrets in the runner
namespace. ``request`` is ``lockgate sync``: it sets the parent's ``lockgate.dev/requestedAt``
annotation, as ``flux reconcile`` sets ``reconcile.fluxcd.io/requestedAt``; ``serve`` runs
the sync when it sees a value it has not handled, and that pass may retry a digest that
was rolled back from. The value has microseconds (Flux writes RFC3339Nano), so two requests
in one second are two requests; a sync ``serve`` marks suspended is refused, since no pass
would answer.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from lockgate.errors import UsageError
from runner.inventory import store
from runner.kube.client import Kube
from runner.pipeline.reconcile import check_name, runner_namespace
from runner.plan import history, shard
from runner.plan.inventory import SUSPENDED, Inventory


def _client(kube: Kube | None, kubeconfig: Path | None, context: str | None) -> Kube:
    return kube or Kube.from_kubeconfig(kubeconfig, context=context)


def _never_ran(name: str, namespace: str) -> UsageError:
    return UsageError(
        f"sync {name} has never run in namespace {namespace} (no Secret lockgate-{name}): run "
        f"lockgate reconcile --config FILE or lockgate serve with it first, or pass -n NAMESPACE"
    )


def read(
    *,
    namespace: str | None = None,
    name: str | None = None,
    kube: Kube | None = None,
    kubeconfig: Path | None = None,
    context: str | None = None,
) -> store.Listing:
    """The inventories of the runner namespace, or the one of sync ``name`` (which must exist)."""
    ns = runner_namespace(namespace)
    client = _client(kube, kubeconfig, context)
    if name is None:
        return store.list_all(client, ns)
    check_name(name)
    inventory = store.read(client, name, ns)
    if not inventory.exists:
        raise _never_ran(name, ns)
    return store.Listing(inventories=[inventory])


def request(
    name: str,
    *,
    namespace: str | None = None,
    kube: Kube | None = None,
    kubeconfig: Path | None = None,
    context: str | None = None,
    now: dt.datetime | None = None,
) -> str:
    """Ask for a pass of sync ``name`` (``lockgate sync``); returns the requestedAt value set."""
    check_name(name)
    ns = runner_namespace(namespace)
    client = _client(kube, kubeconfig, context)
    inventory = store.read(client, name, ns)
    if not inventory.exists:
        raise _never_ran(name, ns)
    if inventory.suspended:
        raise UsageError(
            f"sync {name} is suspended (spec.suspend in the configuration lockgate serve runs; "
            f"annotation {SUSPENDED} on Secret {ns}/{inventory.parent}): nothing would run it. "
            "Resume it (drop spec.suspend) first, or run it once with lockgate reconcile --config FILE"
        )
    at = shard.micro_time((now or dt.datetime.now(dt.UTC)).timestamp())
    store.request(client, inventory, at)
    return at


def _health(inventory: Inventory) -> str:
    return inventory.history[0].health.value if inventory.history else history.Summary.UNKNOWN.value


def _when(inventory: Inventory) -> str:
    return inventory.history[0].time if inventory.history else ""


def to_json(inventory: Inventory) -> dict[str, Any]:
    newest = inventory.history[0] if inventory.history else None
    return {
        "name": inventory.name,
        "namespace": inventory.namespace,
        "source": inventory.source,
        "revision": inventory.revision,
        "digest": inventory.digest,
        "verifiedBy": newest.verified_by if newest else "",
        "lastResult": {**inventory.last_result, "time": _when(inventory)},
        "health": _health(inventory),
        "members": len(inventory.members),
        "history": [e.to_json() for e in inventory.history],
        "rejected": list(inventory.rejected),
        "requestedAt": inventory.requested_at,
        "lastHandledRequestedAt": inventory.handled_request,
        "waiting": inventory.waiting or None,
    }


def short(revision: str) -> str:
    """``v1@sha256:0123456789ab`` for a table; JSON keeps the whole digest."""
    head, _, digest = revision.rpartition("sha256:")
    return f"{head}sha256:{digest[:12]}" if digest else revision


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def table(listing: store.Listing) -> str:
    """One line per sync."""
    rows = [["NAME", "REVISION", "VERIFIED BY", "RESULT", "HEALTH", "WHEN", "MEMBERS"]]
    for inv in listing.inventories:
        newest = inv.history[0] if inv.history else None
        rows.append(
            [
                inv.name,
                short(inv.revision or inv.digest),
                newest.verified_by if newest else "",
                str(inv.last_result.get("status", "")),
                _health(inv),
                _when(inv),
                str(len(inv.members)),
            ]
        )
    lines = _columns(rows) if listing.inventories else ["no syncs have run in this namespace"]
    lines.extend(f"{inv.name}: {inv.waiting}" for inv in listing.inventories if inv.waiting)
    lines.extend(f"unreadable: Secret {name}: {why}" for name, why in listing.problems)
    return "\n".join(lines)


def detail(inventory: Inventory) -> str:
    """One sync with its history."""
    newest = inventory.history[0] if inventory.history else None
    lines = [
        f"sync {inventory.name} (namespace {inventory.namespace})",
        f"  source:    {inventory.source}",
        f"  revision:  {inventory.revision}",
        f"  digest:    {inventory.digest}",
        f"  verified:  {newest.verified_by if newest else ''}",
        f"  result:    {inventory.last_result.get('status', '')}: {inventory.last_result.get('summary', '')}"
        + (f" ({_when(inventory)})" if newest else ""),
        f"  health:    {_health(inventory)}",
        f"  members:   {len(inventory.members)}",
    ]
    if inventory.waiting:
        lines.append(f"  waiting:   {inventory.waiting}")
    if inventory.rejected:
        lines.append(f"  rejected:  {', '.join(inventory.rejected)} (rolled back; not applied again)")
    if inventory.request_pending:
        lines.append(f"  requested: {inventory.requested_at} (lockgate sync; not handled yet)")
    if inventory.history:
        lines.append("  history:")
        rows = [["TIME", "REVISION", "RESULT", "HEALTH", "VERIFIED BY", "MESSAGE"]]
        rows.extend(
            [e.time, short(e.revision or e.digest), e.result.value, e.health.value, e.verified_by, e.message]
            for e in inventory.history
        )
        lines.extend("    " + line for line in _columns(rows))
    return "\n".join(lines)
