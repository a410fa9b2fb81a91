"""Bash-style variable substitution with the semantics of Flux's postBuild (fluxcd/pkg envsubst).

Pure and shared: the runner applies it per object on the object's YAML text, after loading
and before placement, exactly as kustomize-controller does on each resource. The grammar is
Flux's, not bash's, and its quirks are kept on purpose so that manifests written for Flux
render the same here: only ``${...}`` is substituted (a bare ``$var`` is text), ``$$`` is an
escaped ``$``, ``${var-default}`` is a parse error (Flux reads only ``=``, ``:=``, ``:-`` and
their ``:?``/``:+`` spellings, all as "default when empty"), and lengths and offsets count
UTF-8 bytes as Go does. The scanner below follows the state machine of Flux's
``parse/scan.go`` (a token is read under an *accept* predicate and a *mode*), because the
edge cases of the grammar (escapes inside patterns, nested ``${}`` in arguments) fall out of
it and nowhere else.

Errors carry Flux's own text (``variable not set (strict mode): "X"``, ``bad substitution``,
...) so that users find the same words as in kustomize-controller's conditions.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field

from lockgate.errors import LockgateError

#: Flux's check of the variable names it is given (POSIX classes are ASCII in Go's RE2)
NAME_PATTERN = "^[_[:alpha:]][_[:alpha:][:digit:]]*$"
_NAME = re.compile(r"^[_A-Za-z][_A-Za-z0-9]*\Z")

BAD_SUBSTITUTION = "bad substitution"
MISSING_CLOSING_BRACE = "missing closing brace"
PARSE_VARIABLE_NAME = "unable to parse variable name"
PARSE_FUNC_SUBSTITUTION = "unable to parse substitution within function"
PARSE_DEFAULT_FUNCTION = "unable to parse default function"
VARIABLE_NOT_SET = "variable not set (strict mode)"


class SubstitutionError(LockgateError):
    """A template that does not parse, an undefined variable in strict mode, or a bad name."""

    def __init__(self, message: str, *, variable: str | None = None) -> None:
        super().__init__(message)
        self.variable = variable


# -- the tree ---------------------------------------------------------------------------


@dataclass
class _Text:
    value: str


@dataclass
class _Func:
    param: str = ""
    name: str = ""
    args: list[_Node] = field(default_factory=list)


@dataclass
class _List:
    nodes: list[_Node]


_Node = _Text | _Func | _List
_EMPTY = _Text("")

# -- the scanner ------------------------------------------------------------------------

_EOF = "\0"
_T_ILLEGAL, _T_EOF, _T_IDENT, _T_LBRACK, _T_RBRACK = range(5)
_M_IDENT, _M_LBRACK, _M_RBRACK, _M_ESCAPE = 1, 2, 4, 8
_E_DOLLAR, _E_BACKSLASH = 1, 2
_E_ALL = _E_DOLLAR | _E_BACKSLASH

Accept = Callable[[str, int], bool]


class _Scanner:
    """Positions are in characters; the accept predicates only test ASCII operators at small
    offsets, where characters and Go's bytes coincide."""

    def __init__(self, text: str) -> None:
        self.buf = text
        self.pos = 0
        self.start = 0
        self.width = 0
        self.mode = 0
        self.escapes = 0
        self.accept: Accept = _accept_any

    def read(self) -> str:
        if self.pos >= len(self.buf):
            self.width = 0
            return _EOF
        char = self.buf[self.pos]
        self.width = 1
        self.pos += 1
        return char

    def unread(self) -> None:
        self.pos -= self.width

    def skip(self) -> None:
        self.buf = self.buf[: self.pos - 1] + self.buf[self.pos :]

    def peek(self) -> str:
        char = self.read()
        self.unread()
        return char

    def string(self) -> str:
        return self.buf[self.start : self.pos]

    def scan(self) -> int:
        self.start = self.pos
        char = self.read()
        if char == _EOF:  # as Go: a NUL character ends the text too
            return _T_EOF
        if self._lbrack(char):
            return _T_LBRACK
        if self._rbrack(char):
            return _T_RBRACK
        if self._ident(char):
            return _T_IDENT
        return _T_ILLEGAL

    def _ident(self, char: str) -> bool:
        if not self.mode & _M_IDENT:
            return False
        if self._escaped(char):
            self.skip()
        elif not self.accept(char, self.pos - self.start):
            return False
        while True:
            char = self.read()
            if char == _EOF:
                self.unread()
                break
            if self._lbrack(char):
                self.unread()
                self.unread()
                break
            if self._escaped(char):
                self.skip()
                continue
            if not self.accept(char, self.pos - self.start):
                self.unread()
                break
        return True

    def _lbrack(self, char: str) -> bool:
        if not self.mode & _M_LBRACK or char != "$":
            return False
        if self.read() == "{":
            return True
        self.unread()
        return False

    def _rbrack(self, char: str) -> bool:
        return bool(self.mode & _M_RBRACK) and char == "}"

    def _escaped(self, char: str) -> bool:
        if not self.mode & _M_ESCAPE:
            return False
        if char == "$" and self.escapes & _E_DOLLAR and self.peek() == "$":
            return True
        return char == "\\" and bool(self.escapes & _E_BACKSLASH) and self.peek() in ("/", "\\")


