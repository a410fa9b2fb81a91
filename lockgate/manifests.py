"""Load Kubernetes objects from YAML files: the input of ``lockgate diff`` and of the runner.

Every document must carry apiVersion, kind and metadata.name; ``List`` kinds are
flattened; kustomize's own config files (``kustomization.yaml``) and empty documents are
skipped; the same object twice is refused. Errors name the file and the line. Parsing is
``lockgate.bounded``'s, so an alias bomb or a ``List`` holding itself is refused as read.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from lockgate import bounded, parselimits
from lockgate.diff import secret_values
from lockgate.diff.secret_values import SecretValues
from lockgate.errors import RenderError

YAML_SUFFIXES = (".yaml", ".yml")
_SKIPPED_API_GROUPS = ("kustomize.config.k8s.io/",)


@dataclass(frozen=True)
class ObjectKey:
    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        return f"{kind}/{self.namespace}/{self.name}" if self.namespace else f"{kind}/{self.name}"


@dataclass(frozen=True)
class K8sObject:
    """One object and where it came from (``file``: path as given, ``line``: 1-based)."""

    body: dict[str, Any] = field(repr=False)
    file: str
    line: int
    #: its values that are secret by origin (decrypted, substituted from a Secret); see secret_values
    secret: SecretValues = field(default=secret_values.NONE, repr=False, compare=False)

    @property
    def api_version(self) -> str:
        return str(self.body["apiVersion"])

    @property
    def kind(self) -> str:
        return str(self.body["kind"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.body["metadata"].get("namespace") or "")

    @functools.cached_property
    def key(self) -> ObjectKey:
        group = self.api_version.rsplit("/", 1)[0] if "/" in self.api_version else ""
        return ObjectKey(group=group, kind=self.kind, namespace=self.namespace, name=self.name)

    @property
    def origin(self) -> str:
        return f"{self.file}:{self.line}"


def _raise_os_error(exc: OSError) -> NoReturn:
    raise exc


def yaml_files(root: Path) -> list[Path]:
    """The YAML files of ``root`` (itself if a file), sorted, skipping hidden directories."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise RenderError(f"{root}: no such file or directory")
    found: list[Path] = []
    # os.walk with onerror: an unreadable directory is an error, not silently nothing
    # (rglob skips it, so a diff would show everything as deleted)
    for dirpath, dirnames, filenames in os.walk(root, onerror=_raise_os_error):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        here = Path(dirpath)
        found.extend(
            here / name
            for name in filenames
            if Path(name).suffix in YAML_SUFFIXES and not name.startswith(".") and (here / name).is_file()
        )
    return sorted(found)


def parse_documents(
    text: str, file: str, *, limits: parselimits.Limits = parselimits.DEFAULT
) -> list[tuple[int, Any]]:
    """Every YAML document of ``text`` with its 1-based start line, within ``limits``
    (``lockgate.bounded``); errors name file and line."""
    return bounded.yaml_documents(text, file, limits=limits)


def check_syntax(text: str, file: str) -> None:
    """Only check that ``text`` is well-formed YAML within the parsing bounds: parser events,
    no nodes (several times faster than loading)."""
    bounded.scan_yaml(text, file)


def _objects(doc: Any, file: str, line: int) -> Iterable[K8sObject]:
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise RenderError(
            f"{file}:{line}: expected a Kubernetes object (a mapping), got {type(doc).__name__}"
        )
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api_version, str) or not api_version:
        raise RenderError(f"{file}:{line}: the document has no apiVersion")
    if api_version.startswith(_SKIPPED_API_GROUPS):
        return
    if not isinstance(kind, str) or not kind:
        raise RenderError(f"{file}:{line}: the document has no kind")
    if kind.endswith("List") and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            yield from _objects(item, file, line)
        return
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str) or not metadata["name"]:
        raise RenderError(f"{file}:{line}: {kind} has no metadata.name")
    yield K8sObject(body=doc, file=file, line=line)


def load_text(text: str, file: str, *, limits: parselimits.Limits = parselimits.DEFAULT) -> list[K8sObject]:
    return [
        obj for line, doc in parse_documents(text, file, limits=limits) for obj in _objects(doc, file, line)
    ]


def _read(path: Path, shown: str, limits: parselimits.Limits) -> str:
    """The file's text; one over the size bound is refused before it is read."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limits.max_bytes:
                raise bounded.LimitExceeded(
                    parselimits.message(
                        shown, parselimits.Exceeded("size", bounded.size_detail(size, limits))
                    ),
                    limit="size",
                )
            return handle.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RenderError(f"{shown}: cannot read ({exc})") from None


def load(
    paths: Iterable[Path],
    *,
    relative_to: Path | None = None,
    limits: parselimits.Limits = parselimits.DEFAULT,
) -> list[K8sObject]:
    """All objects in ``paths`` (files or directories), in file order; duplicates are refused."""
    objects: list[K8sObject] = []
    seen: dict[ObjectKey, K8sObject] = {}
    for root in paths:
        for path in yaml_files(root):
            shown = (
                str(path.relative_to(relative_to))
                if relative_to and path.is_relative_to(relative_to)
                else str(path)
            )
            text = _read(path, shown, limits)
            for obj in load_text(text, shown, limits=limits):
                previous = seen.get(obj.key)
                if previous is not None:
                    raise RenderError(
                        f"{obj.origin}: duplicate object {obj.key} (first defined at {previous.origin})"
                    )
                seen[obj.key] = obj
                objects.append(obj)
    return objects
