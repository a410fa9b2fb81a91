"""A Sync's per-cluster overlay: what it makes of the artifact's kustomization, and its commonMetadata.

Pure. As kustomize-controller (``fluxcd/pkg`` ``kustomize/kustomize_generator.go``), lockgate
does not re-implement kustomize's transformers: the overlay edits the kustomization that
``kustomize build`` reads (``edit``), or one generated for a directory of plain manifests
(``generated``), and kustomize applies it in its own order, after the file's own fields:
``namePrefix``/``nameSuffix`` replaced, ``patches`` appended after the file's, ``components``
appended, ``images`` merged by name (``newTag`` and ``digest`` replaced together). postBuild
substitution then runs on what kustomize built, so a patch may hold ``${var}``.
``commonMetadata`` is set on every object after substitution, as the pass applies them
(``with_common_metadata``), so it is never substituted: Flux's order.

A patch whose ``target`` selects nothing patches nothing and is no error, as in kustomize and
Flux; to say so, each targeted patch is preceded by a marker patch with the same target that
annotates what it selects (``MARKER``), and ``unmatched`` reads and removes the marks after
the build. A patch that deletes what it selects (``$patch: delete``) gets no marker.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lockgate.manifests import K8sObject

KUSTOMIZE_API = "kustomize.config.k8s.io/v1beta1"
#: the annotation a marker patch sets (``lockgate.dev/overlay-patch-<index>``), removed after the build
MARKER = "lockgate.dev/overlay-patch-"
#: what kustomize reads as a repository rather than a path (Flux's ``IsLocalRelativePath``)
_REMOTE_PREFIXES = ("git::", "gh:", "ssh://", "https://", "http://", "git@", "github.com:", "github.com/")
_DELETES = re.compile(r"""["']?\$patch["']?\s*:\s*["']?delete\b""")


@dataclass(frozen=True)
class Selector:
    """Which objects a patch applies to (kustomize's and Flux's ``Selector``); unset fields match all."""

    group: str | None = None
    version: str | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    label_selector: str | None = None
    annotation_selector: str | None = None

    def as_kustomize(self) -> dict[str, str]:
        written = {
            "group": self.group,
            "version": self.version,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "labelSelector": self.label_selector,
            "annotationSelector": self.annotation_selector,
        }
        return {key: value for key, value in written.items() if value}


@dataclass(frozen=True)
class Patch:
    """An inline strategic merge or JSON 6902 patch, with the objects it applies to."""

    patch: str
    target: Selector | None = None


@dataclass(frozen=True)
class Image:
    """kustomize's ``images`` entry: containers whose image is ``name`` get a new name, tag or digest."""

    name: str
    new_name: str | None = None
    new_tag: str | None = None
    digest: str | None = None


@dataclass(frozen=True)
class Overlay:
    """What a Sync changes in the artifact's kustomization."""

    patches: tuple[Patch, ...] = ()
    images: tuple[Image, ...] = ()
    name_prefix: str | None = None
    name_suffix: str | None = None
    #: directories of kustomize Components, relative to the Sync's path, inside the artifact
    components: tuple[str, ...] = ()
    #: a component directory the artifact lacks is left out instead of failing the pass
    ignore_missing_components: bool = False

    @property
    def wanted(self) -> bool:
        return bool(self.patches or self.images or self.name_prefix or self.name_suffix or self.components)


@dataclass(frozen=True)
class CommonMetadata:
    """Labels and annotations set on every object (overwriting the same keys) as it is applied."""

    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


def component_problem(path: str) -> str:
    """Why ``path`` cannot be a component (a URL, a repository, an absolute path), or ""."""
    lowered = path.lower()
    if any(len(p) < len(path) and lowered.startswith(p) for p in _REMOTE_PREFIXES):
        return "is a remote reference; components must be directories of the artifact"
    if path.startswith("/") or lowered.startswith("file:///"):
        return "is an absolute path; components are relative to the sync's path"
    return ""


