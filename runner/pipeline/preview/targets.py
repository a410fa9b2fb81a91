"""Which clusters and syncs a preview is about, read from the runners' own configuration files.

Each ``--cluster`` file is loaded by the runner's loader (``pipeline.config``), so a file the
runner would refuse is refused here with the same words. A cluster's label is the name given
(``--cluster NAME=FILE``), else its Runner document's ``clusterName``, else the file's name.
A sync is previewed when its URL names the repository PATH is published to (``--url``); without
``--url``, when the artifact it runs was built from the same source repository as PATH
(``org.opencontainers.image.source``, as ``push`` writes it), which ``run`` checks once it knows
what runs. With ``--base REV``, each file is read again as committed at REV, so a change of who
may sign (``spec.verify``, ``spec.verify.attestations``) is told as a hazard.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lockgate import git, registry
from lockgate.errors import UsageError
from lockgate.signing import keys
from lockgate.signing.policy import KeylessPolicy, KeyPolicy, KeySetPolicy, Policy
from runner.pipeline import config
from runner.pipeline.options import SyncOptions
from runner.pipeline.source import AttestationSpec, SourceSpec


@dataclass(frozen=True)
class Cluster:
    label: str
    file: Path
    loaded: config.Config
    #: the same file at ``--base`` (None: not asked, or the file is new there)
    base: config.Config | None = None

    @property
    def attests_as(self) -> str:
        """The cluster name its runner writes in attestations (the Runner's ``clusterName``)."""
        return self.loaded.runner.cluster_name


def parse_cluster(value: str) -> tuple[str | None, Path]:
    """``--cluster FILE`` or ``--cluster NAME=FILE``."""
    name, sep, file = value.partition("=")
    if sep and name and "/" not in name:
        return name, Path(file)
    return None, Path(value)


def _label(name: str | None, file: Path, loaded: config.Config) -> str:
    if name:
        return name
    if loaded.runner.cluster_name != "default":
        return loaded.runner.cluster_name
    return file.stem


def _at_base(file: Path, base: str) -> config.Config | None:
    try:
        repo = git.Repository.find(file)
    except git.GitError as exc:
        raise UsageError(f"--base {base}: {exc.message}") from None
    if repo is None:
        raise UsageError(f"--base {base}: {file} is not in a Git checkout")
    with repo:
        try:
            text = repo.read_at(base, Path(file.name))
        except git.GitError as exc:
            raise UsageError(
                f"--base {base}: {exc.message}; fetch it first (actions/checkout: fetch-depth: 0)"
            ) from None
    if text is None:
        return None
    return config.parse(text.encode(), f"{file}@{base}")


def load(values: tuple[str, ...], *, base: str | None) -> list[Cluster]:
    """The clusters of ``--cluster``, in order; every file's problems are the loader's."""
    if not values:
        raise UsageError("give each cluster's runner configuration: --cluster FILE (or --cluster NAME=FILE)")
    found: list[Cluster] = []
    for value in values:
        name, file = parse_cluster(value)
        loaded = config.load(file)
        label = _label(name, file, loaded)
        if any(c.label == label for c in found):
            raise UsageError(
                f"--cluster {value}: a second cluster named {label!r}; name one: --cluster NAME={file}"
            )
        found.append(Cluster(label, file, loaded, _at_base(file, base) if base else None))
    return found


def same_repository(sync_url: str, url: str) -> bool:
    """Whether the sync's source is the repository ``url`` names (its tag or digest aside)."""
    return registry.parse(sync_url).name == registry.parse(url).name


def _policy(policy: Policy | None) -> str:
    if isinstance(policy, KeyPolicy):
        return f"key {keys.key_id(policy.key)}"
    if isinstance(policy, KeySetPolicy):
        return "keys " + ", ".join(sorted(keys.key_id(k.key) for k in policy.keys))
    if isinstance(policy, KeylessPolicy):
        parts = [f"identity {policy.identity}", f"issuer {policy.issuer}"]
        parts += [f"{k} {v}" for k, v in sorted(vars(policy.github).items()) if v] if policy.github else []
        return ", ".join(str(p) for p in parts)
    return "nobody (insecureSkip)"


def _requirement(item: AttestationSpec) -> str:
    who = _policy(item.policy) if item.policy is not None else f"keys in Secret {item.secret_ref}"
    where = (
        f"{item.min_clusters} of {', '.join(item.clusters)}"
        if item.clusters
        else (item.cluster or "any cluster")
    )
    soak = f" for {item.min_age:g}s" if item.min_age else ""
    return f"{item.predicate_type} in {where}{soak} signed by {who}"


def who_may_sign(spec: SourceSpec) -> str:
    """The sync's verification as one comparable line: its signers and required attestations."""
    signers = f"keys in Secret {spec.verify_secret_ref}" if spec.verify_secret_ref else _policy(spec.policy)
    required = "; ".join(_requirement(a) for a in spec.attestations)
    return signers + (f"; requires {required}" if required else "")


def gate(options: SyncOptions) -> str:
    """What the sync waits for before it applies a new digest ("" when nothing)."""
    if not options.source.attestations:
        return ""
    return "; ".join(_requirement(a) for a in options.source.attestations)


def base_sync(cluster: Cluster, name: str) -> SyncOptions | None:
    if cluster.base is None:
        return None
    return next((s for s in cluster.base.syncs if s.name == name), None)