def _accept_any(char: str, at: int) -> bool:
    return True


def _accept_ident(char: str, at: int) -> bool:
    # Go's unicode.IsLetter / IsDigit: the parser takes any letter, the name check is ASCII
    return char == "_" or unicodedata.category(char) in ("Lu", "Ll", "Lt", "Lm", "Lo", "Nd")


def _is(expected: str, at: int | None = None) -> Accept:
    return lambda char, i: char == expected and (at is None or i == at)


def _below3(*chars: str) -> Accept:
    return lambda char, i: char in chars and i < 3


def _accept_default(char: str, at: int) -> bool:
    return (at == 1 and char == ":") or (at == 2 and char in "=-?+")


def _accept_replace(char: str, at: int) -> bool:
    return (at == 1 and char == "/") or (at == 2 and char in "/#%")


def _not(*chars: str) -> Accept:
    return lambda char, i: char not in chars


# -- the parser -------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = _Scanner(text)

    def any(self) -> _Node:
        s = self.s
        s.accept, s.mode, s.escapes = _accept_any, _M_IDENT | _M_LBRACK | _M_ESCAPE, _E_DOLLAR
        token = s.scan()
        if token == _T_EOF:
            return _EMPTY
        if token == _T_IDENT:
            left: _Node = _Text(s.string())
        elif token == _T_LBRACK:
            left = self.func()
        else:
            raise SubstitutionError(BAD_SUBSTITUTION)
        right = self.any()
        return left if right is _EMPTY else _List([left, right])

    def func(self) -> _Node:
        s = self.s
        s.escapes = _E_ALL
        if s.peek() == "#":
            return self.length()
        s.accept, s.mode = _accept_ident, _M_IDENT
        if s.scan() != _T_IDENT:
            raise SubstitutionError(PARSE_VARIABLE_NAME)
        name = s.string()
        following = s.peek()
        if following == ":":
            s.read()
            after = s.peek()
            s.unread()
            return self.default(name) if after in ("=", "-", "?", "+") else self.substr(name)
        if following == "=":
            return self.default(name)
        if following in (",", "^"):
            return self.operator(name, _below3(",", "^"), with_arg=False)
        if following == "/":
            return self.replace(name)
        if following == "#":
            return self.operator(name, _below3("#"), with_arg=True)
        if following == "%":
            return self.operator(name, _below3("%"), with_arg=True)
        s.accept, s.mode = _accept_ident, _M_RBRACK
        if s.scan() != _T_RBRACK:
            raise SubstitutionError(MISSING_CLOSING_BRACE)
        return _Func(param=name)

    def param(self, accept: Accept, mode: int) -> _Node:
        s = self.s
        s.accept, s.mode = accept, mode | _M_LBRACK
        token = s.scan()
        if token == _T_LBRACK:
            return self.func()
        if token in (_T_IDENT, _T_RBRACK):
            return _Text(s.string())
        raise SubstitutionError(PARSE_FUNC_SUBSTITUTION)

    def _operator_name(self, node: _Func, accept: Accept, error: str) -> None:
        s = self.s
        s.accept, s.mode = accept, _M_IDENT
        if s.scan() != _T_IDENT:
            raise SubstitutionError(error)
        node.name = s.string()

    def substr(self, name: str) -> _Node:
        s = self.s
        node = _Func(param=name)
        self._operator_name(node, _is(":", 1), BAD_SUBSTITUTION)
        node.args.append(self.param(_not(":", "}"), _M_IDENT))
        s.accept, s.mode = _is(":"), _M_IDENT | _M_RBRACK
        token = s.scan()
        if token == _T_RBRACK:
            return node
        if token != _T_IDENT:
            raise SubstitutionError(BAD_SUBSTITUTION)
        node.args.append(self.param(_not("}"), _M_IDENT))
        self.close()
        return node

    def operator(self, name: str, accept: Accept, *, with_arg: bool) -> _Node:
        node = _Func(param=name)
        self._operator_name(node, accept, BAD_SUBSTITUTION)
        if with_arg:
            node.args.append(self.param(_not("}"), _M_IDENT))
        self.close()
        return node

    def replace(self, name: str) -> _Node:
        s = self.s
        node = _Func(param=name)
        self._operator_name(node, _accept_replace, BAD_SUBSTITUTION)
        node.args.append(self.param(_not("/"), _M_IDENT | _M_ESCAPE))
        s.accept, s.mode = _is("/"), _M_IDENT
        if s.scan() != _T_IDENT:
            raise SubstitutionError(BAD_SUBSTITUTION)
        if s.peek() != "}":
            node.args.append(self.param(_not("}"), _M_IDENT | _M_ESCAPE))
        self.close()
        return node

    def default(self, name: str) -> _Node:
        s = self.s
        node = _Func(param=name)
        accept = _is("=", 1) if s.peek() == "=" else _accept_default
        self._operator_name(node, accept, PARSE_DEFAULT_FUNCTION)
        while s.peek() != "}":
            node.args.append(self.param(_not("}"), _M_IDENT))
        self.close()
        return node

    def length(self) -> _Node:
        s = self.s
        node = _Func()
        self._operator_name(node, _is("#", 1), BAD_SUBSTITUTION)
        s.accept, s.mode = _accept_ident, _M_IDENT
        if s.scan() != _T_IDENT:
            raise SubstitutionError(BAD_SUBSTITUTION)
        node.param = s.string()
        self.close()
        return node

    def close(self) -> None:
        self.s.mode = _M_RBRACK
        if self.s.scan() != _T_RBRACK:
            raise SubstitutionError(BAD_SUBSTITUTION)


