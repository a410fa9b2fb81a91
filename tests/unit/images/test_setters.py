"""Setter rewriting: golden files (only marked scalars change) and a property test."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from action.images import setters, yamlvalues
from action.images.setters import ProblemKind

DATA = Path(__file__).parents[2] / "data" / "setters"
DIGEST = "sha256:" + "a" * 64
SETTERS = setters.Setters(
    values={
        **setters.Setters.for_policy(
            "apps:podinfo", image="ghcr.io/stefanprodan/podinfo", tag="6.5.0", digest=DIGEST
        ),
        **setters.Setters.for_policy("apps:redis", image="docker.io/library/redis", tag="7.2.4"),
        **setters.Setters.for_policy("apps:numeric", image="registry.example.com/numeric", tag="1.10"),
    },
    skipped={"other:thing": (ProblemKind.OUT_OF_SCOPE, "policy is outside namespace 'apps'")},
)
CASES = sorted(path.name.removesuffix(".in.yaml") for path in DATA.glob("*.in.yaml"))


def test_golden_cases_exist() -> None:
    assert {
        "block_scalars",
        "flow_style",
        "crlf",
        "comments",
        "multi_doc",
        "kustomization",
        "helm_values",
    } <= set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_golden(case: str) -> None:
    original = (DATA / f"{case}.in.yaml").read_bytes()
    expected = (DATA / f"{case}.out.yaml").read_bytes()
    result = setters.rewrite(f"{case}.yaml", original, SETTERS)
    assert result.updated == expected
    assert result.changed is (original != expected)


def test_crlf_fixture_really_has_crlf() -> None:
    data = (DATA / "crlf.in.yaml").read_bytes()
    assert data.count(b"\r\n") == data.count(b"\n") > 5


def test_changes_name_file_object_setter_and_values() -> None:
    result = setters.rewrite("multi.yaml", (DATA / "multi_doc.in.yaml").read_bytes(), SETTERS)
    assert [(c.object.kind, c.object.name, c.setter, c.old, c.new, c.line) for c in result.changes] == [
        (
            "Deployment",
            "podinfo",
            "apps:podinfo",
            "ghcr.io/stefanprodan/podinfo:6.0.0",
            f"ghcr.io/stefanprodan/podinfo:6.5.0@{DIGEST}",
            19,
        ),
        (
            "Deployment",
            "redis",
            "apps:redis",
            "docker.io/library/redis:7.0.0",
            "docker.io/library/redis:7.2.4",
            33,
        ),
    ]
    assert result.changes[0].object.namespace == "apps"


def test_unknown_policy_is_reported_and_the_file_untouched() -> None:
    result = setters.rewrite("u.yaml", (DATA / "unknown_policy.in.yaml").read_bytes(), SETTERS)
    assert not result.changed and not result.changes
    assert [(p.kind, p.setter, p.line) for p in result.problems] == [
        (ProblemKind.UNKNOWN_POLICY, "apps:missing", 2)
    ]


def test_out_of_scope_marker_is_skipped_and_reported() -> None:
    result = setters.rewrite("c.yaml", (DATA / "comments.in.yaml").read_bytes(), SETTERS)
    kinds = {p.kind for p in result.problems}
    assert ProblemKind.OUT_OF_SCOPE in kinds and result.changed


def test_marker_like_comment_that_is_not_json_is_reported() -> None:
    result = setters.rewrite("c.yaml", (DATA / "comments.in.yaml").read_bytes(), SETTERS)
    assert [p.line for p in result.problems if p.kind is ProblemKind.NOT_A_MARKER] == [19]


def test_file_without_token_is_never_parsed() -> None:
    data = b"not: [valid yaml\n"
    result = setters.rewrite("x.yaml", data, SETTERS)
    assert result.updated == data and not result.problems


def test_unparsable_file_is_reported_and_skipped() -> None:
    data = b'image: a:1 # {"$imagepolicy": "apps:redis"}\nbad: [unclosed\n'
    result = setters.rewrite("bad.yaml", data, SETTERS)
    assert result.updated == data
    assert [p.kind for p in result.problems] == [ProblemKind.UNPARSABLE]


def test_not_utf8_is_reported_and_skipped() -> None:
    data = b'image: a:1 # {"$imagepolicy": "apps:redis"}\nx: \xff\n'
    assert setters.rewrite("b.yaml", data, SETTERS).problems[0].kind is ProblemKind.UNPARSABLE


def test_marker_on_block_scalar_is_unsupported_not_rewritten() -> None:
    data = b'image: | # {"$imagepolicy": "apps:redis"}\n  docker.io/library/redis:7.0.0\n'
    result = setters.rewrite("b.yaml", data, SETTERS)
    assert not result.changed and result.problems[0].kind is ProblemKind.UNSUPPORTED


def test_digest_marker_without_digest_is_skipped_not_blanked() -> None:
    data = b'digest: sha256:1 # {"$imagepolicy": "apps:redis:digest"}\n'
    result = setters.rewrite("d.yaml", data, SETTERS)
    assert not result.changed and result.problems[0].kind is ProblemKind.NO_VALUE


def test_mapping_keys_are_never_setters() -> None:
    data = b'? a:1 # {"$imagepolicy": "apps:redis"}\n: value\n'
    assert not setters.rewrite("k.yaml", data, SETTERS).changed


def test_head_comment_must_be_a_single_line() -> None:
    data = b'args:\n  # first line\n  # {"$imagepolicy": "apps:redis:tag"}\n  - 1.0.0\n'
    assert not setters.rewrite("h.yaml", data, SETTERS).changed


def test_empty_policy_name_is_not_a_marker_but_is_reported() -> None:
    data = b'image: a:1 # {"$imagepolicy": ""}\n'
    result = setters.rewrite("e.yaml", data, SETTERS)
    assert not result.changed
    assert [p.kind for p in result.problems] == [ProblemKind.NOT_A_MARKER]


YAML11_NON_STRINGS = [
    "1.10",
    "10",
    "0x1F",
    "017",
    "1e3",
    "1_000",
    "yes",
    "Y",
    "off",
    "~",
    ".inf",
    "-0b101",
    "+1",
]
YAML11_STRINGS = ["6.5.0", "v1.10", "latest", "1.0-rc", "0x", "2001-12-14", "0b2", "main-1e3", ""]


@pytest.mark.parametrize("value", YAML11_NON_STRINGS)
def test_values_quoted_when_plain_would_not_be_a_string(value: str) -> None:
    assert yamlvalues.render(value, style=None) == f'"{value}"'


@pytest.mark.parametrize("value", [v for v in YAML11_STRINGS if v])
def test_values_kept_plain_when_they_read_back_as_strings(value: str) -> None:
    assert yamlvalues.render(value, style=None) == value


# --- property: only the marked values change --------------------------------------------

POLICIES = {"apps:redis": "7.2.4", "apps:podinfo": "6.5.0", "apps:numeric": "1.10"}
words = st.text(alphabet="abcxyz0123456789.-/:", min_size=1, max_size=12).filter(
    lambda s: not yamlvalues.needs_quotes(s)
)
styles = st.sampled_from(["plain", "single", "double"])
comments = st.sampled_from(["", "  # just a comment", " # {}", ' #{"other": "x"}'])


def _spell(value: str, style: str) -> str:
    return {"plain": value, "single": f"'{value}'", "double": f'"{value}"'}[style]


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, list[str], dict[int, tuple[str, str, str]]]:
    """A values file of mapping entries and sequence items, some marked (line or head comment).

    Returns the text, the expected values in document order, and for each marked line
    the old spelling, the new value and the style.
    """
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    lines: list[str] = ["# generated", "items:"]
    expected: list[str] = []
    marked: dict[int, tuple[str, str, str]] = {}
    for i in range(draw(st.integers(1, 12))):
        value, style = draw(words), draw(styles)
        policy = draw(st.sampled_from([None, *sorted(POLICIES)]))
        spelled = _spell(value, style)
        as_item = draw(st.booleans())
        if as_item:
            lines.append(f"  - list{i}:")
            prefix = "    - "
        else:
            prefix = f"  - key{i}: "
        if policy is None:
            lines.append(f"{prefix}{spelled}{draw(comments)}")
            expected.append(value)
            continue
        marker = f'{{"$imagepolicy": "{policy}:tag"}}'
        if as_item and draw(st.booleans()):
            lines.append(f"    # {marker}")
            lines.append(f"{prefix}{spelled}")
        else:
            lines.append(f"{prefix}{spelled} # {marker}")
        expected.append(POLICIES[policy])
        marked[len(lines) - 1] = (spelled, POLICIES[policy], style)
    return newline.join(lines) + newline, expected, marked


def _scalars(node: object) -> list[str]:
    if isinstance(node, dict):
        return [s for value in node.values() for s in _scalars(value)]
    if isinstance(node, list):
        return [s for item in node for s in _scalars(item)]
    return [str(node)]


@settings(max_examples=150, deadline=None)
@given(doc=documents())
def test_only_marked_values_change(doc: tuple[str, list[str], dict[int, tuple[str, str, str]]]) -> None:
    text, expected, marked = doc
    newline = "\r\n" if "\r\n" in text else "\n"
    result = setters.rewrite("p.yaml", text.encode(), SETTERS)
    new_text = result.updated.decode()
    # BaseLoader: every scalar as its text (YAML 1.1 would read a plain 1:0 as the integer 60)
    assert _scalars(yaml.load(new_text, Loader=yaml.BaseLoader)["items"]) == expected
    old_lines, new_lines = text.split(newline), new_text.split(newline)
    assert len(old_lines) == len(new_lines)
    for number, (old, new) in enumerate(zip(old_lines, new_lines, strict=True)):
        if number not in marked:
            assert old == new
            continue
        spelled, value, style = marked[number]
        quote = {"plain": None, "single": "'", "double": '"'}[style]
        # the value is what stands last before the marker: a value spelled like the key's tail
        # (key2: y2) or like part of the marker (a) is replaced there, not where it first appears
        head, marker, comment = old.partition(" # {")
        before, _, after = head.rpartition(spelled)
        assert new == before + yamlvalues.render(value, style=quote) + after + marker + comment
    assert len(result.changes) == sum(
        1 for spelled, value, _ in marked.values() if spelled.strip("'\"") != value
    )
