"""The generic validator: dataclasses declared with ``attr`` decode YAML and name every problem."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import pytest

from lockgate import located, model, schema
from lockgate.errors import UsageError
from lockgate.model import attr


@dataclass(frozen=True)
class Ref:
    """A thing by name."""

    __shorthand__: ClassVar[str] = "name"
    name: str = attr("name", "Its name.", required=True)


@dataclass(frozen=True)
class Inner:
    """Nested settings."""

    colour: Literal["red", "green"] = attr("colour", "A colour.", default="red")
    secret: str | None = attr("secretRef", "A Secret.", reference=True)


@dataclass(frozen=True)
class Thing:
    """A test kind."""

    name: str = attr("name", "Required.", required=True, pattern=r"^[a-z]+$", max_length=8)
    count: int = attr("count", "An integer.", default=1, minimum=1)
    share: float = attr("share", "A share.", default=0.5, exclusive_minimum=0, maximum=1)
    enabled: bool = attr("enabled", "A boolean.", default=False)
    every: float = attr("every", "A duration.", default=300.0, duration=True)
    refs: tuple[Ref, ...] = attr("refs", "Names or {name: ...}.", factory=tuple)
    inner: Inner = attr("inner", "Nested.", factory=Inner)


def _decode(text: str) -> tuple[Thing | None, list[str]]:
    (doc,) = located.documents(text, "f.yaml")
    problems = model.Problems(doc, "Thing/x")
    return model.decode(Thing, doc.value, problems), problems.messages


def test_a_valid_document_decodes_with_defaults_and_shorthands() -> None:
    thing, messages = _decode(
        "name: abc\nevery: 1h30m\nrefs: [a, {name: b}]\ninner: {colour: green, secretRef: {name: s}}\n"
    )
    assert messages == []
    assert thing == Thing(
        name="abc", every=5400.0, refs=(Ref("a"), Ref("b")), inner=Inner(colour="green", secret="s")
    )
    assert _decode("name: abc\ncount: null\n")[0] == Thing(name="abc")  # null means unset


#: name: (document after ``name: abc``, the one expected message)
CASES = {
    "unknown_field_did_you_mean": (
        "cuont: 2\n",
        "f.yaml:2: Thing/x: cuont: unknown field; did you mean count?",
    ),
    "unknown_field_lists_the_known": (
        "zzz: 1\n",
        "f.yaml:2: Thing/x: zzz: unknown field; "
        "known fields: name, count, share, enabled, every, refs, inner",
    ),
    "nested_unknown_field": (
        "inner:\n  colur: red\n",
        "f.yaml:3: Thing/x: inner.colur: unknown field; did you mean colour?",
    ),
    "reference_unknown_field": (
        "inner: {secretRef: {nmae: s}}\n",
        "f.yaml:2: Thing/x: inner.secretRef.nmae: unknown field; did you mean name?",
    ),
    "integer_not_string": ("count: '2'\n", "f.yaml:2: Thing/x: count: expected an integer, got a string"),
    "integer_not_boolean": ("count: true\n", "f.yaml:2: Thing/x: count: expected an integer, got a boolean"),
    "boolean_not_string": (
        "enabled: 'yes'\n",
        "f.yaml:2: Thing/x: enabled: expected a boolean, got a string",
    ),
    "minimum": ("count: 0\n", "f.yaml:2: Thing/x: count: must be at least 1, got 0"),
    "exclusive_minimum": ("share: 0\n", "f.yaml:2: Thing/x: share: must be more than 0, got 0"),
    "maximum": ("share: 1.5\n", "f.yaml:2: Thing/x: share: must be at most 1, got 1.5"),
    "duration_not_number": (
        "every: 5\n",
        "f.yaml:2: Thing/x: every: expected a duration such as 30s, 5m or 1h30m, got a number",
    ),
    "duration_malformed": (
        "every: 5 minutes\n",
        "f.yaml:2: Thing/x: every: invalid duration '5 minutes': expected e.g. 30s, 5m, 1h30m",
    ),
    "choice": (
        "inner: {colour: blue}\n",
        "f.yaml:2: Thing/x: inner.colour: expected one of red, green; got 'blue'",
    ),
    "list_not_mapping": ("refs: a\n", "f.yaml:2: Thing/x: refs: expected a list, got a string"),
    "list_item_required": ("refs:\n- {}\n", "f.yaml:3: Thing/x: refs[0].name: required field is missing"),
    "mapping_not_list": ("inner: [1]\n", "f.yaml:2: Thing/x: inner: expected a mapping, got a list"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_problem_names_line_document_and_field(case: str) -> None:
    text, expected = CASES[case]
    thing, messages = _decode("name: abc\n" + text)
    assert (thing, messages) == (None, [expected])


def test_required_and_pattern_problems() -> None:
    assert _decode("count: 2\n")[1] == ["f.yaml:1: Thing/x: name: required field is missing"]
    assert _decode("name: ABC\n")[1] == ["f.yaml:1: Thing/x: name: 'ABC' does not match ^[a-z]+$"]
    assert _decode("name: abcdefghi\n")[1] == ["f.yaml:1: Thing/x: name: at most 8 characters, got 9"]


def test_every_problem_of_a_document_is_reported_and_raised_together() -> None:
    _, messages = _decode("name: abc\ncount: x\nenabled: 1\n")
    assert len(messages) == 2
    with pytest.raises(UsageError) as caught:
        model.raise_all(messages)
    assert caught.value.message.splitlines() == ["2 problems:", *(f"  {m}" for m in messages)]


def test_a_key_written_twice_and_invalid_yaml_are_usage_errors() -> None:
    with pytest.raises(
        UsageError, match=r"^f.yaml:3: a.b: written twice in one mapping \(first at line 2\)$"
    ):
        located.documents("a:\n  b: 1\n  b: 2\n", "f.yaml")
    with pytest.raises(UsageError, match=r"^f.yaml:2:1: invalid YAML"):
        located.documents("a: [1\n", "f.yaml")


def test_documents_keep_start_lines_and_skip_empty_ones() -> None:
    docs = located.documents("---\n---\na: 1\n---\n# only a comment\n---\nb: [x, y]\n", "f.yaml")
    assert [(d.line, d.value) for d in docs] == [(3, {"a": 1}), (7, {"b": ["x", "y"]})]
    assert docs[1].line_of(("b", 1)) == 7 and docs[1].line_of(("missing",)) == 7


@pytest.mark.parametrize(
    ("seconds", "text"), [(3600, "1h"), (90, "1m30s"), (300, "5m"), (0, "0s"), (1.5, "1.5s")]
)
def test_format_duration_round_trips(seconds: float, text: str) -> None:
    assert model.format_duration(seconds) == text
    assert model.parse_duration(text) == seconds


def test_the_schema_follows_the_declarations() -> None:
    doc = schema.json_schema([Thing], schema_id="urn:x", title="t", description="d")
    thing = doc["$defs"]["Thing"]
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert thing["additionalProperties"] is False and thing["required"] == ["name"]
    props = thing["properties"]
    assert props["name"] == {
        "description": "Required.",
        "type": "string",
        "pattern": "^[a-z]+$",
        "maxLength": 8,
    }
    assert props["every"]["default"] == "5m" and props["every"]["type"] == "string"
    assert props["share"]["exclusiveMinimum"] == 0 and props["share"]["maximum"] == 1
    assert props["refs"]["items"] == {"oneOf": [{"type": "string"}, {"$ref": "#/$defs/Ref"}]}
    assert doc["$defs"]["Inner"]["properties"]["colour"]["enum"] == ["red", "green"]
    assert doc["$defs"]["Inner"]["properties"]["secretRef"]["$ref"] == "#/$defs/LocalObjectReference"


def test_the_reference_table_flattens_nested_fields() -> None:
    paths = [row.path for row in schema.rows(Thing, "spec.")]
    assert "spec.refs[].name" in paths and "spec.inner.secretRef.name" in paths
    assert '| `spec.every` | duration | `"5m"` | A duration. |' in schema.markdown_table(Thing, "spec.")