# -- the functions ----------------------------------------------------------------------


def _bytes(value: str) -> bytes:
    return value.encode("utf-8", "surrogateescape")


def _text(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")


def _go_atoi(text: str) -> int | None:
    return int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else None


def _substr(value: str, args: list[str]) -> str:
    data = _bytes(value)
    pos = _go_atoi(args[0])
    if pos is None:
        return value
    if pos < 0:
        pos = max(len(data) + pos, 0)
    if len(args) == 1:
        return _text(data[pos:]) if pos < len(data) else ""
    length = _go_atoi(args[1])
    if length is None:
        return value
    if length < 0:  # envsubst v1.7.1 (the pinned flux): counts back from the end, as bash
        end = len(data) + length
        return "" if end < pos else _text(data[pos:end])
    if pos + length >= len(data):
        return _text(data[pos:]) if pos < len(data) else ""
    return _text(data[pos : pos + length])


def _upper(value: str) -> str:
    """Go maps rune by rune: a character without a one-rune case mapping (ß) stays."""
    return "".join(c.upper() if len(c.upper()) == 1 else c for c in value)


def _lower(value: str) -> str:
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in value)


def _first(value: str, change: Callable[[str], str]) -> str:
    return change(value[0]) + value[1:] if value else value


def _trim(value: str, pattern: str, *, longest: bool) -> str:
    """Strip the shortest or longest prefix matching a glob (Flux's path.Match)."""
    data = _bytes(value)
    best: bytes | None = None
    for i in range(len(data)):
        candidate = data[: len(data) - i]
        try:
            matched = _match(_bytes(pattern), candidate)
        except _BadPattern:
            return value
        if matched:
            if longest:
                return _text(data[len(candidate) :])
            best = candidate
    if best:
        return _text(data[len(best) :])
    return value


