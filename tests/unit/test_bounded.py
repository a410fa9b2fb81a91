"""Bounded parsing: bombs are refused as read, naming the file, the document and the bound;
what real manifests do (a few aliases, merge keys, tags, depth) still loads as before."""

from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest

from lockgate import bounded, fastyaml, located, manifests, parselimits
from lockgate.errors import ExitCode, UsageError
from lockgate.parselimits import LimitExceeded, Limits

BOMBS = Path(__file__).resolve().parents[1] / "data" / "bombs"


def _bomb(levels: int, fanout: int = 10) -> str:
    lines = ["a0: &a0 [" + ",".join(['"lol"'] * fanout) + "]"]
    for level in range(1, levels + 1):
        lines.append(f"a{level}: &a{level} [" + ",".join([f"*a{level - 1}"] * fanout) + "]")
    return "\n".join(lines) + "\n"


def test_the_alias_bomb_is_refused_at_once_without_expanding_it() -> None:
    text = (BOMBS / "aliases.yaml").read_text()
    assert len(text) < 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    with pytest.raises(LimitExceeded) as caught:
        manifests.load_text(text, "apps/bomb.yaml")
    assert time.monotonic() - started < 0.5
    # memory stays flat: nothing was expanded (10^9 strings would be tens of gigabytes)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 20_000
    message = str(caught.value)
    assert message.startswith("apps/bomb.yaml:2: document 1: aliases would expand it to 1,234,567,919 nodes")
    assert "(limit: aliases)" in message and caught.value.limit == "aliases"
    assert caught.value.exit_code == ExitCode.RENDER


def test_a_list_holding_itself_is_refused() -> None:
    with pytest.raises(LimitExceeded, match=r"^self\.yaml:6: document 1: alias \*list is inside its own"):
        manifests.load_text((BOMBS / "self-list.yaml").read_text(), "self.yaml")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param((BOMBS / "deep.yaml").read_text(), id="flow"),
        pytest.param("".join("  " * i + f"k{i}:\n" for i in range(300)), id="block"),
        # block and flow apart stay under libyaml's count; together they are too deep
        pytest.param(
            "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "x: " + "[" * 100 + "]" * 100,
            id="mixed",
        ),
        pytest.param(
            "".join(f"{'  ' * i}- k{i}:\n" for i in range(0)) + "a:\n" + "- " * 300 + "x\n",
            id="compact-sequences",
        ),
    ],
)
def test_nesting_deeper_than_the_bound_is_refused(text: str) -> None:
    with pytest.raises(
        LimitExceeded, match=r"^deep\.yaml:\d+: .*nests deeper than 256 levels .*\(limit: depth\)"
    ):
        manifests.parse_documents(text, "deep.yaml")


def test_nesting_up_to_the_bound_loads() -> None:
    text = "".join("  " * i + f"k{i}:\n" for i in range(255)) + "  " * 255 + "leaf: 1\n"
    ((_, doc),) = manifests.parse_documents(text, "ok.yaml")
    for i in range(255):
        doc = doc[f"k{i}"]
    assert doc == {"leaf": 1}


def test_a_few_aliases_load_as_before() -> None:
    # what real manifests do: share a block of labels or a container spec a few times
    text = "labels: &l {app: web, tier: front}\nmetadata: {labels: *l}\nselector: {matchLabels: *l}\n"
    ((_, doc),) = manifests.parse_documents(text, "ok.yaml")
    assert doc["selector"]["matchLabels"] == {"app": "web", "tier": "front"}


def test_the_alias_rule_is_go_yaml_s() -> None:
    # 2 levels of 10: 1,220 of 1,237 nodes come from aliases, 98.6%: allowed
    assert manifests.parse_documents(_bomb(2), "ok.yaml")
    # 3 levels: 12,330 of 12,349, 99.8%: over the 99% a document of this size may take
    with pytest.raises(LimitExceeded, match=r"12,349 nodes, 12,330 of them from aliases \(more than 99%"):
        manifests.parse_documents(_bomb(3), "bomb.yaml")
    assert not parselimits.excessive_aliasing(1000, 990)
    assert parselimits.excessive_aliasing(1001, 992)
    assert parselimits.allowed_alias_ratio(4_000_000) == pytest.approx(0.10)


