"""A faster ``yaml.safe_load_all`` for plain Kubernetes manifests, built straight from parser events.

Why: with libyaml, PyYAML still composes a node graph and resolves every scalar in
Python, which was most of a no-op reconcile pass at thousands of objects. This module
reads libyaml's events and builds dicts, lists and scalars in one loop, resolving only
plain scalars whose first character can make them something other than a string
(with a per-call cache). The result is exactly what ``SafeLoader`` builds: anything
this loop does not handle itself (explicit tags, merge keys, unhashable keys,
unknown or duplicate anchors) raises ``Unsupported`` and ``lockgate.bounded`` falls
back to the full loader, which also produces the error messages with their line and
column. Parse errors from the event stream are raised as they are (same parser).

The bounds of ``lockgate.parselimits`` are checked here, as the values are built, for
almost nothing: nesting depth when a mapping or sequence opens, size and count when a
document ends, and only a document with aliases pays for counting its expansion (on node
counts memoised by identity: an alias shares its anchor's value, nothing is copied).
Over a bound raises ``parselimits.Exceeded``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from yaml import events

from lockgate import parselimits
from lockgate.parselimits import Exceeded, Expansion, Limits

Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_DELEGATED = (
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:timestamp",
)
_PLAIN = (True, False)
_NO_KEY: Any = object()


class Unsupported(Exception):
    """The document needs the full loader (tags, merge keys, odd anchors); not a user error."""


class _Scalars:
    """Implicit resolution of plain scalars, as ``SafeLoader`` does it, cached per value."""

    def __init__(self, loader: yaml.SafeLoader) -> None:
        self.loader = loader
        self.special = set(loader.yaml_implicit_resolvers)
        self.cache: dict[str, Any] = {}

    def plain(self, value: str) -> Any:
        if value and value[0] not in self.special:
            return value
        try:
            return self.cache[value]
        except KeyError:
            pass
        tag = self.loader.resolve(yaml.ScalarNode, value, _PLAIN)  # type: ignore[no-untyped-call]
        if tag == _STR:
            result: Any = value
        elif tag == _NULL:
            result = None
        elif tag in _DELEGATED:
            node = yaml.ScalarNode(tag, value)
            result = self.loader.yaml_constructors[tag](self.loader, node)
        else:
            raise Unsupported(tag)
        self.cache[value] = result
        return result


def load_documents(text: str, limits: Limits = parselimits.DEFAULT) -> list[tuple[int, Any]]:
    """Every document of ``text`` with its 1-based start line, as ``SafeLoader`` would build it.

    Raises ``yaml.YAMLError`` for malformed YAML, ``Exceeded`` over a bound of ``limits``,
    and ``Unsupported`` when the full loader must decide (its result or its error is
    authoritative then).
    """
    if len(text) > limits.max_bytes:
        raise Exceeded(
            "size", f"{len(text):,} characters is over the {limits.max_bytes:,} allowed in one file"
        )
    loader = Loader(text)
    try:
        return _build(loader, limits)
    finally:
        loader.dispose()


def _build(loader: yaml.SafeLoader, limits: Limits) -> list[tuple[int, Any]]:
    scalars = _Scalars(loader)
    get_event: Callable[[], Any] = loader.get_event
    docs: list[tuple[int, Any]] = []
    anchors: dict[str, Any] = {}
    stack: list[Any] = []
    keys: list[Any] = []
    line = 0
    max_depth = limits.max_depth
    #: ids of the anchored mappings and sequences still open: an alias to one is recursive
    opened: set[int] = set()
    expansion: Expansion | None = None
    started = 0
    while True:
        event = get_event()
        kind = type(event)
        value: Any
        if kind is events.ScalarEvent:
            if event.tag is not None and event.tag != "!":
                raise Unsupported(event.tag)
            value = scalars.plain(event.value) if event.implicit[0] else event.value
        elif kind is events.MappingStartEvent or kind is events.SequenceStartEvent:
            if event.tag is not None and event.tag != "!":
                raise Unsupported(event.tag)
            if not stack:
                line = event.start_mark.line + 1
            container: Any = {} if kind is events.MappingStartEvent else []
            if event.anchor is not None:
                if event.anchor in anchors:
                    raise Unsupported("duplicate anchor")
                anchors[event.anchor] = container
                opened.add(id(container))
            if len(stack) >= max_depth:
                raise too_deep(event, max_depth, len(docs) + 1)
            stack.append(container)
            keys.append(_NO_KEY)
            continue
        elif kind is events.MappingEndEvent or kind is events.SequenceEndEvent:
            value = stack.pop()
            if keys.pop() is not _NO_KEY:
                raise Unsupported("mapping ended after a key")
            if opened:
                opened.discard(id(value))
        elif kind is events.AliasEvent:
            if event.anchor not in anchors:
                raise Unsupported("unknown alias")
            value = anchors[event.anchor]
            if limits.aliases:
                if id(value) in opened:
                    raise recursive(event, len(docs) + 1)
                expansion = expansion or Expansion()
                expansion.alias(value)
        elif kind is events.DocumentStartEvent:
            anchors = {}
            started = event.start_mark.index
            continue
        elif kind is events.DocumentEndEvent:
            _document_end(event, docs, started, expansion, limits)
            expansion = None
            continue
        elif kind is events.StreamEndEvent:
            return docs
        else:  # StreamStart
            continue
        if kind is events.ScalarEvent:
            if not stack:
                line = event.start_mark.line + 1
            if event.anchor is not None:
                if event.anchor in anchors:
                    raise Unsupported("duplicate anchor")
                anchors[event.anchor] = value
        if not stack:
            docs.append((line, value))
            continue
        top = stack[-1]
        if type(top) is list:
            top.append(value)
        elif keys[-1] is _NO_KEY:
            keys[-1] = value
        else:
            try:
                top[keys[-1]] = value
            except TypeError:
                raise Unsupported("unhashable key") from None
            keys[-1] = _NO_KEY


def too_deep(event: Any, max_depth: int, document: int) -> Exceeded:
    return Exceeded(
        "depth",
        f"nests deeper than {max_depth} levels of mappings and sequences",
        document=document,
        line=event.start_mark.line + 1,
    )


def recursive(event: Any, document: int) -> Exceeded:
    return Exceeded(
        "recursive alias",
        f"alias *{event.anchor} is inside its own anchor &{event.anchor}: a structure holding itself",
        document=document,
        line=event.start_mark.line + 1,
    )


def _document_end(
    event: Any, docs: list[tuple[int, Any]], started: int, expansion: Expansion | None, limits: Limits
) -> None:
    """The bounds checked once per document: its size, the count so far, its aliases."""
    line, value = docs[-1]
    size = event.end_mark.index - started
    if size > limits.max_document_bytes:
        raise Exceeded(
            "document size",
            f"the document is {size:,} characters, over the {limits.max_document_bytes:,} allowed",
            document=len(docs),
            line=line,
        )
    if len(docs) > limits.max_documents:
        raise Exceeded(
            "documents",
            f"more than {limits.max_documents:,} documents in one file",
            document=len(docs),
            line=line,
        )
    if expansion is not None:
        expansion.check(value, document=len(docs), line=line)