def _suffix(value: str, pattern: str, *, longest: bool) -> str:
    return _trim(value[::-1], pattern[::-1], longest=longest)[::-1]


def _apply(name: str, value: str, args: list[str]) -> str:
    if name == ",":
        return _first(value, _lower)
    if name == ",,":
        return _lower(value)
    if name == "^":
        return _first(value, _upper)
    if name == "^^":
        return _upper(value)
    if name == "#":
        return str(len(_bytes(value))) if not args else _trim(value, args[0], longest=False)
    if name in ("##", "%", "%%"):
        if not args:
            return value
        if name == "##":
            return _trim(value, args[0], longest=True)
        return _suffix(value, args[0], longest=name == "%%")
    if name == ":":
        return _substr(value, args) if args else value
    if name in ("/", "//"):
        if not args:
            return value
        return value.replace(args[0], args[1] if len(args) > 1 else "", 1 if name == "/" else -1)
    if name == "/#":
        if len(args) == 2 and value.startswith(args[0]):
            return value.replace(args[0], args[1], 1)
        return value
    if name == "/%":
        if len(args) == 2 and value.endswith(args[0]):
            return value[: len(value) - len(args[0])] + args[1]
        return value
    # the default operators and a plain ${var}: the joined arguments when the value is empty
    return "".join(args) if not value and args else value


_DEFAULT_OPERATORS = frozenset({"-", "+", "=", "?", ":-", ":+", ":=", ":?"})


# -- glob matching (Go's path.Match, on bytes) ------------------------------------------


class _BadPattern(Exception):
    pass


def _scan_chunk(pattern: bytes) -> tuple[bool, bytes, bytes]:
    star = False
    while pattern[:1] == b"*":
        pattern = pattern[1:]
        star = True
    in_range = False
    i = 0
    while i < len(pattern):
        char = pattern[i : i + 1]
        if char == b"\\":
            if i + 1 < len(pattern):
                i += 1
        elif char == b"[":
            in_range = True
        elif char == b"]":
            in_range = False
        elif char == b"*" and not in_range:
            break
        i += 1
    return star, pattern[:i], pattern[i:]


def _rune(data: bytes) -> tuple[int, int]:
    """Decode one rune as Go's utf8.DecodeRune: (rune, width); invalid bytes give (0xFFFD, 1)."""
    for width in (1, 2, 3, 4):
        try:
            return ord(data[:width].decode("utf-8")), width
        except UnicodeDecodeError:
            continue
    return 0xFFFD, 1


def _escape(chunk: bytes) -> tuple[int, bytes]:
    if not chunk or chunk[:1] in (b"-", b"]"):
        raise _BadPattern
    if chunk[:1] == b"\\":
        chunk = chunk[1:]
        if not chunk:
            raise _BadPattern
    rune, width = _rune(chunk)
    if rune == 0xFFFD and width == 1:
        raise _BadPattern
    rest = chunk[width:]
    if not rest:
        raise _BadPattern
    return rune, rest


