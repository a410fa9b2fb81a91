"""``lockgate adopt`` by hand: each sync's adoption (``runner.pipeline.adopt``) under its Lease.

As ``departures.by_hand`` does for ``lockgate delete``: the adopting pass holds the sync's
Lease, so a ``lockgate serve`` already running the same configuration never applies the sync
at the same time (it waits its turn and then finds everything adopted); a dry run takes no
Lease. Each sync gets its own client, so the requests counted are that sync's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lockgate.errors import Abandoned, UsageError
from runner.kube.client import Kube
from runner.pipeline import adopt as adopt_mod
from runner.pipeline import config as config_mod
from runner.pipeline.options import runner_namespace
from runner.plan import adoption
from runner.serve import leases


def by_hand(
    config_path: Path,
    names: Sequence[str],
    *,
    dry_run: bool = False,
    kubeconfig: Path | None = None,
    context: str | None = None,
) -> list[adopt_mod.Adoption]:
    """Adopt the named syncs of ``config_path`` (default: every one that names a Kustomization)."""
    loaded = config_mod.load(config_path)
    by_name = {s.name: s for s in loaded.syncs}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UsageError(
            f"--config {config_path} has no Sync {', '.join(unknown)}; it has {', '.join(by_name)}"
        )
    chosen = [by_name[n] for n in names] or [s for s in loaded.syncs if s.annotation(adoption.ANNOTATION)]
    if not chosen:
        raise UsageError(
            f"--config {config_path}: no Sync has a {adoption.ANNOTATION} annotation; name the syncs to adopt"
        )
    done: list[adopt_mod.Adoption] = []
    for options in chosen:
        kube = Kube.from_kubeconfig(kubeconfig, context=context, pool=options.concurrency + 4)
        if dry_run:
            done.append(adopt_mod.adopt(options, kube=kube, dry_run=True))
            continue
        namespace = runner_namespace(options.namespace)
        taken = leases.LeaseKeeper(kube).take(namespace, options.name)
        if not isinstance(taken, leases.Held):
            refused = adopt_mod.Adoption(sync=options.name)
            refused.error = Abandoned(
                f"sync {options.name} is being reconciled by {taken} right now (its Lease {namespace}/"
                f"{leases.lease_name(options.name)}); run lockgate adopt again when that pass ends"
            )
            done.append(refused)
            continue
        with taken:
            done.append(adopt_mod.adopt(options, kube=kube, guard=taken.guard))
    return done
