"""Commit messages from Flux's ``messageTemplate`` (a Go ``text/template``), a subset.

Flux renders ``git.commit.messageTemplate`` with Go's text/template over ``TemplateData``:
``.AutomationObject`` (``.Name``, ``.Namespace``; prints ``namespace/name``),
``.Changed.FileChanges`` (file -> object -> changes), ``.Changed.Objects`` (object ->
changes), ``.Changed.Changes`` and ``.Values`` (``messageTemplateValues``); a change has
``.OldValue``, ``.NewValue``, ``.Setter``; an object has ``.Kind``, ``.Name``,
``.Namespace``, ``.APIVersion``. ``update.template_data`` builds exactly that as plain
data (``Record``, dicts, lists, strings), and a field chain resolves only names that data
holds: like Go's, a template cannot reach anything it was not handed (no Python
attributes, no ``os.environ``), and a name it was not handed is a ``TemplateError`` naming
it, a ``.Values`` key missing from ``messageTemplateValues`` included. This interpreter covers what
Flux's documented templates use: text, ``{{- -}}`` trimming, comments, field chains on
``.`` and ``$variables``, ``range`` (with ``$k, $v :=``, maps in sorted key order),
``if``/``else``/``with``/``end``, and the functions ``len``, ``print``, ``println``,
``upper``, ``lower``, ``join``. Anything else is a ``UsageError`` that says so, rather
than a wrong message. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lockgate.errors import UsageError

DEFAULT = "Update from image update automation"
_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_TOKEN = re.compile(
    r'\s*("(?:[^"\\]|\\.)*"|`[^`]*`|:=|,|\$?[A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)+|\$[A-Za-z_0-9]*|[A-Za-z_][A-Za-z_0-9]*|\.)'
)


_VALUES_HINT = "; .Values holds spec.git.commit.messageTemplateValues: set the key there"


class TemplateError(UsageError):
    pass


@dataclass(frozen=True)
class Record:
    """A Go struct as a template sees it: its documented fields and nothing else.

    Templates get only records, maps (``dict``), lists and strings: plain data. Field access
    looks names up in ``fields``, never with ``getattr``, so a template reaches exactly what it
    was handed, as in Go, where unexported fields and the runtime are out of reach.
    """

    type_name: str
    fields: Mapping[str, Any]
    text: str | None = None  #: what printing it shows, for types with a Go ``String()`` method

    def __hash__(self) -> int:  # records are map keys (``.Changed.Objects``)
        return hash((self.type_name, tuple(self.fields.items())))

    def __lt__(self, other: Record) -> bool:  # Go ranges over struct keys in field order
        return tuple(self.fields.values()) < tuple(other.fields.values())


@dataclass
class _Node:
    kind: str  # text, expr, range, if, with
    text: str = ""
    words: tuple[str, ...] = ()
    body: list[_Node] | None = None
    otherwise: list[_Node] | None = None


def _lex(template: str) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    pos = 0
    for match in _ACTION.finditer(template):
        text = template[pos : match.start()]
        if match.group(1):
            text = text.rstrip()
        items.append(("text", text))
        items.append(("action", match.group(2).strip()))
        pos = match.end()
        if match.group(3):
            rest = template[pos:]
            pos += len(rest) - len(rest.lstrip())
    items.append(("text", template[pos:]))
    return items


def _words(action: str) -> tuple[str, ...]:
    words, pos = [], 0
    while pos < len(action):
        match = _TOKEN.match(action, pos)
        if match is None or match.end() == pos:
            raise TemplateError(f"commit message template: unsupported syntax in {{{{{action}}}}}")
        words.append(match.group(1))
        pos = match.end()
        if action[pos:].strip() == "":
            break
    return tuple(words)


def _parse(
    items: list[tuple[str, str]], pos: int = 0, stop: tuple[str, ...] = ()
) -> tuple[list[_Node], int, str]:
    nodes: list[_Node] = []
    while pos < len(items):
        kind, value = items[pos]
        pos += 1
        if kind == "text":
            nodes.append(_Node("text", value))
            continue
        if value.startswith("/*"):
            continue
        head = value.split(None, 1)[0] if value else ""
        if head in stop:
            return nodes, pos, head
        if head in ("range", "if", "with"):
            body, pos, ended = _parse(items, pos, ("else", "end"))
            otherwise: list[_Node] = []
            if ended == "else":
                otherwise, pos, ended = _parse(items, pos, ("end",))
            if ended != "end":
                raise TemplateError(f"commit message template: unclosed {{{{{head}}}}}")
            nodes.append(_Node(head, words=_words(value[len(head) :]), body=body, otherwise=otherwise))
        elif head in ("end", "else"):
            raise TemplateError(f"commit message template: unexpected {{{{{head}}}}}")
        else:
            nodes.append(_Node("expr", words=_words(value)))
    return nodes, pos, ""


def _field(value: Any, name: str, path: str) -> Any:
    """``value.name`` as Go resolves it on plain data; ``path`` is the chain so far, for errors."""
    where = f"commit message template: can't evaluate {path}.{name}"
    if isinstance(value, Record):
        if name not in value.fields:
            known = ", ".join(value.fields)
            raise TemplateError(f"{where}: {value.type_name} has no field {name} (its fields: {known})")
        return value.fields[name]
    if isinstance(value, Mapping):
        if name not in value:
            keys = ", ".join(sorted(str(k) for k in value)) or "none"
            hint = _VALUES_HINT if path.endswith(".Values") else ""
            raise TemplateError(f"{where}: no key {name!r} in {path or '.'} (its keys: {keys}){hint}")
        return value[name]
    raise TemplateError(f"{where}: {path or '.'} is {_go_type(value)}, which has no fields")


def _term(word: str, dot: Any, scope: Mapping[str, Any]) -> Any:
    if word.startswith(('"', "`")):
        return word[1:-1].encode().decode("unicode_escape") if word[0] == '"' else word[1:-1]
    head, *names = word.split(".")
    if head.startswith("$"):
        if head not in scope:
            raise TemplateError(f"commit message template: undefined variable {head}")
        value = scope[head]
    elif head == "":
        value = dot
    else:
        raise TemplateError(f"commit message template: unsupported term {word!r}")
    path = head
    for name in names:
        if name:
            value = _field(value, name, path)
            path = f"{path}.{name}"
    return value


def _go_type(value: Any) -> str:
    if isinstance(value, Record):
        return f"a {value.type_name}"
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, list | tuple):
        return "a list"
    return "a string" if isinstance(value, str) else f"a {type(value).__name__}"


def _text(value: Any) -> str:
    """Go's ``fmt.Print`` spelling of a value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Record):
        if value.text is not None:
            return value.text
        return "{" + " ".join(_text(v) for v in value.fields.values()) + "}"
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{_text(k)}:{_text(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list | tuple):
        return "[" + " ".join(_text(v) for v in value) + "]"
    return str(value)


def _len(value: Any) -> int:
    if isinstance(value, str | list | tuple | Mapping):
        return len(value)
    raise TemplateError(f"commit message template: len of {_go_type(value)}")


def _join(sep: Any, items: Any) -> str:
    if not isinstance(items, list | tuple):
        raise TemplateError(f"commit message template: join needs a list, got {_go_type(items)}")
    return _text(sep).join(_text(v) for v in items)


_FUNCS: dict[str, Callable[..., Any]] = {
    "len": lambda *a: _len(*a),
    "print": lambda *a: "".join(_text(v) for v in a),
    "println": lambda *a: " ".join(_text(v) for v in a) + "\n",
    "upper": lambda *a: _text(a[0]).upper(),
    "lower": lambda *a: _text(a[0]).lower(),
    "join": lambda *a: _join(*a),
}


def _eval(words: Sequence[str], dot: Any, scope: Mapping[str, Any]) -> Any:
    if not words:
        raise TemplateError("commit message template: empty action")
    if words[0] in _FUNCS:
        return _FUNCS[words[0]](*(_term(w, dot, scope) for w in words[1:]))
    if len(words) != 1:
        raise TemplateError(f"commit message template: unsupported pipeline {' '.join(words)!r}")
    return _term(words[0], dot, scope)


def _truthy(value: Any) -> bool:
    return bool(value) if not isinstance(value, int | float) else value != 0


def _render(nodes: list[_Node], dot: Any, scope: dict[str, Any], out: list[str]) -> None:
    for node in nodes:
        if node.kind == "text":
            out.append(node.text)
        elif node.kind == "expr":
            out.append(_text(_eval(node.words, dot, scope)))
        elif node.kind in ("if", "with"):
            value = _eval(node.words, dot, scope)
            branch = node.body if _truthy(value) else node.otherwise
            _render(branch or [], value if node.kind == "with" else dot, scope, out)
        else:
            _range(node, dot, scope, out)


def _range(node: _Node, dot: Any, scope: dict[str, Any], out: list[str]) -> None:
    words = list(node.words)
    names: list[str] = []
    if ":=" in words:
        split = words.index(":=")
        names = [w for w in words[:split] if w != ","]
        words = words[split + 1 :]
    value = _eval(words, dot, scope)
    if isinstance(value, Mapping):
        pairs = sorted(value.items(), key=lambda pair: pair[0])
    elif isinstance(value, list | tuple):
        pairs = list(enumerate(value))
    else:
        action = f"{{{{range {' '.join(words)}}}}}"
        raise TemplateError(f"commit message template: {action}: can't range over {_go_type(value)}")
    if not pairs:
        _render(node.otherwise or [], dot, scope, out)
    for key, item in pairs:
        inner = dict(scope)
        if len(names) == 1:
            inner[names[0]] = item
        elif len(names) == 2:
            inner[names[0]], inner[names[1]] = key, item
        _render(node.body or [], item, inner, out)


def render(template: str, data: Record) -> str:
    """Render ``template`` (Flux's default when empty) against ``data``, plain data only."""
    nodes, _, _ = _parse(_lex(template or DEFAULT))
    out: list[str] = []
    _render(nodes, data, {"$": data}, out)
    return "".join(out)
