"""Text for a terminal: what others wrote is shown, never obeyed.

Pure. Much of what lockgate prints was written by someone else: an inventory's revision,
source and messages (a tenant can write its ApplySet parent Secret), an object's status,
an attestation's cluster name, a server's error. Printed raw, an ``ESC ] 0 ; ... BEL`` sets
the terminal's title, a CSI sequence moves the cursor or rewrites lines already shown, and
some terminals answer queries by typing into the shell (the class of CVE-2021-25743, which
kubectl fixed by escaping). So every human-readable output goes through ``shown`` (one
value, one line) or ``lines`` (text of several lines that lockgate composed): a character
that is not printable (``str.isprintable``: C0 and C1 controls, DEL, bidi overrides and
other format characters, line and paragraph separators) is written as its Python escape
(``\\x1b``, ``\\x9b``, ``\\u202e``). JSON output needs none of it (JSON escapes by itself),
and stays exact. ``echo`` is ``click.echo`` through ``lines``.
"""

from __future__ import annotations

from typing import Any

import click

#: what ``lines`` keeps as it is: the line breaks and tabs of text we composed
_LAYOUT = frozenset("\n\t")


def _escaped(char: str) -> str:
    return repr(char)[1:-1]


def shown(text: str, *, limit: int | None = None) -> str:
    """``text`` as one line safe for a terminal (a newline too is escaped), cut to ``limit``."""
    safe = text if text.isprintable() else "".join(c if c.isprintable() else _escaped(c) for c in text)
    return safe if limit is None or len(safe) <= limit else safe[: limit - 1] + "…"


def lines(text: str) -> str:
    """``text`` of several lines safe for a terminal: line breaks and tabs kept, every other
    character that is not printable escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in _LAYOUT else _escaped(c) for c in text)


def echo(message: Any = "", *, err: bool = False, nl: bool = True) -> None:
    """``click.echo`` of human-readable text, escaped by ``lines``."""
    click.echo(lines(str(message)), err=err, nl=nl)
