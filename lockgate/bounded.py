"""The one place YAML and JSON from outside are parsed, within the bounds of ``lockgate.parselimits``.

Every reader of input it did not write goes through here: artifact and repository
manifests (``lockgate.manifests``), Helm values and kustomizations before rendering, the
runner's and the image scanner's configuration files, SOPS documents, registry documents
and webhook bodies. Over a bound is a ``LimitExceeded`` naming the file, the document and
the bound, raised before the input can cost more than its own size in memory: aliases are
never expanded to be counted, and the structures they share are never walked twice.

- ``yaml_documents``: every document with its line. libyaml's events are built into values
  by ``lockgate.fastyaml``, which checks the bounds as it goes; what it hands over (tags,
  merge keys) is scanned first (``scan_yaml``) and then built by PyYAML's safe loader.
- ``scan_yaml``: the bounds alone, on the event stream, for callers that compose nodes
  themselves (``lockgate.located``, the image setters' markers).
- ``json_value``: ``json.loads`` within a size and the same depth (``lockgate.boundedjson``,
  re-exported here; JSON-only readers import that module and never load PyYAML).

Importing this module also lowers libyaml's own nesting limit (1,000 by default) to the
depth bound, through libyaml's ``yaml_set_max_nest_level``, which PyYAML does not wrap:
then even a syntax-only parse (``lockgate push``'s check) refuses what the runner will.
libyaml counts flow and block nesting apart, so a mix of both can still pass it and is
refused when loaded.
"""

from __future__ import annotations

import ctypes
from typing import Any, NoReturn

import yaml
from yaml import events

from lockgate import fastyaml, parselimits
from lockgate.boundedjson import json_value
from lockgate.errors import ExitCode, LockgateError, RenderError
from lockgate.parselimits import DEFAULT, Exceeded, LimitExceeded, Limits

__all__ = ["DEFAULT", "LimitExceeded", "Limits", "json_value", "scan_yaml", "yaml_documents"]

Loader: type[yaml.SafeLoader] = fastyaml.Loader
#: libyaml's message when its own nesting limit stops a parse
_LIBYAML_NESTING = "exceeded maximum nesting depth"


def _bound_libyaml(depth: int) -> bool:
    """Set libyaml's nesting limit (process-wide, as libyaml keeps it); False without libyaml."""
    try:
        from yaml import _yaml
    except ImportError:
        return False
    try:
        setter = ctypes.CDLL(_yaml.__file__).yaml_set_max_nest_level
    except (OSError, AttributeError):  # a libyaml older than 0.2.5 has no limit to set
        return False
    setter.argtypes, setter.restype = [ctypes.c_int], None
    setter(depth)
    return True


#: libyaml refuses block nesting at its limit and flow nesting past it: one more than the bound
#: lets every depth within it through (what it lets through beyond, ``fastyaml`` refuses)
LIBYAML_BOUNDED = _bound_libyaml(DEFAULT.max_depth + 1)


def _exceeded(where: str, exceeded: Exceeded, exit_code: ExitCode) -> LimitExceeded:
    return LimitExceeded(parselimits.message(where, exceeded), limit=exceeded.limit, exit_code=exit_code)


def _is_tab(text: str, line: int, column: int) -> bool:
    """Whether the error sits on a tab: at the column, or in the line's indentation."""
    lines = text.splitlines()
    if line >= len(lines):
        return False
    here = lines[line]
    indent = here[: len(here) - len(here.lstrip(" \t"))]
    return here[column : column + 1] == "\t" or "\t" in indent