def generated(resources: Sequence[str]) -> dict[str, Any]:
    """The kustomization Flux writes for a directory without one: every manifest as a resource."""
    document: dict[str, Any] = {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization"}
    if resources:
        document["resources"] = list(resources)
    else:
        # as Flux: an empty kustomization is an error to kustomize, an empty build is not
        document["namespace"] = "_placeholder"
    return document


def _marker(index: int, target: Selector) -> dict[str, Any]:
    body = (
        f"apiVersion: v1\nkind: Marker\nmetadata:\n  name: marker\n  annotations:\n    {MARKER}{index}: ''\n"
    )
    return {"patch": body, "target": target.as_kustomize()}


def marked(patch: Patch) -> bool:
    """Whether the patch gets a marker: it has a target and keeps what it selects."""
    return patch.target is not None and not _DELETES.search(patch.patch)


def edit(document: Mapping[str, Any], overlay: Overlay) -> dict[str, Any]:
    """``document`` (a kustomization) with the overlay applied as Flux does it."""
    edited = dict(document)
    if overlay.name_prefix is not None:
        edited["namePrefix"] = overlay.name_prefix
    if overlay.name_suffix is not None:
        edited["nameSuffix"] = overlay.name_suffix
    patches = list(_listed(edited.get("patches")))
    for index, patch in enumerate(overlay.patches):
        if patch.target is not None and marked(patch):
            patches.append(_marker(index, patch.target))
        entry: dict[str, Any] = {"patch": patch.patch}
        if patch.target is not None:
            entry["target"] = patch.target.as_kustomize()
        patches.append(entry)
    if patches:
        edited["patches"] = patches
    if overlay.components:
        edited["components"] = [*_listed(edited.get("components")), *overlay.components]
    if overlay.images:
        edited["images"] = merge_images(_listed(edited.get("images")), overlay.images)
    return edited


def _listed(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def merge_images(existing: Sequence[Any], images: Sequence[Image]) -> list[Any]:
    """The file's ``images`` with the overlay's merged by name: ``newName`` replaced when given,
    ``newTag`` and ``digest`` together when either is (a stale digest would win over a new
    tag at pull time); a name the file lacks is appended."""
    merged = [dict(item) if isinstance(item, Mapping) else item for item in existing]
    for image in images:
        found = next(
            (item for item in merged if isinstance(item, dict) and item.get("name") == image.name), None
        )
        if found is None:
            entry = {"newName": image.new_name, "newTag": image.new_tag, "digest": image.digest}
            merged.append({"name": image.name, **{key: value for key, value in entry.items() if value}})
            continue
        if image.new_name:
            found["newName"] = image.new_name
        if image.new_tag or image.digest:
            found.pop("newTag", None)
            found.pop("digest", None)
            if image.new_tag:
                found["newTag"] = image.new_tag
            if image.digest:
                found["digest"] = image.digest
    return merged


def unmatched(objects: Sequence[K8sObject], overlay: Overlay) -> tuple[list[K8sObject], list[str]]:
    """The built objects without the markers, and a note for each targeted patch that selected none."""
    seen: set[int] = set()
    cleaned: list[K8sObject] = []
    for obj in objects:
        annotations = obj.body.get("metadata", {}).get("annotations")
        if not isinstance(annotations, dict) or not any(str(k).startswith(MARKER) for k in annotations):
            cleaned.append(obj)
            continue
        kept = {k: v for k, v in annotations.items() if not str(k).startswith(MARKER)}
        seen.update(int(str(k)[len(MARKER) :]) for k in annotations if str(k).startswith(MARKER))
        metadata = {key: value for key, value in obj.body["metadata"].items() if key != "annotations"}
        if kept:
            metadata["annotations"] = kept
        cleaned.append(replace(obj, body={**obj.body, "metadata": metadata}))
    notes = [
        f"spec.patches[{index}]: its target {_shown(patch.target)} selects no object, so it patched "
        "nothing (not an error, as in Flux and kustomize)"
        for index, patch in enumerate(overlay.patches)
        if marked(patch) and index not in seen
    ]
    return cleaned, notes


def _shown(target: Selector | None) -> str:
    fields = target.as_kustomize() if target else {}
    return "{" + ", ".join(f"{key}: {value}" for key, value in fields.items()) + "}"


def with_common_metadata(objects: Sequence[K8sObject], common: CommonMetadata) -> list[K8sObject]:
    """Every object with ``common``'s labels and annotations set, overwriting the same keys (Flux's
    ``SetCommonMetadata``: ``metadata`` only, not selectors or templates)."""
    if not common.labels and not common.annotations:
        return list(objects)
    placed = []
    for obj in objects:
        metadata = dict(obj.body["metadata"])
        for part, values in (("labels", common.labels), ("annotations", common.annotations)):
            if values:
                current = metadata.get(part)
                metadata[part] = {**(current if isinstance(current, dict) else {}), **values}
        placed.append(replace(obj, body={**obj.body, "metadata": metadata}))
    return placed
