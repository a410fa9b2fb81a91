"""Typed configuration documents: dataclasses whose fields say how they are written in YAML.

A configuration kind is a frozen dataclass; each field is declared with ``attr`` (its YAML
name, a description, its default, whether it is required, constraints), and its Python
annotation gives its type: ``str``, ``bool``, ``int``, ``float``, a ``Literal`` of choices,
``X | None``, ``tuple[X, ...]`` (a YAML list) or another such dataclass (a mapping).
``decode`` turns a parsed YAML value into the dataclass and collects every problem into
``Problems``, each naming file:line, the document and the field path; ``lockgate.schema``
renders the same declarations as a JSON Schema and a markdown reference, so the three
can never disagree. Pure: no I/O.

Unknown fields are errors (with a did-you-mean), as Kubernetes' strict field validation
does; a YAML ``null`` means the field is unset.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar, get_args, get_origin

from lockgate.errors import UsageError
from lockgate.located import Document, Path, dotted

KEY = "lockgate.model"
#: a Kubernetes object name (RFC 1123 subdomain)
OBJECT_NAME = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
T = TypeVar("T")
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?$")
#: what a duration may look like (for the schema): Go-style units h, m, s, or plain seconds
DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?|([0-9]+(\.[0-9]+)?h)?([0-9]+(\.[0-9]+)?m)?([0-9]+(\.[0-9]+)?s)?)$"


def parse_duration(text: str) -> float:
    """Go-style ``1h30m``, ``5m``, ``45s``, or plain seconds."""
    value = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", value):
        return float(value)
    found = _DURATION.match(value)
    if not value or not found or not any(found.groups()):
        raise UsageError(f"invalid duration {text!r}: expected e.g. 30s, 5m, 1h30m")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in found.groups())
    return hours * 3600 + minutes * 60 + seconds


def format_duration(seconds: float) -> str:
    """The short Go-style spelling of ``seconds``: 3600 -> ``1h``, 90 -> ``1m30s``."""
    whole = int(seconds)
    if whole != seconds:
        return f"{seconds:g}s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + (f"{secs}s" if secs else "")
    return text or "0s"


@dataclass(frozen=True)
class Meta:
    """How one dataclass field is written and checked."""

    name: str
    doc: str
    required: bool = False
    #: a Go-style duration string, held as float seconds
    duration: bool = False
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    pattern: str | None = None
    max_length: int | None = None
    #: written ``{name: ...}`` (a Kubernetes LocalObjectReference), held as the name
    reference: bool = False


def attr(
    name: str,
    doc: str,
    *,
    default: Any = None,
    factory: Any = None,
    required: bool = False,
    duration: bool = False,
    minimum: float | None = None,
    exclusive_minimum: float | None = None,
    maximum: float | None = None,
    pattern: str | None = None,
    max_length: int | None = None,
    reference: bool = False,
) -> Any:
    """A dataclass field written ``name`` in YAML. A required field still has a Python default
    (so field order is free); ``decode`` reports it missing."""
    meta = Meta(
        name, doc, required, duration, minimum, exclusive_minimum, maximum, pattern, max_length, reference
    )
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata={KEY: meta})
    return dataclasses.field(default=default, metadata={KEY: meta})


@dataclass(frozen=True)
class FieldInfo:
    """A declared field with its resolved type (for ``decode`` and ``lockgate.schema``)."""

    attribute: str
    meta: Meta
    type: Any
    default: Any


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    # resolving the annotations is most of the cost of decoding a document; a class's
    # annotations never change, and a config of 1,000 syncs asks for each class's 1,000 times
    return typing.get_type_hints(cls)


def fields(cls: type) -> list[FieldInfo]:
    """The declared fields of a model dataclass, in declaration order."""
    hints = _hints(cls)
    found = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get(KEY)
        if not isinstance(meta, Meta):
            raise TypeError(f"{cls.__name__}.{f.name} is not declared with lockgate.model.attr")
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        found.append(FieldInfo(f.name, meta, hints[f.name], default))
    return found


def shorthand(cls: type) -> str | None:
    """The field a bare scalar stands for (``dependsOn: [a]`` meaning ``[{name: a}]``), if any."""
    value = getattr(cls, "__shorthand__", None)
    return value if isinstance(value, str) else None


class Shorthand:
    """Mix-in: ``__shorthand__ = "name"`` lets a scalar stand for a mapping of that one field."""

    __shorthand__: ClassVar[str]


def strip_optional(tp: Any) -> Any:
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


def describe(value: Any) -> str:
    """A value's YAML type, for "expected X, got Y" (never the value: it may be a secret)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


