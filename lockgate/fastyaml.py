"""A faster ``yaml.safe_load_all`` for plain Kubernetes manifests, built straight from parser events.

Why: with libyaml, PyYAML still composes a node graph and resolves every scalar in
Python, which was most of a no-op reconcile pass at thousands of objects. This module
reads libyaml's events and builds dicts, lists and scalars in one loop, resolving only
plain scalars whose first character can make them something other than a string
(with a per-call cache). The result is exactly what ``SafeLoader`` builds: anything
this loop does not handle itself (explicit tags, merge keys, unhashable keys,
unknown or duplicate anchors) raises ``Unsupported`` and ``lockgate.manifests`` falls
back to the full loader, which also produces the error messages with their line and
column. Parse errors from the event stream are raised as they are (same parser).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from yaml import events

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


def load_documents(text: str) -> list[tuple[int, Any]]:
    """Every document of ``text`` with its 1-based start line, as ``SafeLoader`` would build it.

    Raises ``yaml.YAMLError`` for malformed YAML and ``Unsupported`` when the full loader
    must decide (its result or its error is authoritative then).
    """
    loader = Loader(text)
    try:
        return _build(loader)
    finally:
        loader.dispose()


def _build(loader: yaml.SafeLoader) -> list[tuple[int, Any]]:
    scalars = _Scalars(loader)
    get_event: Callable[[], Any] = loader.get_event
    docs: list[tuple[int, Any]] = []
    anchors: dict[str, Any] = {}
    stack: list[Any] = []
    keys: list[Any] = []
    line = 0
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
            stack.append(container)
            keys.append(_NO_KEY)
            continue
        elif kind is events.MappingEndEvent or kind is events.SequenceEndEvent:
            value = stack.pop()
            if keys.pop() is not _NO_KEY:
                raise Unsupported("mapping ended after a key")
        elif kind is events.AliasEvent:
            if event.anchor not in anchors:
                raise Unsupported("unknown alias")
            value = anchors[event.anchor]
        elif kind is events.DocumentStartEvent:
            anchors = {}
            continue
        elif kind is events.StreamEndEvent:
            return docs
        else:  # StreamStart, DocumentEnd
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
