"""kustomize-controller's flags as the Runner document's settings.

Pure. The flags come from the container of the ``kustomize-controller`` Deployment (in the
cluster, or in the fleet repository's ``gotk-components.yaml``). Flux allows remote bases
unless ``--no-remote-bases`` (``flux install`` does not set it); lockgate refuses them unless
``allowRemoteBases`` — so a Flux that allowed them is carried as allowing them, with a
``security`` row. Without the Deployment the flags are unknown: lockgate's defaults stay
(remote bases refused), and a row says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runner.plan.fluximport.objects import FluxObject, get
from runner.plan.fluximport.report import Report, RowClass

DEPLOYMENT = "kustomize-controller"
#: flags without a meaning for lockgate (logging, listeners, leader election, caches)
IGNORED = frozenset(
    {
        "events-addr", "health-addr", "metrics-addr", "enable-leader-election", "log-level", "log-encoding",
        "watch-all-namespaces", "leader-election-lease-duration", "leader-election-renew-deadline",
        "leader-election-retry-period", "requeue-dependency", "storage-path", "kube-api-qps",
        "kube-api-burst", "interval-jitter-percentage", "max-retry-delay", "min-retry-delay",
        "sops-age-secret", "token-cache-max-size", "token-cache-max-duration", "concurrent-ssa",
    }
)  # fmt: skip


def _flags(args: Sequence[str]) -> dict[str, str]:
    flags: dict[str, str] = {}
    for arg in args:
        if not arg.startswith("--"):
            continue
        name, sep, value = arg[2:].partition("=")
        flags[name] = value if sep else "true"
    return flags


def container_args(deployment: Mapping[str, Any]) -> list[str]:
    containers = get(deployment, "spec", "template", "spec", "containers") or []
    for container in containers:
        if isinstance(container, Mapping) and container.get("name") == "manager":
            return [str(a) for a in container.get("args") or []]
    return [str(a) for a in (containers[0].get("args") or [])] if containers else []


def runner_settings(deployment: FluxObject | None, report: Report) -> dict[str, Any]:
    """The Runner spec fields the flags give (besides the runner namespace)."""
    if deployment is None:
        report.add(
            f"Deployment flux-system/{DEPLOYMENT}",
            "spec.template.spec.containers[manager].args",
            RowClass.SEMANTIC,
            "not found, so Flux's flags are unknown: lockgate's defaults are kept (remote bases refused, "
            "where Flux allows them unless --no-remote-bases; no default ServiceAccount; cross-namespace "
            "references allowed)",
        )
        return {}
    flags = _flags(container_args(deployment.body))
    settings: dict[str, Any] = {}
    where = "spec.template.spec.containers[manager].args"
    if flags.get("no-remote-bases", "false") != "true":
        settings["allowRemoteBases"] = True
        report.add(
            deployment.ref,
            f"{where}: --no-remote-bases",
            RowClass.SECURITY,
            "absent: Flux let kustomizations fetch remote bases, so allowRemoteBases is set; an artifact "
            "then reaches beyond what was signed: vendor the bases and remove it",
        )
    if flags.get("default-service-account"):
        settings["defaultServiceAccount"] = flags["default-service-account"]
    if flags.get("no-cross-namespace-refs", "false") == "true":
        settings["noCrossNamespaceRefs"] = True
    if flags.get("concurrent"):
        try:
            settings["concurrency"] = max(1, int(flags["concurrent"]))
        except ValueError:
            report.add(deployment.ref, f"{where}: --concurrent", RowClass.DROPPED, "not a number")
    for name in (
        "watch-label-selector",
        "override-manager",
        "feature-gates",
        "default-decryption-service-account",
    ):
        if flags.get(name):
            report.add(
                deployment.ref,
                f"{where}: --{name}",
                RowClass.DROPPED,
                f"{flags[name]!r}: lockgate has no such setting for its runner",
            )
    known = IGNORED | {
        "no-remote-bases", "default-service-account", "no-cross-namespace-refs", "concurrent",
        "watch-label-selector", "override-manager", "feature-gates", "default-decryption-service-account",
    }  # fmt: skip
    for name in sorted(set(flags) - known):
        report.add(
            deployment.ref, f"{where}: --{name}", RowClass.DROPPED, "a flag lockgate import does not know"
        )
    return settings
