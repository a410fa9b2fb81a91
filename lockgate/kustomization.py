"""What a kustomization would read, checked before ``kustomize build`` runs.

kustomize fetches a resource, component or base that names a URL or a Git repository
(``https://host/app.yaml``, ``github.com/org/repo//deploy?ref=v1``, ``git@host:org/repo``)
and loads patches, generator files and the like over HTTP when they are URLs. On the runner
that would let an artifact make the runner's Pod fetch any URL, so, as Flux's
``--no-remote-bases``, a kustomization there may only read files of the artifact.

``check`` parses every kustomization the build would read (the one built and, recursively,
each local directory it names) through ``lockgate.bounded``, so an alias bomb in one is
refused before kustomize sees it, and looks at every field that names a file: a local path
must stay inside ``root`` (the artifact), and a remote reference is refused, naming the
kustomization, the field and the URL, unless remote references are allowed (the Runner's
``allowRemoteBases``; CI builds allow them). Nothing is fetched and nothing runs here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lockgate import bounded
from lockgate.errors import RenderError

FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
#: fields kustomize builds as further kustomizations or resources (a directory, a file, or a repository)
_BUILT = ("resources", "components", "bases", "generators", "transformers", "validators")
#: fields holding files it loads (over HTTP when they are http(s) URLs)
_LOADED = ("crds", "configurations", "patchesStrategicMerge")
#: list fields whose items name a file under ``path``
_PATHS = ("patches", "patchesJson6902", "replacements")
_GENERATORS = ("configMapGenerator", "secretGenerator")
#: what kustomize reads as a repository rather than a path: a scheme, scp-like git, or a host
_REMOTE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*::|[a-zA-Z][a-zA-Z0-9+.-]*://|[^/@\s]+@[^/:\s]+:)")
_HOST_FIRST = re.compile(r"^[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)+(:[0-9]+)?/")


class RemoteReference(RenderError):
    """A kustomization names something outside the artifact; ``reference`` is it."""

    def __init__(self, file: str, field: str, reference: str, why: str) -> None:
        super().__init__(f"{file}: {field}: {reference} {why}")
        self.file, self.field, self.reference = file, field, reference


def find(directory: Path) -> Path | None:
    """The kustomization file of ``directory``, if it has one."""
    return next((directory / name for name in FILES if (directory / name).is_file()), None)


def check(directory: Path, *, root: Path | None, allow_remote: bool) -> None:
    """Parse the kustomizations ``kustomize build directory`` would read; refuse what leaves ``root``.

    ``root`` None: local paths may go anywhere (CI builds a working tree); ``allow_remote``:
    URLs and repositories are left to kustomize.
    """
    base = root.resolve() if root is not None else None
    pending, seen = [directory.resolve()], set()
    while pending:
        here = pending.pop()
        if here in seen:
            continue
        seen.add(here)
        found = find(here)
        if found is None:
            continue
        shown = _shown(found, base)
        for field, reference, built in _references(_load(found, shown)):
            if _is_remote(reference, here, built=built):
                if not allow_remote:
                    raise RemoteReference(
                        shown,
                        field,
                        reference,
                        "is a remote reference, and kustomizations here are built from the artifact "
                        "alone (as Flux's --no-remote-bases): vendor it into the artifact, or set "
                        "allowRemoteBases: true in the Runner document (reconcile --allow-remote-bases)",
                    )
                continue
            target = (here / reference).resolve()
            if base is not None and target != base and base not in target.parents:
                raise RemoteReference(
                    shown, field, reference, "leaves the artifact; kustomize may only read its files"
                )
            if built and target.is_dir():
                pending.append(target)


def _shown(path: Path, base: Path | None) -> str:
    return str(path.relative_to(base)) if base is not None and path.is_relative_to(base) else str(path)


def _load(path: Path, shown: str) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RenderError(f"{shown}: cannot read ({exc})") from None
    docs = bounded.yaml_documents(text, shown)
    value = docs[0][1] if docs else None
    return value if isinstance(value, dict) else {}  # not a mapping: kustomize's error to give


def _is_inline(value: str) -> bool:
    """An inline patch or generator config rather than a path."""
    return "\n" in value or value.lstrip().startswith(("{", "apiVersion:", "- "))


def _is_remote(reference: str, here: Path, *, built: bool) -> bool:
    if _REMOTE.match(reference):
        return True
    # kustomize reads "github.com/org/repo/..." as a repository when no such local path exists
    return built and bool(_HOST_FIRST.match(reference)) and not (here / reference).exists()


def _references(doc: dict[str, Any]) -> Iterator[tuple[str, str, bool]]:
    """(field, reference, whether kustomize builds it) for every file a kustomization names."""
    for field in (*_BUILT, *_LOADED):
        for index, item in enumerate(_items(doc.get(field))):
            if isinstance(item, str) and not _is_inline(item):
                yield f"{field}[{index}]", item, field in _BUILT
    for field in _PATHS:
        for index, item in enumerate(_items(doc.get(field))):
            if isinstance(item, dict) and isinstance(item.get("path"), str):
                yield f"{field}[{index}].path", item["path"], False
    openapi = doc.get("openapi")
    if isinstance(openapi, dict) and isinstance(openapi.get("path"), str):
        yield "openapi.path", openapi["path"], False
    for field in _GENERATORS:
        for index, item in enumerate(_items(doc.get(field))):
            if not isinstance(item, dict):
                continue
            for key in ("files", "envs"):
                for number, entry in enumerate(_items(item.get(key))):
                    if isinstance(entry, str):
                        # files: "[key=]path"
                        path = entry.partition("=")[2] or entry if key == "files" else entry
                        yield f"{field}[{index}].{key}[{number}]", path, False
            if isinstance(item.get("env"), str):
                yield f"{field}[{index}].env", item["env"], False


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
