"""The CRDs of a chart's ``crds/`` directories in ``helm template --include-crds`` output, marked
so the runner treats them as Helm does: created with the release, never deleted.

Pure. Helm installs the files of ``crds/`` (the chart's and every subchart's) before the
templates and never deletes them, neither on upgrade nor on uninstall, since deleting a CRD
deletes every custom resource of its kinds in the cluster. ``helm template --include-crds``
prints each such file after a ``# Source: CHART/crds/FILE`` line (``CHART/charts/SUB/crds/FILE``
for a subchart), the file as it is, possibly several documents. Each CustomResourceDefinition
among them gets Helm's own ``helm.sh/resource-policy: keep`` annotation, which the runner reads
as Helm does (prune and a sync's deletion leave the object in place; a Sync's ``pruneCRDs``
lifts it for CRDs). Every other document of the stream is passed through byte for byte.
"""

from __future__ import annotations

import re

import yaml

from lockgate import bounded

RESOURCE_POLICY = "helm.sh/resource-policy"
KEEP = "keep"
CRD_KIND = "CustomResourceDefinition"
_SOURCE = re.compile(r"^# Source: (?P<path>.+?)\s*$", re.MULTILINE)
#: a document start marker at the start of a line: ``---`` alone or before a space
_MARKER = re.compile(r"^---(?=[ \t]|\r?$)", re.MULTILINE)


def from_crds_directory(source: str) -> bool:
    """Whether a ``# Source:`` path is a file of a chart's ``crds/`` directory (a subchart's too)."""
    parts = source.split("/")
    index = 1  # parts[0] is the chart's name
    while index + 2 < len(parts) and parts[index] == "charts":
        index += 2
    return index + 1 < len(parts) and parts[index] == "crds"


def mark(text: str) -> tuple[str, list[str]]:
    """``text`` with each CRD from a ``crds/`` directory annotated ``keep``; and their names."""
    pieces = _documents(text)
    source = ""
    marked: list[str] = []
    out: list[str] = []
    for piece in pieces:
        found = _SOURCE.search(piece)
        if found is not None and not piece[: found.start()].strip("-\n \t\r"):
            source = found.group("path")
        if source and from_crds_directory(source):
            piece, name = _keep(piece, source)
            if name is not None:
                marked.append(name)
        out.append(piece)
    return "".join(out), marked


def _documents(text: str) -> list[str]:
    """``text`` cut before each document start marker (every piece but maybe the first starts with one)."""
    starts = [m.start() for m in _MARKER.finditer(text)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True) if b > a]


def _keep(piece: str, source: str) -> tuple[str, str | None]:
    """The document ``piece`` annotated ``keep`` when it is a CRD, with the CRD's name."""
    docs = bounded.yaml_documents(piece, source)
    if len(docs) != 1 or not isinstance(docs[0][1], dict) or docs[0][1].get("kind") != CRD_KIND:
        return piece, None
    doc = docs[0][1]
    metadata = doc.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        return piece, None
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        annotations = metadata["annotations"] = {}
    annotations.setdefault(RESOURCE_POLICY, KEEP)
    # the marker and the comments before the document stay as helm wrote them
    head: list[str] = []
    for line in piece.splitlines(keepends=True):
        if line.startswith("---") or line.lstrip().startswith("#") or not line.strip():
            head.append(line if line.endswith("\n") else line + "\n")
            if line.startswith("---") and line.rstrip() != "---":
                break  # content on the marker line: the dump below replaces it
            continue
        break
    if head and head[0].startswith("---") and head[0].rstrip() != "---":
        head[0] = "---\n"
    body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=2**31 - 1)
    return "".join(head) + body, str(metadata.get("name") or "?")
