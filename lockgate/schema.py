"""A JSON Schema and a markdown reference, rendered from ``lockgate.model`` declarations.

The schema (draft 2020-12) is for editors and linters (yaml-language-server, check-jsonschema);
lockgate itself validates with ``lockgate.model.decode``, from the same declarations, so
what the schema says and what lockgate accepts are one thing. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

from lockgate import model

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _type_schema(tp: Any, meta: model.Meta | None, defs: dict[str, Any]) -> dict[str, Any]:
    if meta is not None and meta.reference:
        return _type_schema(model.LocalObjectReference, None, defs)
    tp = model.strip_optional(tp)
    origin = get_origin(tp)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        _define(tp, defs)
        ref = {"$ref": f"#/$defs/{tp.__name__}"}
        short = model.shorthand(tp)
        if short is None:
            return ref
        inner = next(f for f in model.fields(tp) if f.meta.name == short)
        return {"oneOf": [_type_schema(inner.type, inner.meta, defs), ref]}
    if origin is tuple:
        return {"type": "array", "items": _type_schema(get_args(tp)[0], meta, defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type_schema(get_args(tp)[1], None, defs)}
    if origin is Literal:
        choices = list(get_args(tp))
        return {"const": choices[0]} if len(choices) == 1 else {"type": "string", "enum": choices}
    if meta is not None and meta.duration:
        return {"type": "string", "pattern": model.DURATION_PATTERN}
    found: dict[str, Any] = {"type": {bool: "boolean", int: "integer", float: "number", str: "string"}[tp]}
    if meta is not None:
        for key, value in (
            ("minimum", meta.minimum),
            ("exclusiveMinimum", meta.exclusive_minimum),
            ("maximum", meta.maximum),
            ("pattern", meta.pattern),
            ("maxLength", meta.max_length),
        ):
            if value is not None:
                found[key] = value
    return found


def _yaml_default(f: model.FieldInfo) -> Any:
    """The default as it would be written in YAML; None when there is nothing to show."""
    value = f.default
    if value is None or f.meta.required or dataclasses.is_dataclass(value) or value in ((), {}):
        return None
    return model.format_duration(value) if f.meta.duration else value


def _define(cls: type, defs: dict[str, Any]) -> None:
    if cls.__name__ in defs:
        return
    defs[cls.__name__] = {}  # a placeholder against recursion
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in model.fields(cls):
        prop = {"description": f.meta.doc, **_type_schema(f.type, f.meta, defs)}
        default = _yaml_default(f)
        if default is not None:
            prop["default"] = default
        properties[f.meta.name] = prop
        if f.meta.required:
            required.append(f.meta.name)
    body: dict[str, Any] = {
        "type": "object",
        "description": _doc(cls),
        "additionalProperties": False,
        "properties": properties,
    }
    if required:
        body["required"] = required
    defs[cls.__name__] = body


def _doc(cls: type) -> str:
    return " ".join((cls.__doc__ or "").split())


def json_schema(roots: Sequence[type], *, schema_id: str, title: str, description: str) -> dict[str, Any]:
    """A schema accepting any one document of the ``roots`` kinds (``oneOf``)."""
    defs: dict[str, Any] = {}
    for root in roots:
        _define(root, defs)
    return {
        "$schema": DRAFT,
        "$id": schema_id,
        "title": title,
        "description": description,
        "oneOf": [{"$ref": f"#/$defs/{root.__name__}"} for root in roots],
        "$defs": dict(sorted(defs.items())),
    }


def dumps(schema: dict[str, Any]) -> str:
    """The checked-in form: two-space indent, a final newline."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class Row:
    path: str
    type: str
    default: str
    doc: str


def _type_name(tp: Any, meta: model.Meta | None) -> str:
    tp = model.strip_optional(tp)
    origin = get_origin(tp)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        short = model.shorthand(tp)
        return f"object (or {short} as a string)" if short else "object"
    if origin is tuple:
        return f"list of {_type_name(get_args(tp)[0], meta)}"
    if origin is dict:
        return f"map of string to {_type_name(get_args(tp)[1], None)}"
    if origin is Literal:
        return " \\| ".join(f"`{c}`" for c in get_args(tp))
    if meta is not None and meta.duration:
        return "duration"
    return {bool: "boolean", int: "integer", float: "number", str: "string"}[tp]


def rows(cls: type, prefix: str = "") -> list[Row]:
    """One row per field, nested objects flattened (``spec.verify.secretRef.name``,
    ``spec.healthChecks[].kind``)."""
    found: list[Row] = []
    for f in model.fields(cls):
        path = f"{prefix}{f.meta.name}"
        default = _yaml_default(f)
        shown = "required" if f.meta.required else ("" if default is None else f"`{json.dumps(default)}`")
        found.append(Row(path, _type_name(model.target(f), f.meta), shown, f.meta.doc))
        inner = model.strip_optional(model.target(f))
        if get_origin(inner) is tuple:
            inner, path = get_args(inner)[0], f"{path}[]"
        if dataclasses.is_dataclass(inner) and isinstance(inner, type):
            found.extend(rows(inner, f"{path}."))
    return found


def markdown_table(cls: type, prefix: str = "") -> str:
    lines = ["| Field | Type | Default | Description |", "|---|---|---|---|"]
    for row in rows(cls, prefix):
        doc = row.doc.replace("|", "\\|")
        lines.append(f"| `{row.path}` | {row.type} | {row.default} | {doc} |")
    return "\n".join(lines) + "\n"
