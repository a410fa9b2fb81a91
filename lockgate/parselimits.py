"""The bounds on parsing YAML and JSON from outside, and the error that names the one exceeded.

Artifacts, repositories, config files, Secrets, registry documents and webhook bodies are
written by someone else, and one tenant's 1 KB YAML alias bomb (or a ``List`` holding
itself, or ten thousand nested brackets) must not take a shared runner down. The bounds
follow Kubernetes' API server, which met the same bombs (CVE-2019-11253, kubernetes#83261):

- **aliases**: go-yaml's rule, as Kubernetes' fork of it (``sigs.k8s.io/yaml``) applies it
  when the API server decodes YAML: a document may take up to 99% of its nodes from alias
  expansion while it has up to 400,000 nodes, tapering to 10% at 4,000,000 (and below 1,000
  nodes or 100 aliased nodes it is never policed). An alias inside its own anchor (a
  structure holding itself) is refused outright, as go-yaml does.
- **depth**: 256 levels. Kubernetes allows 10,000 (go-yaml, and its JSON decoder), because
  Go's stacks grow; Python's recursion limit is 1,000 frames, and the runner walks objects
  recursively (normalising, diffing, encoding), so the bound must sit well below it. Real
  manifests stay far under it: the deepest CRD schemas we know nest about 40 levels.
- **document size**: 3 MiB, the API server's request limit (``MaxRequestBodyBytes``): an
  object larger than that would be refused when applied anyway, so it is refused when read.
- **stream size**: 64 MiB per file or rendered stream, and 100,000 documents in one: Python
  holds about ten times a YAML text's size in objects, so 64 MiB is past the runner's
  default 512 MiB memory limit already.

Sizes are counted in characters of the decoded text (bytes, for ASCII). Nothing here
parses: ``lockgate.fastyaml`` checks the bounds as it builds values and ``lockgate.bounded``
holds the entry points every caller uses.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from lockgate.errors import ExitCode, RenderError

#: go-yaml's alias ratio range (``decode.go``): the allowed share of aliased nodes tapers over it
ALIAS_RATIO_LOW = 400_000
ALIAS_RATIO_HIGH = 4_000_000
#: below these a document's aliases are never policed (go-yaml's floors)
ALIAS_FLOOR = 100
NODE_FLOOR = 1_000


@dataclass(frozen=True)
class Limits:
    """How much input one parse may take; ``DEFAULT`` is what every caller gets."""

    max_depth: int = 256
    max_document_bytes: int = 3 << 20
    max_bytes: int = 64 << 20
    max_documents: int = 100_000
    #: police alias expansion (go-yaml's ratio) and refuse recursive aliases
    aliases: bool = True

    @classmethod
    def unbounded(cls) -> Limits:
        """No bound at all: only for measuring what the bounds cost (``bench/bench_parsing.py``)."""
        return cls(
            max_depth=sys.maxsize,
            max_document_bytes=sys.maxsize,
            max_bytes=sys.maxsize,
            max_documents=sys.maxsize,
            aliases=False,
        )


DEFAULT = Limits()


def allowed_alias_ratio(nodes: int) -> float:
    """The share of a document's nodes that may come from alias expansion (go-yaml's rule)."""
    if nodes <= ALIAS_RATIO_LOW:
        return 0.99
    if nodes >= ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (nodes - ALIAS_RATIO_LOW) / (ALIAS_RATIO_HIGH - ALIAS_RATIO_LOW)


def excessive_aliasing(nodes: int, aliased: int) -> bool:
    """Whether ``aliased`` of ``nodes`` (both counted fully expanded) is too many."""
    return aliased > ALIAS_FLOOR and nodes > NODE_FLOOR and aliased / nodes > allowed_alias_ratio(nodes)


class Exceeded(Exception):
    """Raised by the parsers, without a file name; ``bounded`` turns it into ``LimitExceeded``."""

    def __init__(self, limit: str, detail: str, *, document: int = 0, line: int = 0) -> None:
        super().__init__(detail)
        self.limit, self.detail, self.document, self.line = limit, detail, document, line


class LimitExceeded(RenderError):
    """Input from outside is over a parsing bound; ``limit`` names which one.

    A render error (exit 8) for manifests, a usage error (exit 2) for configuration files:
    the caller that knows which it read says so with ``exit_code``."""

    def __init__(self, message: str, *, limit: str, exit_code: ExitCode = ExitCode.RENDER) -> None:
        super().__init__(message)
        self.limit = limit
        self.exit_code = exit_code


_ADVICE = {
    "aliases": "write the values out, or use fewer nested aliases",
    "recursive alias": "an object cannot contain itself",
    "depth": "real manifests and documents nest far less",
    "document size": "the API server refuses objects this large too; split it",
    "size": "split it into several files",
    "documents": "split it into several files",
}


def message(where: str, exceeded: Exceeded) -> str:
    """``file:line: document N: what (limit: ...); advice`` for ``exceeded`` in ``where``
    (``line N: ...`` when ``where`` is empty: the caller names the file)."""
    place = where
    if exceeded.line:
        place = f"{where}:{exceeded.line}" if where else f"line {exceeded.line}"
    if exceeded.document:
        place = f"{place}: document {exceeded.document}" if place else f"document {exceeded.document}"
    advice = _ADVICE.get(exceeded.limit, "")
    return (
        (f"{place}: " if place else "")
        + f"{exceeded.detail} (limit: {exceeded.limit}); refusing to load it"
        + (f": {advice}" if advice else "")
    )


class Expansion:
    """How many nodes a document with aliases would have, fully expanded, computed without
    expanding anything: node counts of shared values are memoised by identity, so the work is
    linear in what was written however large the expansion."""

    def __init__(self) -> None:
        self._sizes: dict[int, int] = {}
        #: nodes that alias expansion would add, summed over every alias written
        self.aliased = 0

    def size(self, value: Any) -> int:
        """Nodes of ``value`` fully expanded (itself included); ``value`` must be complete."""
        if not isinstance(value, dict | list):
            return 1
        sizes = self._sizes
        known = sizes.get(id(value))
        if known is not None:
            return known
        # iterative post-order: depth is bounded, but recursion would cost frames the caller needs
        stack: list[tuple[Any, bool]] = [(value, False)]
        while stack:
            node, done = stack.pop()
            if id(node) in sizes:
                continue
            # a mapping's keys are scalars (a container key is left to the full loader)
            children = node.values() if isinstance(node, dict) else node
            if done:
                sizes[id(node)] = (
                    1
                    + (len(node) if isinstance(node, dict) else 0)
                    + sum(sizes[id(c)] if isinstance(c, dict | list) else 1 for c in children)
                )
                continue
            stack.append((node, True))
            stack.extend((c, False) for c in children if isinstance(c, dict | list) and id(c) not in sizes)
        return sizes[id(value)]

    def alias(self, target: Any) -> None:
        self.aliased += self.size(target)

    def check(self, root: Any, *, document: int, line: int) -> None:
        """Raise ``Exceeded`` when ``root``'s document takes too much from its aliases."""
        nodes = self.size(root)
        if excessive_aliasing(nodes, self.aliased):
            raise Exceeded(
                "aliases",
                f"aliases would expand it to {nodes:,} nodes, {self.aliased:,} of them from aliases "
                f"(more than {allowed_alias_ratio(nodes):.0%}, the share Kubernetes' YAML decoder allows)",
                document=document,
                line=line,
            )
