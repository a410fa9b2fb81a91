"""What the runner last did, read from the inventory Secrets: ``lockgate status`` and ``lockgate sync``.

Everything ``status`` shows is in the parents (``runner.plan.inventory``), so it works with
or without a running ``serve`` and needs only ``get``/``list`` on Secrets in the runner
namespace: readiness (Flux's Ready condition, ``readiness``), the applied revision and its
health, the last attempt whatever it was (``runner.plan.attempt``), the drift left
(``runner.plan.drift``), and the history. A
table has room for one line per sync, so its MESSAGE is the summary
(``lockgate.summary``); ``lockgate status NAME`` and ``--output json`` carry every message
whole. ``request`` is ``lockgate sync``: it sets the parent's ``lockgate.dev/requestedAt``
annotation, as ``flux reconcile`` sets ``reconcile.fluxcd.io/requestedAt``; ``serve`` runs
the sync when it sees a value it has not handled, and that pass may retry a digest that
was rolled back from. The value has microseconds (Flux writes RFC3339Nano), so two requests
in one second are two requests; a sync ``serve`` marks suspended is refused, since no pass
would answer.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockgate.errors import UsageError
from lockgate.summary import summarise
from runner.inventory import store
from runner.kube.client import Kube
from runner.pipeline.reconcile import check_name, runner_namespace
from runner.plan import attempt, history, shard
from runner.plan.inventory import SUSPENDED, Inventory

#: the MESSAGE column of the table: one line, summarised
MESSAGE_WIDTH = 120


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


@dataclass(frozen=True)
class Requested:
    """What ``lockgate sync`` set, and who will answer it."""

    at: str
    #: the runner namespace of the ``serve`` that runs the sync ("": no ``serve`` ever ran it)
    served_by: str

    def describe(self, name: str) -> str:
        if self.served_by:
            return (
                f"sync {name}: requested at {self.at}; the lockgate serve running it (runner namespace "
                f"{self.served_by}) answers within seconds; lockgate status {name} shows the request "
                "until it has"
            )
        return (
            f"sync {name}: requested at {self.at}; no lockgate serve has run this sync (its passes "
            "came from lockgate reconcile), so nothing answers the request until one with it in its "
            "configuration runs; to apply it now: lockgate reconcile --config FILE"
        )


def request(
    name: str,
    *,
    namespace: str | None = None,
    kube: Kube | None = None,
    kubeconfig: Path | None = None,
    context: str | None = None,
    now: dt.datetime | None = None,
) -> Requested:
    """Ask for a pass of sync ``name`` (``lockgate sync``): the requestedAt value set, and
    whether a ``serve`` runs the sync (the parent records the one that does)."""
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
    return Requested(at, inventory.served_by)


def readiness(inventory: Inventory) -> attempt.Readiness:
    """The sync's Ready condition, from its parent alone."""
    return attempt.readiness(
        attempt=inventory.last_attempt,
        held=inventory.held,
        health=inventory.health,
        revision=inventory.revision or inventory.digest,
        waiting=inventory.waiting,
        legacy_status=str(inventory.last_result.get("status") or ""),
    )


def _when(inventory: Inventory) -> str:
    return inventory.history[0].time if inventory.history else ""


def attempt_json(record: attempt.Attempt | None) -> dict[str, Any] | None:
    """The last attempt as ``--output json`` and the status page give it: the record, and its
    message summarised in one line (``summary``)."""
    if record is None:
        return None
    return record.to_json() | {"summary": summarise(record.message)}


def history_json(entries: Sequence[history.Entry]) -> list[dict[str, Any]]:
    """The history entries with each message whole and summarised in one line (``summary``)."""
    return [e.to_json() | {"summary": summarise(e.message)} for e in entries]


def to_json(inventory: Inventory) -> dict[str, Any]:
    return {
        "name": inventory.name,
        "namespace": inventory.namespace,
        "ready": readiness(inventory).to_json(),
        "suspended": inventory.suspended,
        "source": inventory.source,
        "revision": inventory.revision,
        "digest": inventory.digest,
        "verifiedBy": inventory.verified_by,
        "lastAttempt": attempt_json(inventory.last_attempt),
        "lastResult": {**inventory.last_result, "time": _when(inventory)},
        "health": inventory.health,
        "members": len(inventory.members),
        "history": history_json(inventory.history),
        "rejected": list(inventory.rejected),
        "requestedAt": inventory.requested_at,
        "lastHandledRequestedAt": inventory.handled_request,
        "waiting": inventory.waiting or None,
        "drifted": None
        if inventory.drift is None
        else inventory.drift.to_json() | {"summary": summarise(inventory.drift.message)},
    }


