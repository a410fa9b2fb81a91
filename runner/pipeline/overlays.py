"""A Sync's overlay on the extracted artifact: the kustomization kustomize builds, edited or generated.

``from_spec`` turns a Sync's ``patches``, ``images``, ``namePrefix``, ``nameSuffix``,
``components`` and ``commonMetadata`` into ``runner.plan.overlay`` values when the file is
loaded, refusing what kustomize would refuse later (a patch that is neither a strategic merge
nor a JSON 6902 patch, a JSON 6902 patch without target, a component that is a URL or an
absolute path), each error naming the field. ``write`` runs in ``source.render`` on the
artifact's temporary copy, before ``kustomize build`` (as Flux's generator does on its
working copy): it edits the directory's kustomization with ``overlay.edit``, or, for a
directory of plain manifests, generates one listing them (every ``*.yaml``/``*.yml`` file
outside hidden directories, each checked within the parsing bounds, and each subdirectory
holding a kustomization as one resource, as Flux). A component must be a directory inside the
artifact; the written kustomization then goes through ``lockgate.kustomization.check`` with the
rest, so nothing remote is read unless the Runner allows it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from lockgate import bounded, kustomization, located, manifests
from lockgate.errors import LockgateError, RenderError, UsageError
from runner.pipeline import documents
from runner.plan import overlay
from runner.plan.overlay import CommonMetadata, Overlay

GENERATED = "kustomization.yaml"


def from_spec(
    spec: documents.SyncSpec, where: Callable[[located.Path], str], messages: list[str]
) -> tuple[Overlay | None, CommonMetadata | None]:
    """The Sync's overlay and common metadata (None when it sets none); problems go to ``messages``."""
    patches = []
    for index, item in enumerate(spec.patches):
        target = None
        if item.target is not None:
            t = item.target
            target = overlay.Selector(
                t.group, t.version, t.kind, t.name, t.namespace, t.label_selector, t.annotation_selector
            )
        patch = overlay.Patch(patch=item.patch, target=target)
        problem = patch_problem(patch, f"spec.patches[{index}].patch")
        if problem:
            messages.append(f"{where(('spec', 'patches', index))}: spec.patches[{index}]: {problem}")
        patches.append(patch)
    for index, path in enumerate(spec.components):
        problem = overlay.component_problem(path)
        if problem:
            at = where(("spec", "components", index))
            messages.append(f"{at}: spec.components[{index}]: {path} {problem}")
    found = Overlay(
        patches=tuple(patches),
        images=tuple(overlay.Image(i.name, i.new_name, i.new_tag, i.digest) for i in spec.images),
        name_prefix=spec.name_prefix,
        name_suffix=spec.name_suffix,
        components=spec.components,
        ignore_missing_components=spec.ignore_missing_components,
    )
    common = spec.common_metadata
    metadata = None if common is None else CommonMetadata(dict(common.labels), dict(common.annotations))
    return (found if found.wanted else None), metadata


def patch_problem(patch: overlay.Patch, shown: str) -> str:
    """Why kustomize would refuse ``patch``, or ""."""
    try:
        parsed = bounded.yaml_documents(patch.patch, shown, error=UsageError)
        docs = [doc for _, doc in parsed if doc is not None]
    except LockgateError as exc:
        return f"not YAML: {exc.message}"
    if len(docs) == 1 and isinstance(docs[0], list):
        if patch.target is None:
            return "a JSON 6902 patch (a list of operations) needs a target: the objects it applies to"
        if not all(isinstance(op, dict) and "op" in op and "path" in op for op in docs[0]):
            return "every JSON 6902 operation needs op and path"
        return ""
    if not docs or not all(isinstance(doc, dict) for doc in docs):
        return "expected a strategic merge patch (a YAML object) or a JSON 6902 patch (a list of operations)"
    if patch.target is None and not all(_names_object(doc) for doc in docs):
        return (
            "a strategic merge patch without target must name the object it patches (apiVersion, kind "
            "and metadata.name), or set target"
        )
    return ""


def _names_object(doc: dict[str, Any]) -> bool:
    metadata = doc.get("metadata")
    return bool(doc.get("kind")) and isinstance(metadata, dict) and bool(metadata.get("name"))


def write(directory: Path, root: Path, spec: Overlay) -> None:
    """Apply ``spec`` to the kustomization of ``directory`` (a directory of the artifact ``root``),
    generating one when there is none."""
    found = kustomization.find(directory)
    shown = _relative(found or directory / GENERATED, root)
    if found is None:
        found = directory / GENERATED
        document = overlay.generated(_manifests(directory, root))
    else:
        document = _load(found, shown)
    edited = overlay.edit(document, replace(spec, components=_components(directory, root, spec)))
    text = yaml.safe_dump(edited, sort_keys=False, allow_unicode=True, width=2**31 - 1)
    try:
        found.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise RenderError(f"{shown}: cannot write the sync's overlay ({exc.strerror})") from None


def _relative(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _load(path: Path, shown: str) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RenderError(f"{shown}: cannot read ({exc})") from None
    docs = bounded.yaml_documents(text, shown)
    value = docs[0][1] if docs else None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RenderError(f"{shown}: expected a kustomization (a mapping), got {type(value).__name__}")
    return value


def _components(directory: Path, root: Path, spec: Overlay) -> tuple[str, ...]:
    """The components to add: each a directory inside the artifact; a missing one is an error
    unless ``ignoreMissingComponents``."""
    kept = []
    for index, path in enumerate(spec.components):
        field = f"spec.components[{index}]"
        problem = overlay.component_problem(path)
        if problem:
            raise RenderError(f"{field}: {path} {problem}")
        target = (directory / path).resolve()
        if not target.is_relative_to(root):
            raise RenderError(
                f"{field}: {path} leaves the artifact; components must be directories inside it"
            )
        if not target.is_dir():
            if spec.ignore_missing_components:
                continue
            raise RenderError(
                f"{field}: {path}: the artifact has no such directory (relative to "
                f"{_relative(directory, root) if directory != root else 'its root'}); fix the path, or set "
                "ignoreMissingComponents: true to leave missing ones out"
            )
        kept.append(path)
    return tuple(kept)


def _manifests(directory: Path, root: Path) -> list[str]:
    """Flux's resources for a directory without a kustomization: its YAML files and the
    subdirectories holding a kustomization, in path order; hidden entries are skipped as
    lockgate skips them in a plain directory."""
    found: list[str] = []
    for here, dirnames, filenames in os.walk(directory, onerror=_raise):
        at = Path(here)
        dirnames.sort()
        built = [d for d in dirnames if not d.startswith(".") and kustomization.find(at / d) is not None]
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in built]
        entries = [(d, True) for d in built] + [
            (f, False)
            for f in filenames
            if Path(f).suffix in manifests.YAML_SUFFIXES and not f.startswith(".") and (at / f).is_file()
        ]
        for name, is_dir in entries:
            path = at / name
            if not is_dir:
                shown = _relative(path, root)
                try:
                    manifests.check_syntax(path.read_text(encoding="utf-8"), shown)
                except (OSError, UnicodeDecodeError) as exc:
                    raise RenderError(f"{shown}: cannot read ({exc})") from None
            found.append("./" + path.relative_to(directory).as_posix())
    return sorted(found, key=lambda entry: Path(entry).parts)


def _raise(exc: OSError) -> None:
    raise RenderError(f"{exc.filename}: cannot read ({exc.strerror})")
