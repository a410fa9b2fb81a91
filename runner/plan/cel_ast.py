"""The parsed form of a CEL expression, read from the runtime's own parse, for the cost estimate.

Pure. ``cel-expr-python`` gives no syntax tree to Python, but ``Expression.serialize()`` returns
the parse as the CEL team's ``cel.expr.ParsedExpr`` protobuf (inside a ``google.protobuf.Any``),
macros already expanded into comprehensions, exactly as the runtime will evaluate it. This
module decodes those bytes (the protobuf wire format: varints, length-delimited fields, fixed
64-bit doubles) into small frozen dataclasses, so the estimate (``runner.plan.cel_cost``)
walks what runs and not a second parse of our own. The field numbers are those of
``cel/expr/syntax.proto``; unknown fields are skipped, as protobuf readers do.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass


class AstError(ValueError):
    """Bytes that are not a ParsedExpr as this module knows it (a changed runtime)."""


@dataclass(frozen=True)
class Const:
    value: bool | int | float | str | bytes | None


@dataclass(frozen=True)
class Ident:
    name: str


@dataclass(frozen=True)
class Select:
    operand: Node
    field: str
    test_only: bool = False


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple[Node, ...]
    target: Node | None = None


@dataclass(frozen=True)
class ListOf:
    elements: tuple[Node, ...]


@dataclass(frozen=True)
class MapOf:
    """A map or message literal: (key, value) pairs; a message field's key is its name as a Const."""

    entries: tuple[tuple[Node, Node], ...]


@dataclass(frozen=True)
class Comprehension:
    iter_var: str
    iter_range: Node
    accu_var: str
    accu_init: Node
    loop_condition: Node
    loop_step: Node
    result: Node
    iter_var2: str = ""


Node = Const | Ident | Select | Call | ListOf | MapOf | Comprehension

_PARSED_EXPR = "cel.expr.ParsedExpr"


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise AstError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise AstError("varint too long")


Field = tuple[int, int | bytes]


def _fields(data: bytes) -> Iterator[Field]:
    """(number, value) of each field: an int for varints and fixed widths, bytes for the rest."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, at = _varint(data, at)
            yield number, value
        elif kind == 1:
            yield number, int.from_bytes(data[at : at + 8], "little")
            at += 8
        elif kind == 2:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise AstError("truncated field")
            yield number, data[at : at + size]
            at += size
        elif kind == 5:
            yield number, int.from_bytes(data[at : at + 4], "little")
            at += 4
        else:
            raise AstError(f"wire type {kind} is not used by ParsedExpr")


def _message(data: bytes) -> dict[int, list[int | bytes]]:
    found: dict[int, list[int | bytes]] = {}
    for number, value in _fields(data):
        found.setdefault(number, []).append(value)
    return found


def _bytes(fields: dict[int, list[int | bytes]], number: int) -> bytes:
    values = fields.get(number) or [b""]
    value = values[-1]
    if not isinstance(value, bytes):
        raise AstError(f"field {number} is not length-delimited")
    return value


def _text(fields: dict[int, list[int | bytes]], number: int) -> str:
    return _bytes(fields, number).decode("utf-8", "replace")


def _int(fields: dict[int, list[int | bytes]], number: int) -> int:
    value = (fields.get(number) or [0])[-1]
    if not isinstance(value, int):
        raise AstError(f"field {number} is not a number")
    return value


def _const(data: bytes) -> Const:
    fields = _message(data)
    if 2 in fields:
        return Const(bool(_int(fields, 2)))
    if 3 in fields:
        raw = _int(fields, 3)
        return Const(raw - (1 << 64) if raw >= 1 << 63 else raw)
    if 4 in fields:
        return Const(_int(fields, 4))
    if 5 in fields:
        return Const(float(struct.unpack("<d", _int(fields, 5).to_bytes(8, "little"))[0]))
    if 6 in fields:
        return Const(_text(fields, 6))
    if 7 in fields:
        return Const(_bytes(fields, 7))
    return Const(None)  # null, or a deprecated duration/timestamp constant


def _node(data: bytes) -> Node:
    fields = _message(data)
    if 3 in fields:
        return _const(_bytes(fields, 3))
    if 4 in fields:
        return Ident(_text(_message(_bytes(fields, 4)), 1))
    if 5 in fields:
        select = _message(_bytes(fields, 5))
        return Select(_node(_bytes(select, 1)), _text(select, 2), bool(_int(select, 3)))
    if 6 in fields:
        call = _message(_bytes(fields, 6))
        target = _node(_bytes(call, 1)) if 1 in call else None
        args = tuple(_node(a) for a in call.get(3, []) if isinstance(a, bytes))
        return Call(_text(call, 2), args, target)
    if 7 in fields:
        listed = _message(_bytes(fields, 7))
        return ListOf(tuple(_node(e) for e in listed.get(1, []) if isinstance(e, bytes)))
    if 8 in fields:
        return MapOf(tuple(_entry(e) for e in _message(_bytes(fields, 8)).get(2, []) if isinstance(e, bytes)))
    if 9 in fields:
        c = _message(_bytes(fields, 9))
        return Comprehension(
            iter_var=_text(c, 1),
            iter_range=_node(_bytes(c, 2)),
            accu_var=_text(c, 3),
            accu_init=_node(_bytes(c, 4)),
            loop_condition=_node(_bytes(c, 5)),
            loop_step=_node(_bytes(c, 6)),
            result=_node(_bytes(c, 7)),
            iter_var2=_text(c, 8),
        )
    raise AstError("an expression node of no known kind")


def _entry(data: bytes) -> tuple[Node, Node]:
    fields = _message(data)
    key: Node = _node(_bytes(fields, 3)) if 3 in fields else Const(_text(fields, 2))
    return key, _node(_bytes(fields, 4))


def decode(serialized: bytes) -> Node:
    """The root node of ``Expression.serialize()``'s bytes; ``AstError`` for anything else
    (a checked expression, another message, bytes this reader does not understand)."""
    envelope = _message(serialized)
    type_url = _text(envelope, 1)
    if type_url.rsplit("/", 1)[-1] != _PARSED_EXPR:
        raise AstError(f"expected a {_PARSED_EXPR}, got {type_url or 'no type'}")
    return _node(_bytes(_message(_bytes(envelope, 2)), 2))


def identifiers(node: Node) -> frozenset[str]:
    """Every identifier the expression names (its variables, comprehension variables too):
    the object's top-level fields it can read are among them."""
    found: set[str] = set()
    stack: list[Node] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Ident):
            found.add(current.name)
        elif isinstance(current, Select):
            stack.append(current.operand)
        elif isinstance(current, Call):
            stack.extend(current.args)
            if current.target is not None:
                stack.append(current.target)
        elif isinstance(current, ListOf):
            stack.extend(current.elements)
        elif isinstance(current, MapOf):
            for key, value in current.entries:
                stack.extend((key, value))
        elif isinstance(current, Comprehension):
            stack.extend(
                (
                    current.iter_range,
                    current.accu_init,
                    current.loop_condition,
                    current.loop_step,
                    current.result,
                )
            )
    return frozenset(found)
