"""Both sides of a preview as a sync renders them: PATH as it would be published, and a digest pulled.

PATH is packed exactly as ``lockgate push`` packs it (``lockgate.artifact.pack``: the same
ignore rules, ``.sourceignore`` and the refusal of symlinks leaving the tree) and extracted by
the runner's extractor, so what is rendered is the artifact's content and nothing else of the
checkout; a digest is pulled by digest through the shared safe path, each once. Then each sync
renders its own copy as a pass does (``source.build``: its ``path``, its overlay written into
the kustomization, ``kustomize build``), prepares it without the cluster (``offline``), places
it (``placement``, Kubernetes' own kinds from a table, ``runner.plan.preview.scopes``) and
labels it as a member of its set (``desired.prepare``, with its ``spec.ignore`` rules).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

from lockgate import registry
from lockgate.artifact import extract as extract_mod
from lockgate.artifact import pack, pull
from lockgate.artifact.limits import Limits
from lockgate.manifests import K8sObject
from runner.pipeline import source
from runner.pipeline.options import SyncOptions, runner_namespace
from runner.pipeline.preview import offline
from runner.plan import applyset, placement
from runner.plan.desired import Desired, prepare
from runner.plan.overlay import Overlay
from runner.plan.preview import scopes


class Workspace:
    """A temporary directory holding PATH's artifact and each pulled digest, extracted once."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="lockgate-preview-")
        self.root = Path(self._tmp.name)
        self._lock = threading.Lock()
        self._pulled: dict[tuple[str, str], Path] = {}
        self._count = 0
        #: substitutions shared by every render of the preview
        self.memo = offline.Memo()
        self._built: dict[tuple[Path, str | None, Overlay | None, bool], source.Built] = {}

    def close(self) -> None:
        self._tmp.cleanup()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _fresh(self, name: str) -> Path:
        with self._lock:
            self._count += 1
            return self.root / f"{name}-{self._count}"

    def local(self, path: Path, options: pack.PackOptions, limits: Limits) -> Path:
        """``path`` packed as ``push`` packs it, then extracted as a runner extracts it."""
        layer = pack.pack(path, self._fresh("layer"), options, limits=limits)
        target = self._fresh("local")
        with open(layer.path, "rb") as stream:
            extract_mod.extract(stream, target, limits)
        layer.path.unlink()
        return target

    def pulled(
        self, client: registry.RegistryClient, ref: registry.Reference, digest: str, limits: Limits
    ) -> Path:
        """The artifact ``digest`` of ``ref``'s repository, pulled and extracted once."""
        key = (ref.name, digest)
        with self._lock:
            known = self._pulled.get(key)
        if known is not None:
            return known
        target = self._fresh("pulled")
        pull.pull(client, ref.with_digest(digest), target, digest=digest, limits=limits)
        with self._lock:
            return self._pulled.setdefault(key, target)

    def build(self, root: Path, spec: source.SourceSpec) -> source.Built:
        """``source.build`` of ``root`` for ``spec``, once per artifact, path and overlay: syncs
        of several clusters that render the same directory the same way share the objects
        (nothing after the build changes a body)."""
        key = (root, spec.path, spec.overlay, spec.allow_remote_bases)
        with self._lock:
            known = self._built.get(key)
        if known is not None:
            return known
        wanted = spec.overlay is not None and spec.overlay.wanted
        built = source.build(
            self.copy(root) if wanted else root,
            spec.path,
            allow_remote_bases=spec.allow_remote_bases,
            overlay=spec.overlay,
        )
        with self._lock:
            return self._built.setdefault(key, built)

    def copy(self, root: Path) -> Path:
        """A copy for one sync to render: its overlay is written into the kustomization."""
        target = self._fresh("render")
        shutil.copytree(root, target, symlinks=True)
        return target


def set_id(options: SyncOptions) -> str:
    namespace = runner_namespace(options.namespace)
    return applyset.applyset_id(applyset.parent_name(options.name), namespace)


def _scope_for(objects: list[K8sObject], guessed: set[str]) -> placement.ClusterScope:
    """Kubernetes' kinds from the table; a kind a CRD of the artifact defines is left to
    placement (it reads the CRD); any other custom kind is taken as namespaced, and named."""
    defined = set()
    for obj in objects:
        if obj.kind == "CustomResourceDefinition":
            spec = obj.body.get("spec") or {}
            defined.add((str(spec.get("group", "")), str((spec.get("names") or {}).get("kind", ""))))

    def scope(api_version: str, kind: str) -> bool | None:
        known = scopes.builtin_scope(api_version, kind)
        if known is not None or (scopes.group_of(api_version), kind) in defined:
            return known
        guessed.add(f"{kind}.{scopes.group_of(api_version)}")
        return True

    return scope


def desired(root: Path, workspace: Workspace, options: SyncOptions) -> tuple[list[Desired], tuple[str, ...]]:
    """The objects the sync's pass would send for the artifact extracted at ``root``."""
    built = workspace.build(root, options.source)
    objects, notes = offline.prepare(built.objects, options, workspace.memo)
    guessed: set[str] = set()
    placed = placement.place(
        objects, target_namespace=options.target_namespace, cluster_scope=_scope_for(objects, guessed)
    )
    if guessed:
        notes += (
            f"custom kinds neither Kubernetes' own nor defined in the artifact are taken as namespaced: "
            f"{', '.join(sorted(guessed))}",
        )
    identity = set_id(options)
    return [prepare(obj, identity, options.ignore) for obj in placed], (*built.notes, *notes)
