"""Kubernetes label selectors (``app=web,tier in (a,b),!legacy``), parsed and matched.

Pure. The syntax and meaning are apimachinery's ``labels.Parse``: requirements joined by
commas, each ``key``, ``!key``, ``key=value`` (or ``==``), ``key!=value``, ``key in (...)``,
``key notin (...)``, ``key > N`` or ``key < N``; ``!=`` and ``notin`` also match when the key
is absent; an empty selector matches everything. Keys and values are checked as Kubernetes
checks label keys and values, so a selector refused here is refused by Flux too. Flux's
``target.annotationSelector`` uses the same syntax on annotations (``runner.plan.ignore``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

_TOKEN = re.compile(r"\s*(!=|==|=|!|>|<|\(|\)|,|[^\s!=<>(),]+)")
_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SYMBOLS = frozenset({"!=", "==", "=", ">", "<", "(", ")", ","})
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class SelectorError(ValueError):
    """A selector that does not parse; the message says where and why."""


class Operator(Enum):
    EXISTS = "exists"
    NOT_EXISTS = "!"
    EQUALS = "="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    GREATER = ">"
    LESS = "<"


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        match self.operator:
            case Operator.EXISTS:
                return present
            case Operator.NOT_EXISTS:
                return not present
            case Operator.EQUALS | Operator.IN:
                return present and value in self.values
            case Operator.NOT_EQUALS | Operator.NOT_IN:
                return not present or value not in self.values
            case Operator.GREATER | Operator.LESS:
                if not present or not re.fullmatch(r"-?[0-9]+", value):
                    return False
                number, bound = int(value), int(self.values[0])
                return number > bound if self.operator is Operator.GREATER else number < bound


@dataclass(frozen=True)
class Selector:
    """A parsed selector: every requirement must hold."""

    text: str
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


def _check_key(key: str) -> str:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _PREFIX.match(prefix)):
        raise SelectorError(f"key {key!r}: its prefix must be a DNS subdomain (e.g. example.com/name)")
    if not name or len(name) > 63 or not _NAME.match(name):
        raise SelectorError(
            f"key {key!r}: a name of at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return key


def _check_value(value: str) -> str:
    if len(value) > 63 or not _VALUE.match(value):
        raise SelectorError(
            f"value {value!r}: at most 63 letters, digits, '-', '_' or '.', starting and ending "
            "with a letter or digit"
        )
    return value


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        found = _TOKEN.match(text, position)
        if found is None:  # pragma: no cover - the pattern accepts any non-space character
            raise SelectorError(f"cannot read {text[position:]!r}")
        tokens.append(found.group(1))
        position = found.end()
    return tokens


class _Reader:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, what: str) -> str:
        token = self.peek()
        if token is None:
            raise SelectorError(f"expected {what}, found the end")
        self.at += 1
        return token

    def values(self) -> tuple[str, ...]:
        if self.take("'('") != "(":
            raise SelectorError("expected '(' after in or notin")
        found: list[str] = []
        while True:
            token = self.take("a value or ')'")
            if token == ")" and not found:
                raise SelectorError("in and notin need at least one value")
            if token in (",", ")"):
                found.append("")  # an empty value, as in "key in (a,)"
                if token == ")":
                    return tuple(found)
                continue
            found.append(_check_value(token))
            closing = self.take("',' or ')'")
            if closing == ")":
                return tuple(found)
            if closing != ",":
                raise SelectorError(f"expected ',' or ')', found {closing!r}")


def _requirement(reader: _Reader) -> Requirement:
    token = reader.take("a requirement")
    if token in _SYMBOLS:
        raise SelectorError(f"expected a key, found {token!r}")
    if token == "!":
        return Requirement(_check_key(reader.take("a key after '!'")), Operator.NOT_EXISTS)
    key = _check_key(token)
    following = reader.peek()
    if following is None or following == ",":
        return Requirement(key, Operator.EXISTS)
    reader.take("an operator")
    if following in ("=", "=="):
        return Requirement(key, Operator.EQUALS, (_value_after(reader),))
    if following == "!=":
        return Requirement(key, Operator.NOT_EQUALS, (_value_after(reader),))
    if following in ("in", "notin"):
        return Requirement(key, Operator.IN if following == "in" else Operator.NOT_IN, reader.values())
    if following in (">", "<"):
        bound = reader.take("a number")
        if not re.fullmatch(r"-?[0-9]+", bound):
            raise SelectorError(f"{key} {following} {bound}: expected an integer")
        return Requirement(key, Operator.GREATER if following == ">" else Operator.LESS, (bound,))
    raise SelectorError(f"after key {key!r}: expected =, ==, !=, in, notin, > or <, found {following!r}")


def _value_after(reader: _Reader) -> str:
    token = reader.peek()
    if token is None or token == ",":
        return ""  # "key=" selects the empty value
    return _check_value(reader.take("a value"))


def parse(text: str) -> Selector:
    """The selector ``text``; raises ``SelectorError``."""
    reader = _Reader(_tokens(text))
    requirements: list[Requirement] = []
    while reader.peek() is not None:
        requirements.append(_requirement(reader))
        separator = reader.peek()
        if separator is None:
            break
        reader.take("','")
        if separator != ",":
            raise SelectorError(f"expected ',' between requirements, found {separator!r}")
        if reader.peek() is None:
            raise SelectorError("a requirement is missing after the last ','")
    return Selector(text, tuple(requirements))