def _match_chunk(chunk: bytes, s: bytes) -> tuple[bytes, bool]:
    while chunk:
        if not s:
            return s, False
        head = chunk[:1]
        if head == b"[":
            rune, width = _rune(s)
            s = s[width:]
            chunk = chunk[1:]
            negated = chunk[:1] == b"^"
            if negated:
                chunk = chunk[1:]
            matched = False
            ranges = 0
            while True:
                if chunk[:1] == b"]" and ranges > 0:
                    chunk = chunk[1:]
                    break
                low, chunk = _escape(chunk)
                high = low
                if chunk[:1] == b"-":
                    high, chunk = _escape(chunk[1:])
                if low <= rune <= high:
                    matched = True
                ranges += 1
            if matched == negated:
                return s, False
        elif head == b"?":
            _, width = _rune(s)
            s = s[width:]
            chunk = chunk[1:]
        else:
            if head == b"\\":
                chunk = chunk[1:]
                if not chunk:
                    raise _BadPattern
            if chunk[:1] != s[:1]:
                return s, False
            s = s[1:]
            chunk = chunk[1:]
    return s, True


def _match(pattern: bytes, name: bytes) -> bool:
    while pattern:
        star, chunk, pattern = _scan_chunk(pattern)
        if star and not chunk:
            return True
        rest, ok = _match_chunk(chunk, name)
        if ok and (not rest or pattern):
            name = rest
            continue
        if star:
            found = False
            for i in range(len(name)):
                rest, ok = _match_chunk(chunk, name[i + 1 :])
                if ok:
                    if not pattern and rest:
                        continue
                    name = rest
                    found = True
                    break
            if found:
                continue
        return False
    return not name


# -- evaluation -------------------------------------------------------------------------

Lookup = Callable[[str], "str | None"]


def _eval(node: _Node, lookup: Lookup, out: list[str]) -> None:
    if isinstance(node, _Text):
        out.append(node.value)
    elif isinstance(node, _List):
        for child in node.nodes:
            _eval(child, lookup, out)
    else:
        args = []
        for arg in node.args:
            parts: list[str] = []
            _eval(arg, lookup, parts)
            args.append("".join(parts))
        value = lookup(node.param)
        if value is None and node.name not in _DEFAULT_OPERATORS:
            raise SubstitutionError(f'{VARIABLE_NOT_SET}: "{node.param}"', variable=node.param)
        out.append(_apply(node.name, value or "", args))


def evaluate(template: str, variables: Mapping[str, str], *, strict: bool = True) -> str:
    """Substitute ``${...}`` in ``template``; in strict mode an unset variable without a
    default operator fails, otherwise it counts as empty (Flux's two modes)."""
    tree = _Parser(template).any()
    out: list[str] = []
    _eval(tree, (lambda name: variables.get(name)) if strict else (lambda name: variables.get(name, "")), out)
    return "".join(out)


def evaluate_marked(
    template: str, variables: Mapping[str, str], secret: Set[str]
) -> tuple[str, list[tuple[int, int]]]:
    """``evaluate`` in strict mode, and where in the output a ``secret`` variable went.

    The spans are ``(start, end)`` offsets of every ``${...}`` whose value read one of the
    ``secret`` names, in its own name or in an argument (``${A:-${SECRET}}``), so what a
    substitution derived from a secret (``${TOKEN^^}``, ``${TOKEN:0:8}``) is marked too.
    """
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    read: list[str] = []

    def lookup(name: str) -> str | None:
        read.append(name)
        return variables.get(name)

    pending: list[_Node] = [_Parser(template).any()]
    while pending:
        node = pending.pop()
        if isinstance(node, _List):
            pending.extend(reversed(node.nodes))
            continue
        read.clear()
        parts: list[str] = []
        _eval(node, lookup, parts)
        text = "".join(parts)
        if text and any(name in secret for name in read):
            spans.append((length, length + len(text)))
        out.append(text)
        length += len(text)
    return "".join(out), spans


def check_names(variables: Mapping[str, str]) -> None:
    """Flux validates every given name before substituting anything."""
    for name in variables:
        if not _NAME.match(name):
            raise SubstitutionError(
                f"'{name}' var name is invalid, must match '{NAME_PATTERN}'", variable=name
            )


def clean_value(value: str) -> str:
    """Flux strips every newline from a variable's value when it loads it."""
    return value.replace("\n", "")