@dataclass(frozen=True)
class LocalObjectReference:
    """An object in the same namespace, by name."""

    name: str = attr("name", "The object's name.", required=True, pattern=OBJECT_NAME, max_length=253)


def target(f: FieldInfo) -> Any:
    """The type a field is written as in YAML (a reference field is an object, held as a string)."""
    return LocalObjectReference if f.meta.reference else f.type


class Problems:
    """Every problem found in one document, each as ``file:line: LABEL: field: message``.

    ``lenient``: ``decode`` still builds what it can (see ``decode``)."""

    def __init__(self, document: Document, label: str = "", *, lenient: bool = False) -> None:
        self.document = document
        self.label = label
        self.lenient = lenient
        self.messages: list[str] = []
        #: the field path of each problem, in the order found
        self.paths: list[Path] = []

    def add(self, path: Path, message: str) -> None:
        where = f"{self.document.file}:{self.document.line_of(path)}"
        parts = [where, *([self.label] if self.label else []), *([dotted(path)] if path else []), message]
        self.messages.append(": ".join(parts))
        self.paths.append(path)

    def raise_if_any(self) -> None:
        raise_all(self.messages)


_WHERE = re.compile(r"^(.*?):(\d+):")


def in_file_order(messages: list[str]) -> list[str]:
    """``messages`` sorted by the ``file:line:`` they start with (stable: one line's problems keep
    the order they were found in; messages without a line come last)."""

    def key(message: str) -> tuple[int, str, int]:
        found = _WHERE.match(message)
        return (0, found.group(1), int(found.group(2))) if found else (1, "", 0)

    return sorted(messages, key=key)


def raise_all(messages: list[str]) -> None:
    """One ``UsageError`` for all ``messages`` (the first line alone when there is one)."""
    if len(messages) == 1:
        raise UsageError(messages[0])
    if messages:
        raise UsageError(f"{len(messages)} problems:\n" + "\n".join(f"  {m}" for m in messages))


class _Bad:
    pass


BAD: Any = _Bad()


def decode(cls: type[T], value: Any, problems: Problems, path: Path = ()) -> T | None:
    """``value`` as a ``cls``; None (with the reasons in ``problems``) when it is not one.

    With ``problems.lenient`` what can be built is: an unknown field or a field whose value is
    wrong is left at its default, a list or mapping keeps its good items; only a required field
    missing or wrong gives None. The checks that follow decoding can then run on the rest of
    the document, so a file's problems are found in one round."""
    result = _value(cls, None, value, problems, path)
    return None if result is BAD else typing.cast(T, result)


def _object(cls: type, value: Any, problems: Problems, path: Path) -> Any:
    short = shorthand(cls)
    if short is not None and not isinstance(value, dict | list):
        value = {short: value}
    if not isinstance(value, dict):
        problems.add(path, f"expected a mapping, got {describe(value)}")
        return BAD
    declared = fields(cls)
    names = [f.meta.name for f in declared]
    ok = True
    suggested: set[str] = set()
    for key in value:
        if not isinstance(key, str):
            problems.add(path, f"field names must be strings, got {describe(key)}")
            ok = False
        elif key not in names:
            close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]}?" if close else f"known fields: {', '.join(names)}"
            suggested.update(close)
            problems.add((*path, key), f"unknown field; {hint}")
            ok = False
    built: dict[str, Any] = {}
    for f in declared:
        raw = value.get(f.meta.name)
        decoded = BAD
        if raw is None:
            if not f.meta.required:
                continue
            if f.meta.name not in suggested:  # else the misspelling's message says it
                problems.add((*path, f.meta.name), "required field is missing")
            else:
                problems.paths.append((*path, f.meta.name))
        else:
            decoded = _value(f.type, f.meta, raw, problems, (*path, f.meta.name))
        if decoded is not BAD:
            built[f.attribute] = decoded
            continue
        ok = False
        if problems.lenient and f.meta.required:
            placeholder = _placeholder(f)
            if placeholder is BAD:
                return BAD
            built[f.attribute] = placeholder
    if ok or problems.lenient:
        return cls(**built)
    return BAD


