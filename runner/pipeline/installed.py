"""The configuration a runner in the cluster runs with, for ``lockgate rollback NAME`` without ``--config``.

``lockgate status`` needs nothing but the runner namespace (default lockgate-system): the
inventories are there. A rollback also needs the Sync's settings (its verification policy,
its runner namespace, prune and wait), and those are in the file the runner runs with. The
install bases (``deploy/runner``, ``deploy/cronjob``) run ``serve --config FILE`` or
``reconcile --config FILE`` with FILE in a mounted ConfigMap (``lockgate-config`` plus the
generator's hash suffix), so the file is found as the runner finds it: a Deployment or
CronJob of the namespace whose container runs lockgate with ``--config``, the volume
mounted at that path, the ConfigMap entry behind it. Reads only (get and list of
Deployments, CronJobs and ConfigMaps in that namespace); the pure part is ``mounted``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from lockgate.errors import UsageError
from runner.kube.client import Kube
from runner.pipeline import config
from runner.pipeline.reconcile import SyncOptions, runner_namespace

#: (apiVersion, kind, where the pod spec is) of the workloads the install bases ship
WORKLOADS = (
    ("apps/v1", "Deployment", ("spec", "template", "spec")),
    ("batch/v1", "CronJob", ("spec", "jobTemplate", "spec", "template", "spec")),
)


@dataclass(frozen=True)
class Mounted:
    """Where a runner workload reads its ``--config`` file: a ConfigMap's entry."""

    workload: str
    configmap: str
    key: str
    #: the directory of the ``--config`` path in the Pod (the platform syncs' default layout root)
    directory: str = ""


def _config_flag(container: dict[str, Any]) -> str | None:
    """The ``--config`` path of a container running ``lockgate serve`` or ``reconcile``."""
    argv = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
    if not {"serve", "reconcile"} & set(argv):
        return None
    for index, arg in enumerate(argv):
        if arg == "--config" and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
    return None


def _entry(pod: dict[str, Any], container: dict[str, Any], path: str) -> tuple[str, str] | None:
    """(ConfigMap, key) mounted at ``path`` in ``container``, if a ConfigMap is."""
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    file = PurePosixPath(path)
    for mount in container.get("volumeMounts") or []:
        at = PurePosixPath(str(mount.get("mountPath", "")))
        if mount.get("subPath"):
            if at != file:
                continue
            name = str(mount["subPath"])
        elif file.parent == at:
            name = file.name
        else:
            continue
        source = (volumes.get(mount.get("name")) or {}).get("configMap")
        if not isinstance(source, dict) or not source.get("name"):
            continue
        key = next((str(i["key"]) for i in source.get("items") or [] if i.get("path") == name), name)
        return str(source["name"]), key
    return None


def mounted(kind: str, workload: dict[str, Any], pod_path: tuple[str, ...]) -> list[Mounted]:
    """Every ``--config`` ConfigMap entry a workload's containers run with (pure)."""
    pod: Any = workload
    for step in pod_path:
        pod = pod.get(step) if isinstance(pod, dict) else None
    if not isinstance(pod, dict):
        return []
    label = f"{kind}/{workload.get('metadata', {}).get('name', '')}"
    found = []
    for container in pod.get("containers") or []:
        path = _config_flag(container)
        entry = _entry(pod, container, path) if path else None
        if entry is not None:
            directory = str(PurePosixPath(str(path)).parent)
            found.append(Mounted(workload=label, configmap=entry[0], key=entry[1], directory=directory))
    return found


def load(kube: Kube, namespace: str | None) -> tuple[config.Config, str]:
    """The configuration the runner of ``namespace`` runs with, and where it was read."""
    ns = runner_namespace(namespace)
    found: list[Mounted] = []
    for api_version, kind, pod_path in WORKLOADS:
        for item in kube.list_all(kube.resource(api_version, kind), ns):
            found.extend(mounted(kind, item, pod_path))
    entries = sorted({(m.configmap, m.key) for m in found})
    if not entries:
        raise UsageError(
            f"no runner in namespace {ns} reads --config from a ConfigMap (no Deployment or CronJob "
            "running lockgate serve or reconcile --config): pass --config FILE, or -n the runner's namespace"
        )
    if len(entries) > 1:
        shown = ", ".join(f"{m.workload}: ConfigMap {m.configmap} ({m.key})" for m in found)
        raise UsageError(
            f"the runners of namespace {ns} run with different configurations ({shown}): pass --config FILE"
        )
    name, key = entries[0]
    where = f"ConfigMap {ns}/{name} ({key})"
    configmap = kube.get(kube.resource("v1", "ConfigMap"), ns, name)
    text = ((configmap or {}).get("data") or {}).get(key)
    if not isinstance(text, str):
        users = ", ".join(sorted({m.workload for m in found}))
        raise UsageError(
            f"{users} runs with {where}, which {'has no such entry' if configmap else 'is missing'}"
        )
    # where the Pod reads the file: its directory is what the runner's own load takes it from
    directory = next((PurePosixPath(m.directory) for m in found if m.directory), None)
    try:
        return config.parse(text.encode(), where, directory=directory), where
    except UsageError as exc:
        raise UsageError(
            f"{exc.message}\n(the runner's configuration, read from {where}: files it names are paths in "
            "the runner's Pod; pass --config FILE with local paths)"
        ) from None


def sync_named(
    name: str,
    *,
    config_path: Path | None,
    namespace: str | None,
    kubeconfig: Path | None = None,
    context: str | None = None,
) -> tuple[SyncOptions, str]:
    """The Sync ``name`` of ``--config``, else of the runner's own configuration; and where from."""
    if config_path is not None:
        if namespace is not None:
            raise UsageError(
                "-n finds the runner's configuration in the cluster; with --config each Sync names its "
                "runner namespace (spec.namespace, else the Runner's): drop one of them"
            )
        loaded, where = config.load(config_path), f"--config {config_path}"
    else:
        loaded, where = load(Kube.from_kubeconfig(kubeconfig, context=context), namespace)
    syncs = {s.name: s for s in loaded.syncs}
    if name not in syncs:
        raise UsageError(f"{where}: no Sync named {name!r} (found: {', '.join(syncs) or 'none'})")
    return syncs[name], where
