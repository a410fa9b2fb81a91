"""Sync names for Flux objects: Kustomization names are per namespace, sync names are not.

Pure. A Kustomization keeps its name when no other imported object has it; when two
namespaces hold the same name, each becomes ``<namespace>-<name>``. A name that is no sync
name (longer than 54 characters, not a DNS label, or starting with the ``runner-`` reserved
for Leases) is made one, with a short hash of the original when it had to be cut. ``--rename
NAMESPACE/NAME=SYNC`` wins over all of this. Every name that changed is a ``renamed`` row.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from runner.plan.fluximport.report import Report, RowClass

MAX = 63 - len("lockgate-")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
RESERVED_PREFIX = "runner-"


@dataclass(frozen=True, order=True)
class Named:
    kind: str
    namespace: str
    name: str

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def valid(name: str) -> bool:
    return bool(_LABEL.match(name)) and len(name) <= MAX and not name.startswith(RESERVED_PREFIX)


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:6]


def _sanitised(name: str, origin: str) -> str:
    cleaned = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "sync"
    if cleaned.startswith(RESERVED_PREFIX):
        cleaned = "flux-" + cleaned
    if len(cleaned) > MAX:
        cleaned = cleaned[: MAX - 7].rstrip("-") + "-" + _hash(origin)
    return cleaned


def assign(
    objects: Iterable[Named], report: Report, *, renames: Mapping[tuple[str, str], str] | None = None
) -> dict[Named, str]:
    """A sync name for each object, distinct, and a ``renamed`` row for each one that changed."""
    renames = renames or {}
    items = sorted(set(objects))
    by_name: dict[str, set[str]] = {}
    for item in items:
        by_name.setdefault(item.name, set()).add(item.namespace)
    names: dict[Named, str] = {}
    why: dict[Named, str] = {}
    for item in items:
        given = renames.get((item.namespace, item.name))
        if given is not None:
            names[item], why[item] = given, "--rename"
            continue
        candidate = item.name
        if len(by_name[item.name]) > 1:
            candidate = f"{item.namespace}-{item.name}"
            why[item] = (
                f"{item.name!r} is the name of a Kustomization in {len(by_name[item.name])} namespaces"
            )
        if not valid(candidate):
            candidate = _sanitised(candidate, f"{item.namespace}/{item.name}")
            why.setdefault(
                item, "a sync name is a DNS label of at most 54 characters, not starting with runner-"
            )
        names[item] = candidate
    taken: dict[str, Named] = {}
    for item in items:
        name = names[item]
        if name in taken:  # still the same: make it unique by the original's hash
            name = f"{name[: MAX - 7].rstrip('-')}-{_hash(f'{item.namespace}/{item.name}')}"
            why[item] = f"the sync name {names[item]!r} was taken by {taken[names[item]].ref}"
            names[item] = name
        taken[name] = item
    for item in items:
        if names[item] != item.name:
            report.add(
                item.ref,
                "metadata.name",
                RowClass.RENAMED,
                f"sync {names[item]!r}: {why.get(item, 'renamed')} (sync names are one flat namespace)",
            )
    return names