def test_the_full_loader_path_is_bounded_too() -> None:
    # a tag hands the document to PyYAML's loader; it is scanned against the bounds first
    with pytest.raises(LimitExceeded, match=r"^t\.yaml:1: document 1: aliases would expand"):
        manifests.parse_documents("tagged: !!str x\n" + _bomb(9), "t.yaml")
    with pytest.raises(LimitExceeded, match="inside its own anchor"):
        manifests.parse_documents("tagged: !!str x\nself: &s [*s]\n", "t.yaml")
    with pytest.raises(LimitExceeded, match="limit: depth"):
        manifests.parse_documents(
            "tagged: !!str x\n" + "".join("  " * i + f"k{i}:\n" for i in range(300)), "t.yaml"
        )
    # merge keys still load (and are counted as aliases)
    ((_, doc),) = manifests.parse_documents("b: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n", "m.yaml")
    assert doc["d"] == {"x": 1, "y": 2}


def test_sizes_and_counts_are_bounded() -> None:
    small = Limits(max_document_bytes=100, max_documents=3, max_bytes=1000)
    with pytest.raises(
        LimitExceeded, match=r"^f\.yaml:3: document 2: the document is 128 characters, over the 100"
    ):
        manifests.parse_documents("a: 1\n---\nb: " + "x" * 120 + "\n", "f.yaml", limits=small)
    with pytest.raises(
        LimitExceeded, match=r"document 4: more than 3 documents in one file \(limit: documents\)"
    ):
        manifests.parse_documents("a: 1\n---\nb: 2\n---\nc: 3\n---\nd: 4\n", "f.yaml", limits=small)
    with pytest.raises(LimitExceeded, match=r"^f\.yaml: 1,001 characters is over the 1,000 allowed"):
        manifests.parse_documents("a: " + "x" * 998, "f.yaml", limits=small)


def test_a_file_over_the_size_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    (tmp_path / "big.yaml").write_text("a: " + "x" * 2000 + "\n")
    with pytest.raises(LimitExceeded, match=r"^big\.yaml: 2,004 bytes is over the 1,000 allowed in one file"):
        manifests.load([tmp_path], relative_to=tmp_path, limits=Limits(max_bytes=1000))


def test_unbounded_limits_let_everything_through() -> None:
    docs = fastyaml.load_documents(_bomb(4), Limits.unbounded())
    assert docs[0][1]["a4"][0][0][0][0] == ["lol"] * 10


def test_configuration_files_are_bounded_as_usage_errors() -> None:
    with pytest.raises(LimitExceeded) as caught:
        located.documents((BOMBS / "aliases.yaml").read_text(), "syncs.yaml")
    assert caught.value.exit_code == ExitCode.USAGE
    assert str(caught.value).startswith("syncs.yaml:2: document 1: aliases would expand")
    with pytest.raises(UsageError, match=r"syncs\.yaml:2:1: invalid YAML"):
        located.documents("a: [\n", "syncs.yaml")


def test_scan_leaves_malformed_yaml_to_the_caller_when_asked() -> None:
    import yaml

    with pytest.raises(yaml.YAMLError):
        bounded.scan_yaml("a: [1\n", "", error=None)
    with pytest.raises(LimitExceeded, match=r"^line 1: document 1: aliases"):
        bounded.scan_yaml(_bomb(9), "", error=None)


def test_json_is_bounded_in_size_and_depth() -> None:
    assert bounded.json_value(b'{"a": [1, {"b": 2}]}', "doc", max_bytes=100) == {"a": [1, {"b": 2}]}
    with pytest.raises(LimitExceeded, match=r"^hook: 101 bytes is over the 100 allowed \(limit: size\)"):
        bounded.json_value(b" " * 101, "hook", max_bytes=100)
    for depth in (300, 100_000):  # under and over what Python's own decoder survives
        with pytest.raises(LimitExceeded, match=r"^hook: nests deeper than 256 levels .*\(limit: depth\)"):
            bounded.json_value("[" * depth + "]" * depth, "hook", max_bytes=1 << 20)
    assert bounded.json_value("[" * 256 + "]" * 256, "doc", max_bytes=1 << 20) is not None
    with pytest.raises(ValueError):
        bounded.json_value("{", "doc", max_bytes=100)
