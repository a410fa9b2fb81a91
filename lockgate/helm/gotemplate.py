"""The actions of a Go ``text/template`` (Helm's template language), as Go's lexer splits them.

Pure. A template is text with actions between ``{{`` and ``}}``; ``{{-`` and ``-}}`` trim the
space around them, ``{{/* ... */}}`` is a comment, and inside an action a ``}}`` within a
quoted string, a raw (backquoted) string or a character constant ends nothing. Each action
comes out as its tokens, with the line each starts on, so a caller can tell a call of the
function ``lookup`` (a bare identifier) from the field ``.Values.lookup``, the variable
``$lookup``, the string ``"lookup"`` or a comment that mentions it, which a text search cannot.

Only what deciding "which functions and named templates does this file call" needs is
lexed; a template Go's lexer refuses (an unclosed action or string, a comment running into
the action) is a ``TemplateSyntaxError`` naming the file and line, as Helm would refuse it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

LEFT = "{{"
RIGHT = "}}"
_SPACE = " \t\r\n"
_KEYWORDS = frozenset(
    {"block", "break", "continue", "define", "else", "end", "if", "range", "template", "with", "nil"}
)


class TemplateSyntaxError(ValueError):
    """The template cannot be lexed; ``line`` is where the bad action or string starts."""

    def __init__(self, file: str, line: int, problem: str) -> None:
        super().__init__(f"{file}:{line}: {problem}")
        self.file = file
        self.line = line
        self.problem = problem


class Kind(Enum):
    IDENTIFIER = "identifier"  # a function name: lookup, include, tpl
    KEYWORD = "keyword"  # define, template, end...
    FIELD = "field"  # .Values.x (one token per .name)
    VARIABLE = "variable"  # $x
    STRING = "string"  # "..." or `...`, unquoted in ``value``
    OTHER = "other"  # numbers, characters, punctuation


@dataclass(frozen=True)
class Token:
    kind: Kind
    value: str
    line: int


@dataclass(frozen=True)
class Action:
    """One ``{{ ... }}`` (never a comment): its tokens and the line it starts on."""

    line: int
    tokens: tuple[Token, ...]

    @property
    def keyword(self) -> str | None:
        """The keyword the action starts with (``define``, ``end``...), if any."""
        first = self.tokens[0] if self.tokens else None
        return first.value if first is not None and first.kind is Kind.KEYWORD else None


def actions(text: str, file: str) -> list[Action]:
    """Every action of ``text`` in order, comments left out."""
    found: list[Action] = []
    position, line = 0, 1  # ``line`` is the line ``position`` is on
    while True:
        start = text.find(LEFT, position)
        if start < 0:
            return found
        line += text.count("\n", position, start)
        inner = start + len(LEFT)
        if text.startswith("-", inner) and text[inner + 1 : inner + 2] in tuple(_SPACE):
            inner += 2  # a left trim marker, "{{- ": a comment may only start right after it
        if text.startswith("/*", inner):
            position = _comment_end(text, inner, file, line)
        else:
            tokens, position = _action(text, inner, file, line)
            if tokens:
                found.append(Action(line, tuple(tokens)))
        line += text.count("\n", start, position)


def _comment_end(text: str, inner: int, file: str, line: int) -> int:
    """The index after a comment's closing delimiter: ``*/`` then ``}}`` or `` -}}`` at once."""
    close = text.find("*/", inner + 2)
    if close < 0:
        raise TemplateSyntaxError(file, line, "unclosed comment")
    end = _right_delimiter(text, close + 2)
    if end is None:
        raise TemplateSyntaxError(file, line, "comment ends before closing delimiter")
    return end


def _right_delimiter(text: str, index: int) -> int | None:
    """The index after ``}}`` (or `` -}}``) when one starts at ``index``, else None."""
    if text.startswith(RIGHT, index):
        return index + len(RIGHT)
    if index < len(text) and text[index] in _SPACE and text.startswith("-" + RIGHT, index + 1):
        return index + 1 + len("-" + RIGHT)
    return None


#: one token of an action; space stops before a right trim marker (" -}}")
_TOKEN = re.compile(
    r"""(?P<end>\}\}|[ \t\r\n]-\}\})
    |(?P<space>(?:[ \t\r\n](?!-\}\}))+)
    |(?P<string>"(?:[^"\\\n]|\\[^\n])*")
    |(?P<raw>`[^`]*`)
    |(?P<char>'(?:[^'\\\n]|\\[^\n])*')
    |(?P<field>\.\w+)
    |(?P<variable>\$\w*)
    |(?P<word>\w+)
    |(?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
_UNTERMINATED = {
    '"': "unterminated quoted string",
    "`": "unterminated raw quoted string",
    "'": "unterminated character constant",
}


def _action(text: str, index: int, file: str, line: int) -> tuple[list[Token], int]:
    """The tokens of the action whose body starts at ``index``, and the index after its ``}}``."""
    tokens: list[Token] = []
    here = line
    for found in _TOKEN.finditer(text, index):  # contiguous: "other" matches any character
        kind, value = found.lastgroup, found.group()
        if kind == "end":
            return tokens, found.end()
        if kind == "space":
            here += value.count("\n")
        elif kind == "word":
            tokens.append(Token(_kind_of(value), value, here))
        elif kind == "field":
            tokens.append(Token(Kind.FIELD, value[1:], here))
        elif kind == "string":
            tokens.append(Token(Kind.STRING, _unquote(value[1:-1]), here))
        elif kind == "variable":
            tokens.append(Token(Kind.VARIABLE, value[1:], here))
        elif kind == "raw":
            tokens.append(Token(Kind.STRING, value[1:-1], here))
            here += value.count("\n")
        elif kind == "char":
            tokens.append(Token(Kind.OTHER, "'", here))
        elif value in _UNTERMINATED:
            raise TemplateSyntaxError(file, here, _UNTERMINATED[value])
        else:
            tokens.append(Token(Kind.OTHER, value, here))
    raise TemplateSyntaxError(file, line, "unclosed action")


def _kind_of(word: str) -> Kind:
    if word[0].isdigit():
        return Kind.OTHER
    return Kind.KEYWORD if word in _KEYWORDS else Kind.IDENTIFIER


_ESCAPE = re.compile(r"\\(.)")


def _unquote(body: str) -> str:
    """A quoted string's text, each escape taken as the character after it (enough for names)."""
    return _ESCAPE.sub(r"\1", body) if "\\" in body else body