def short(revision: str) -> str:
    """``v1@sha256:0123456789ab`` for a table; JSON keeps the whole digest."""
    head, _, digest = revision.rpartition("sha256:")
    return f"{head}sha256:{digest[:12]}" if digest else revision


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def _attempted(inventory: Inventory) -> tuple[str, str]:
    """(result, since) of the last attempt; an older runner's parent has only the last result."""
    if inventory.last_attempt is not None:
        return inventory.last_attempt.result.value, inventory.last_attempt.time
    return str(inventory.last_result.get("status", "")), _when(inventory)


def table(listing: store.Listing) -> str:
    """One line per sync, as ``flux get``: readiness first, its message (summarised) last."""
    rows = [
        [
            "NAME",
            "READY",
            "SUSPENDED",
            "REVISION",
            "VERIFIED BY",
            "HEALTH",
            "LAST ATTEMPT",
            "SINCE",
            "MEMBERS",
            "MESSAGE",
        ]
    ]
    for inv in listing.inventories:
        ready = readiness(inv)
        result, since = _attempted(inv)
        rows.append(
            [
                inv.name,
                ready.status,
                str(inv.suspended),
                short(inv.revision or inv.digest) or "-",
                inv.verified_by or "-",
                inv.health,
                result or "-",
                since or "-",
                str(len(inv.members)),
                summarise(ready.message, MESSAGE_WIDTH),
            ]
        )
    lines = _columns(rows) if listing.inventories else ["no syncs have run in this namespace"]
    lines.extend(f"{inv.name}: {inv.waiting}" for inv in listing.inventories if inv.waiting)
    lines.extend(
        f"{inv.name}: drifted: {summarise(inv.drift.message, MESSAGE_WIDTH)}"
        for inv in listing.inventories
        if inv.drift is not None
    )
    lines.extend(f"unreadable: Secret {name}: {why}" for name, why in listing.problems)
    return "\n".join(lines)


def _block(label: str, text: str) -> list[str]:
    """``label`` and a message, whole: its first line beside the label, the rest indented."""
    first, *rest = text.splitlines() or [""]
    return [f"  {label:<10} {first}".rstrip(), *(f"{' ' * 13}{line}" for line in rest)]


def detail(inventory: Inventory) -> str:
    """One sync: readiness and the last attempt with their whole messages, then the history."""
    ready = readiness(inventory)
    lines = [f"sync {inventory.name} (namespace {inventory.namespace})"]
    lines.extend(_block("ready:", f"{ready.status} ({ready.reason})"))
    if inventory.suspended:
        lines.append("  suspended: yes (spec.suspend: no pass runs until it is false)")
    if ready.status != "True" and ready.message:
        lines.extend(_block("why:", ready.message))
    lines += [
        f"  source:    {inventory.source}",
        f"  revision:  {inventory.revision}",
        f"  digest:    {inventory.digest}",
        f"  verified:  {inventory.verified_by}",
        f"  health:    {inventory.health}",
        f"  members:   {len(inventory.members)}",
    ]
    last = inventory.last_attempt
    if last is not None:
        at = last.revision or last.digest
        lines.extend(
            _block("attempt:", f"{last.result.value} since {last.time}" + (f" at {at}" if at else ""))
        )
        if last.message and (ready.status == "True" or last.message != ready.message):
            lines.extend(_block("", last.message))
    else:
        status, summary = inventory.last_result.get("status", ""), inventory.last_result.get("summary", "")
        when = f" ({_when(inventory)})" if inventory.history else ""
        lines.append(f"  result:    {status}: {summary}{when}")
    if inventory.waiting:
        lines.append(f"  waiting:   {inventory.waiting}")
    if inventory.drift is not None:
        lines.extend(_block("drifted:", f"since {inventory.drift.time}\n{inventory.drift.message}"))
    if inventory.rejected:
        lines.append(f"  rejected:  {', '.join(inventory.rejected)} (rolled back; not applied again)")
    if inventory.request_pending:
        lines.append(f"  requested: {inventory.requested_at} (lockgate sync; not handled yet)")
    if inventory.history:
        lines.append("  history:")
        rows = [["TIME", "REVISION", "RESULT", "HEALTH", "VERIFIED BY", "MESSAGE"]]
        rows.extend(
            [
                e.time,
                short(e.revision or e.digest),
                e.result.value,
                e.health.value,
                e.verified_by,
                summarise(e.message, MESSAGE_WIDTH),
            ]
            for e in inventory.history
        )
        lines.extend("    " + line for line in _columns(rows))
        if any(summarise(e.message, MESSAGE_WIDTH) != e.message for e in inventory.history):
            lines.append(f"    (whole messages: lockgate status {inventory.name} -o json)")
    return "\n".join(lines)
