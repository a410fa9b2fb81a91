"""``lockgate.terminal``: the one escape of every human-readable output."""

from __future__ import annotations

import pytest

from lockgate import terminal

CASES = [
    ("plain", "web-1 v1.2.3 ok", "web-1 v1.2.3 ok"),
    ("osc title", "\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),
    ("csi 7-bit", "\x1b[2J\x1b[31m", "\\x1b[2J\\x1b[31m"),
    ("csi c1", "\x9b31m", "\\x9b31m"),
    ("del", "a\x7fb", "a\\x7fb"),
    ("bidi override", "\u202eevil", "\\u202eevil"),
    ("zero width joiner", "a\u200db", "a\\u200db"),
    ("line separator", "a\u2028b", "a\\u2028b"),
    ("unicode letters stay", "Grüße 日本 ✓", "Grüße 日本 ✓"),
]


@pytest.mark.parametrize(("name", "text", "want"), CASES, ids=[c[0] for c in CASES])
def test_shown_escapes_what_is_not_printable(name: str, text: str, want: str) -> None:
    assert terminal.shown(text) == want
    assert terminal.lines(text) == want


def test_shown_is_one_line_and_lines_keeps_the_layout() -> None:
    assert terminal.shown("a\nb\tc\r") == "a\\nb\\tc\\r"
    assert terminal.lines("a\n\tb\r\n\x1b[Kc") == "a\n\tb\\r\n\\x1b[Kc"


def test_shown_cuts_after_escaping() -> None:
    assert terminal.shown("\x1b" * 10, limit=8) == "\\x1b\\x1…"
    assert terminal.shown("short", limit=8) == "short"


def test_echo_escapes(capsys: pytest.CaptureFixture[str]) -> None:
    terminal.echo("rev \x1b]0;t\x07\nnext")
    terminal.echo("\x9b", err=True)
    out, err = capsys.readouterr()
    assert out == "rev \\x1b]0;t\\x07\nnext\n"
    assert err == "\\x9b\n"
