"""The fast loader builds exactly what ``SafeLoader`` builds, or hands over to it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from lockgate import fastyaml, manifests
from lockgate.errors import RenderError


def _reference(text: str) -> list[tuple[int, Any]]:
    loader = yaml.SafeLoader(text)
    docs: list[tuple[int, Any]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                docs.append((node.start_mark.line + 1, loader.construct_document(node)))
    finally:
        loader.dispose()
    return docs


SAME = {
    "plain object": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n",
    "implicit scalars": "a: 1\nb: 1.5\nc: true\nd: yes\ne: off\nf: ~\ng: null\nh:\ni: 0x1f\nj: 0o17\nk: -3\n"
    "l: .inf\nm: 2024-01-02\nn: 2024-01-02T03:04:05Z\no: 1_000\np: 1:30\nq: +12\n",
    "quoted scalars keep strings": "a: '1'\nb: \"true\"\nc: 'null'\nd: ''\n",
    "non-specific tag is a string": "a: ! 12\n",
    "documents and lines": "# head\n---\na: 1\n---\n\n# c\nb: 2\n...\n---\n- x\n- y\n",
    "empty documents": "---\n---\na: 1\n---\n",
    "scalar document": "--- hello\n--- 42\n",
    "anchors and aliases": "a: &x {p: 1, q: [1, 2]}\nb: *x\nc: &s str\nd: *s\n",
    "anchors reset per document": "a: &x 1\n---\na: &x 2\nb: *x\n",
    "nested flow and block": "a: [1, {b: [c, d]}, [e]]\nf: {g: h}\n",
    "block scalars": "a: |\n  line one\n  line two\nb: >-\n  folded\n  text\n",
    "duplicate keys keep the last": "a: 1\na: 2\n",
    "non-string keys": "1: one\n2.5: two\ntrue: three\n~: four\n",
    "unicode": 'name: caf\u00e9\nemoji: "\\u263a"\n',
    "empty": "",
    "only comments": "# nothing\n",
}


@pytest.mark.parametrize("text", SAME.values(), ids=list(SAME))
def test_builds_what_safe_loader_builds(text: str) -> None:
    assert fastyaml.load_documents(text) == _reference(text)


def test_alias_is_the_same_object() -> None:
    ((_, doc),) = fastyaml.load_documents("a: &x [1]\nb: *x\n")
    assert doc["a"] is doc["b"]


HANDED_OVER = {
    "explicit tag": "a: !!str 1\n",
    "custom tag": "a: !thing x\n",
    "merge key": "base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n",
    "unhashable key": "? [1, 2]\n: x\n",
    "unknown alias": "a: *nope\n",
    "duplicate anchor": "a: &x 1\nb: &x 2\n",
    "binary": "a: !!binary aGVsbG8=\n",
    "set": "s: !!set {a, b}\n",
}


@pytest.mark.parametrize("text", HANDED_OVER.values(), ids=list(HANDED_OVER))
def test_hands_over_what_it_does_not_handle(text: str) -> None:
    with pytest.raises(fastyaml.Unsupported):
        fastyaml.load_documents(text)


@pytest.mark.parametrize(
    "text", [t for n, t in HANDED_OVER.items() if n in ("explicit tag", "merge key", "binary", "set")]
)
def test_manifests_fall_back_to_the_full_loader(text: str) -> None:
    assert manifests.parse_documents(text, "x.yaml") == _reference(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: *nope\n", r"x\.yaml:1:4: invalid YAML: found undefined alias"),
        ("a: [1, 2\n", r"x\.yaml:2:1: invalid YAML: did not find expected ',' or ']'"),
        ("? [1, 2]\n: x\n", r"x\.yaml:1:3: invalid YAML: found unhashable key"),
        ("a: !thing x\n", r"x\.yaml:1:4: invalid YAML: could not determine a constructor"),
    ],
)
def test_errors_keep_line_and_column(text: str, message: str) -> None:
    with pytest.raises(RenderError, match=message):
        manifests.parse_documents(text, "x.yaml")
