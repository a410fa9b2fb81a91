"""Where the setter markers are: ``# {"$imagepolicy": "ns:name[:tag|:name|:digest]"}``.

The first half of setter rewriting (``setters`` is the second): parse a file only to
locate scalars (PyYAML marks give their character offsets) and read the comment that
marks each one. Recognised positions follow kyaml's ``fieldmeta.Read`` as Flux uses it: a
scalar that is a mapping value or a sequence item, with the marker JSON in its line
comment (same line, after the value) or in a one-line head comment directly above a
scalar that starts its line (a ``- item``). Mapping keys are never setters. The comment,
stripped of leading ``#``, must be a JSON object of strings, as Go's ``json.Unmarshal``
into ``map[string]string`` requires; anything else is a plain comment. ``scan`` also
uses ``find`` to show the values currently in the repository. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

import yaml

from lockgate import bounded

TOKEN = '"$imagepolicy"'
SHORTHAND = "$imagepolicy"


@dataclass(frozen=True, order=True)
class ObjectId:
    """The object a change belongs to (Flux's ``ObjectIdentifier``); empty parts allowed."""

    api_version: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""


class ProblemKind(Enum):
    UNPARSABLE = "unparsable"  #: file skipped
    UNKNOWN_POLICY = "unknown-policy"  #: file left untouched
    OUT_OF_SCOPE = "out-of-scope"  #: a notice: marker left to another automation, rest of the file updated
    NO_VALUE = "no-value"  #: policy has no result (or no digest); marker skipped
    UNSUPPORTED = "unsupported"  #: marker on a block scalar; marker skipped
    NOT_A_MARKER = "not-a-marker"  #: comment mentions $imagepolicy but is not valid JSON


#: kinds that stop the whole file from being rewritten
BLOCKING = frozenset({ProblemKind.UNPARSABLE, ProblemKind.UNKNOWN_POLICY})
#: kinds reported as notices, by design not failures: ``update --strict`` makes them fail
NOTICES = frozenset({ProblemKind.OUT_OF_SCOPE})


@dataclass(frozen=True)
class Problem:
    kind: ProblemKind
    message: str
    line: int | None = None
    setter: str | None = None


@dataclass(frozen=True)
class Marked:
    """A marked scalar: the node (for its span and style), the setter name, its object."""

    node: yaml.ScalarNode
    setter: str
    obj: ObjectId

    @property
    def line(self) -> int:
        return int(self.node.start_mark.line) + 1

    @property
    def value(self) -> str:
        return str(self.node.value)


def _values(root: yaml.Node) -> Iterator[yaml.ScalarNode]:
    """Scalars that may carry a setter: mapping values and sequence items, never keys."""
    seen: set[int] = set()
    stack: list[yaml.Node] = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:  # an alias: the anchored node is visited once
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            yield node
        elif isinstance(node, yaml.MappingNode):
            stack.extend(value for _, value in reversed(node.value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))


def _object_id(root: yaml.Node) -> ObjectId:
    def scalar(mapping: yaml.Node, key: str) -> yaml.Node | None:
        if isinstance(mapping, yaml.MappingNode):
            for k, v in mapping.value:
                if isinstance(k, yaml.ScalarNode) and k.value == key:
                    return v  # type: ignore[no-any-return]
        return None

    def text(node: yaml.Node | None) -> str:
        return str(node.value) if isinstance(node, yaml.ScalarNode) else ""

    metadata = scalar(root, "metadata")
    return ObjectId(
        api_version=text(scalar(root, "apiVersion")),
        kind=text(scalar(root, "kind")),
        namespace=text(scalar(metadata, "namespace")) if metadata is not None else "",
        name=text(scalar(metadata, "name")) if metadata is not None else "",
    )


def content_start(text: str, node: yaml.ScalarNode) -> int:
    """Offset of the scalar itself, after any ``&anchor`` / ``!tag`` properties."""
    i = int(node.start_mark.index)
    while i < len(text) and text[i] in "&!":
        while i < len(text) and text[i] not in " \t\r\n":
            i += 1
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
    return i


def _line_bounds(text: str, index: int) -> tuple[int, int]:
    start = max(text.rfind("\n", 0, index), text.rfind("\r", 0, index)) + 1
    ends = [pos for pos in (text.find("\n", index), text.find("\r", index)) if pos != -1]
    return start, min(ends) if ends else len(text)


def _line_comment(text: str, node: yaml.ScalarNode) -> str | None:
    block = node.style in ("|", ">")  # a block scalar's comment follows its header indicator
    i = content_start(text, node) + 1 if block else int(node.end_mark.index)
    _, line_end = _line_bounds(text, i)
    rest = text[i:line_end]
    if block:
        rest = rest.lstrip("+-0123456789")
    stripped = rest.lstrip(" \t")
    # YAML needs whitespace before a comment; a plain scalar's end mark excludes it
    return stripped if stripped.startswith("#") and len(stripped) < len(rest) else None


def _head_comment(text: str, start: int) -> str | None:
    line_start, _ = _line_bounds(text, start)
    prefix = text[line_start:start]
    if prefix.replace("-", " ").strip(" \t"):
        return None  # the scalar does not start its line: a head comment belongs to the key
    if line_start == 0:
        return None
    above_start, above_end = _line_bounds(
        text, line_start - 1 - (text[line_start - 2 : line_start] == "\r\n")
    )
    above = text[above_start:above_end].strip(" \t")
    if not above.startswith("#"):
        return None
    if above_start > 0:
        before_start, before_end = _line_bounds(text, above_start - 1)
        if text[before_start:before_end].strip(" \t").startswith("#"):
            return None  # a multi-line head comment never parses as one JSON object
    return above


def _marker(comment: str | None) -> str | None:
    """The setter name in a comment, as kyaml's ``processShortHand`` reads it."""
    if comment is None:
        return None
    try:
        parsed = bounded.json_value(comment.lstrip("#"), "a comment", max_bytes=len(comment))
    except (ValueError, bounded.LimitExceeded):  # not JSON, or nesting no marker has: not a marker
        return None
    if not isinstance(parsed, dict) or not all(isinstance(v, str | None) for v in parsed.values()):
        return None
    name = parsed.get(SHORTHAND) or ""
    return str(name).removeprefix("${").removesuffix("}") or None


def find_in(text: str, roots: list[yaml.Node]) -> tuple[list[Marked], list[Problem]]:
    found: list[Marked] = []
    problems: list[Problem] = []
    for root in roots:
        obj = _object_id(root)
        for node in _values(root):
            line_comment = _line_comment(text, node)
            head = None
            name = _marker(line_comment)
            if name is None:
                head = _head_comment(text, content_start(text, node))
                name = _marker(head)
            if name is not None:
                found.append(Marked(node, name, obj))
                continue
            for comment in (line_comment, head):
                if comment is not None and SHORTHAND in comment:
                    problems.append(_not_a_marker(comment, node))
    return found, problems


def _not_a_marker(comment: str, node: yaml.ScalarNode) -> Problem:
    return Problem(
        ProblemKind.NOT_A_MARKER,
        f"comment {comment.strip()!r} mentions $imagepolicy but is not a marker "
        '(a JSON object of strings with a non-empty "$imagepolicy"); ignored',
        int(node.start_mark.line) + 1,
    )


#: libyaml when PyYAML has it (10x faster; same marks: character offsets, and plain style
#: as "" where the pure-Python parser says None), else the pure-Python loader
LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse(text: str) -> list[yaml.Node]:
    """The documents of ``text`` as nodes; raises ``yaml.YAMLError`` or, over a parsing bound
    (an alias bomb would make the walk over the nodes follow every alias), ``LimitExceeded``."""
    bounded.scan_yaml(text, "", error=None)
    return [root for root in yaml.compose_all(text, Loader=LOADER) if root is not None]


def find(data: bytes) -> tuple[list[Marked], list[Problem]]:
    """Every marker in one file's bytes, or the UNPARSABLE problem."""
    if TOKEN.encode() not in data:
        return [], []
    try:
        text = data.decode("utf-8")
        return find_in(text, parse(text))
    except (UnicodeDecodeError, yaml.YAMLError, bounded.LimitExceeded) as exc:
        return [], [unparsable(exc)]


def unparsable(exc: Exception) -> Problem:
    message = f"cannot be parsed as YAML, skipped: {str(exc).splitlines()[0] if str(exc) else exc!r}"
    return Problem(ProblemKind.UNPARSABLE, message)