def _placeholder(f: FieldInfo) -> Any:
    """What a lenient decode puts in a required field it could not read: a value of its type
    (the problem is reported already), or BAD when there is no such value."""
    if f.default is not None and f.default is not dataclasses.MISSING:
        return f.default
    tp = strip_optional(f.type)
    if get_origin(tp) is tuple:
        return ()
    return {str: "", bool: False, int: 0, float: 0.0}.get(tp, BAD)


def _value(tp: Any, meta: Meta | None, value: Any, problems: Problems, path: Path) -> Any:
    tp = strip_optional(tp)
    origin = get_origin(tp)
    if meta is not None and meta.reference:
        ref = _object(LocalObjectReference, value, problems, path)
        return BAD if ref is BAD else ref.name
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _object(tp, value, problems, path)
    if origin is tuple:
        if not isinstance(value, list):
            problems.add(path, f"expected a list, got {describe(value)}")
            return BAD
        (item_type, _) = get_args(tp)
        items = [_value(item_type, meta, item, problems, (*path, i)) for i, item in enumerate(value)]
        if problems.lenient:
            return tuple(item for item in items if item is not BAD)
        return BAD if any(item is BAD for item in items) else tuple(items)
    if origin is dict:
        if not isinstance(value, dict):
            problems.add(path, f"expected a mapping, got {describe(value)}")
            return BAD
        (_, item_type) = get_args(tp)
        entries = {
            str(key): _scalar(item_type, None, item, problems, (*path, str(key)))
            for key, item in value.items()
        }
        if problems.lenient:
            return {key: item for key, item in entries.items() if item is not BAD}
        return BAD if any(item is BAD for item in entries.values()) else entries
    if origin is Literal:
        choices = get_args(tp)
        if value not in choices:
            problems.add(path, f"expected one of {', '.join(map(str, choices))}; got {value!r}")
            return BAD
        return value
    if meta is not None and meta.duration:
        if not isinstance(value, str):
            problems.add(path, f"expected a duration such as 30s, 5m or 1h30m, got {describe(value)}")
            return BAD
        try:
            return parse_duration(value)
        except UsageError as exc:
            problems.add(path, exc.message)
            return BAD
    return _scalar(tp, meta, value, problems, path)


def _scalar(tp: Any, meta: Meta | None, value: Any, problems: Problems, path: Path) -> Any:
    expected = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}.get(tp)
    if expected is None:
        raise TypeError(f"lockgate.model cannot decode {tp!r}")
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    fits = {
        bool: isinstance(value, bool),
        int: isinstance(value, int) and not isinstance(value, bool),
        float: is_number,
        str: isinstance(value, str),
    }[tp]
    if not fits:
        problems.add(path, f"expected {expected}, got {describe(value)}")
        return BAD
    if meta is not None and not _within(meta, value, problems, path):
        return BAD
    return float(value) if tp is float else value


def _within(meta: Meta, value: Any, problems: Problems, path: Path) -> bool:
    before = len(problems.messages)
    if isinstance(value, str):
        if meta.pattern is not None and not re.search(meta.pattern, value):
            problems.add(path, f"{value!r} does not match {meta.pattern}")
        if meta.max_length is not None and len(value) > meta.max_length:
            problems.add(path, f"at most {meta.max_length} characters, got {len(value)}")
    elif not isinstance(value, bool):
        if meta.minimum is not None and value < meta.minimum:
            problems.add(path, f"must be at least {meta.minimum:g}, got {value:g}")
        if meta.exclusive_minimum is not None and value <= meta.exclusive_minimum:
            problems.add(path, f"must be more than {meta.exclusive_minimum:g}, got {value:g}")
        if meta.maximum is not None and value > meta.maximum:
            problems.add(path, f"must be at most {meta.maximum:g}, got {value:g}")
    return len(problems.messages) == before
