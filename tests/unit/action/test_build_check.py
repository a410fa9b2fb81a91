"""The build's per-file check refuses what a runner will refuse when it loads the file, and
pays for a full load only when a byte search says the syntax check alone cannot tell."""

from __future__ import annotations

from pathlib import Path

import pytest

from action.artifacts import source
from lockgate.artifact import pack
from lockgate.parselimits import DEFAULT, LimitExceeded

BOMBS = Path(__file__).resolve().parents[2] / "data" / "bombs"


@pytest.mark.parametrize(
    ("data", "loads"),
    [
        (b"apiVersion: v1\nkind: ConfigMap\n", False),
        (b"url: https://example.com/?a=1&b=2\n", False),  # an ampersand alone is no anchor
        (b"a: &x 1\nb: *x\n", True),
        (b"---\n" * (DEFAULT.max_documents + 1), True),
        (b"a: " + b"x" * DEFAULT.max_document_bytes, True),
    ],
)
def test_a_full_load_only_when_a_byte_search_cannot_rule_a_bound_out(data: bytes, loads: bool) -> None:
    assert source.needs_loading(data) is loads


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("aliases.yaml", "(limit: aliases)"),
        ("self-list.yaml", "(limit: recursive alias)"),
        ("deep.yaml", "(limit: depth)"),
    ],
)
def test_the_check_refuses_each_bomb(tmp_path: Path, name: str, says: str) -> None:
    (tmp_path / name).write_bytes((BOMBS / name).read_bytes())
    check = source.syntax_check(tmp_path)
    (entry,) = pack.collect(tmp_path)
    with pytest.raises(LimitExceeded) as caught:
        check(entry, (BOMBS / name).read_bytes())
    assert str(caught.value).startswith(str(tmp_path / name) + ":") and says in str(caught.value)


def test_more_documents_than_the_bound_are_refused(tmp_path: Path) -> None:
    (tmp_path / "many.yaml").write_bytes(b"---\na: 1\n" * (DEFAULT.max_documents + 1))
    (entry,) = pack.collect(tmp_path)
    with pytest.raises(LimitExceeded, match=r"more than 100,000 documents in one file \(limit: documents\)"):
        source.syntax_check(tmp_path)(entry, None)