def raise_yaml_error(
    exc: yaml.YAMLError, file: str, text: str, *, error: type[LockgateError] = RenderError
) -> NoReturn:
    """``exc`` as ``error`` naming ``file:line:column``; libyaml's nesting limit as the depth bound."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None)
    if problem and _LIBYAML_NESTING in problem:
        exceeded = Exceeded(
            "depth",
            f"nests deeper than {DEFAULT.max_depth} levels of mappings and sequences",
            line=mark.line + 1 if mark else 0,
        )
        raise _exceeded(file, exceeded, error.exit_code) from None
    if isinstance(exc, yaml.MarkedYAMLError):
        where = f"{file}:{mark.line + 1}:{mark.column + 1}" if mark else file
        if mark is not None and _is_tab(text, mark.line, mark.column):
            # PyYAML says "found character '\t' that cannot start any token" or similar
            raise error(
                f"{where}: invalid YAML: a tab character; YAML indents with spaces, not tabs"
            ) from None
        raise error(f"{where}: invalid YAML: {problem}") from None
    raise error(f"{file}: invalid YAML: {exc}") from None


def yaml_documents(
    text: str, file: str, *, limits: Limits = DEFAULT, error: type[LockgateError] = RenderError
) -> list[tuple[int, Any]]:
    """Every YAML document of ``text`` with its 1-based start line, as ``SafeLoader`` builds it.

    Invalid YAML raises ``error`` naming file, line and column; over a bound raises
    ``LimitExceeded`` with ``error``'s exit code.
    """
    try:
        return fastyaml.load_documents(text, limits)
    except fastyaml.Unsupported:
        pass
    except Exceeded as exceeded:
        raise _exceeded(file, exceeded, error.exit_code) from None
    except yaml.YAMLError as exc:
        raise_yaml_error(exc, file, text, error=error)
    # tags, merge keys and the like: the full loader decides, once the bounds are checked
    scan_yaml(text, file, limits=limits, error=error)
    loader = Loader(text)
    docs: list[tuple[int, Any]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                docs.append((node.start_mark.line + 1, loader.construct_document(node)))
    except yaml.YAMLError as exc:
        raise_yaml_error(exc, file, text, error=error)
    finally:
        loader.dispose()
    return docs


def scan_yaml(
    text: str, file: str, *, limits: Limits = DEFAULT, error: type[LockgateError] | None = RenderError
) -> None:
    """Check ``text`` against the bounds on its events alone (no values built).

    For callers that compose nodes themselves: composing shares an alias's node, but a walk
    over the nodes would follow every alias. Malformed YAML raises ``error`` as above, or
    with ``error`` None the ``yaml.YAMLError`` itself (for callers that word it their way).
    """
    exit_code = (error or RenderError).exit_code
    if len(text) > limits.max_bytes:
        raise _exceeded(file, Exceeded("size", size_detail(len(text), limits)), exit_code)
    loader = Loader(text)
    try:
        _scan(loader, limits)
    except Exceeded as exceeded:
        raise _exceeded(file, exceeded, exit_code) from None
    except yaml.YAMLError as exc:
        if error is None and _LIBYAML_NESTING not in str(exc):
            raise
        raise_yaml_error(exc, file, text, error=error or RenderError)
    finally:
        loader.dispose()


def size_detail(size: int, limits: Limits) -> str:
    return f"{size:,} bytes is over the {limits.max_bytes:,} allowed in one file"


def _scan(loader: yaml.SafeLoader, limits: Limits) -> None:
    """``fastyaml``'s bounds on events: node counts per anchor stand in for the shared values."""
    documents = line = nodes = aliased = started = 0
    sizes: dict[str, int] = {}
    #: (anchor, nodes counted when it opened) of each open mapping or sequence
    open_: list[tuple[str | None, int]] = []
    opened: dict[str, int] = {}
    while True:
        event = loader.get_event()  # type: ignore[no-untyped-call]
        kind = type(event)
        if kind is events.StreamEndEvent:
            return
        if kind is events.DocumentStartEvent:
            documents += 1
            nodes = aliased = line = 0
            sizes, started = {}, event.start_mark.index
            if documents > limits.max_documents:
                raise Exceeded("documents", f"more than {limits.max_documents:,} documents in one file")
            continue
        if kind is events.DocumentEndEvent:
            _scanned_document(event, started, nodes, aliased, limits, documents, line)
            continue
        if line == 0 and kind in (events.ScalarEvent, events.MappingStartEvent, events.SequenceStartEvent):
            line = event.start_mark.line + 1
        if kind is events.ScalarEvent:
            nodes += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif kind is events.MappingStartEvent or kind is events.SequenceStartEvent:
            nodes += 1
            if len(open_) >= limits.max_depth:
                raise fastyaml.too_deep(event, limits.max_depth, documents)
            open_.append((event.anchor, nodes))
            if event.anchor is not None:
                opened[event.anchor] = opened.get(event.anchor, 0) + 1
        elif kind is events.MappingEndEvent or kind is events.SequenceEndEvent:
            anchor, at = open_.pop()
            if anchor is not None:
                sizes[anchor] = nodes - at + 1
                opened[anchor] -= 1
        elif kind is events.AliasEvent and limits.aliases:
            if opened.get(event.anchor):
                raise fastyaml.recursive(event, documents)
            size = sizes.get(event.anchor, 1)  # an unknown alias is the loader's error to report
            nodes += size
            aliased += size


def _scanned_document(
    event: Any, started: int, nodes: int, aliased: int, limits: Limits, document: int, line: int
) -> None:
    size = event.end_mark.index - started
    if size > limits.max_document_bytes:
        raise Exceeded(
            "document size",
            f"the document is {size:,} characters, over the {limits.max_document_bytes:,} allowed",
            document=document,
            line=line,
        )
    if limits.aliases and parselimits.excessive_aliasing(nodes, aliased):
        raise Exceeded(
            "aliases",
            f"aliases would expand it to {nodes:,} nodes, {aliased:,} of them from aliases (more than "
            f"{parselimits.allowed_alias_ratio(nodes):.0%}, the share Kubernetes' YAML decoder allows)",
            document=document,
            line=line,
        )
