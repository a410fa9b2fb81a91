"""The checked-in JSON Schema and configuration reference are what the model renders today."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.pipeline import schema

ROOT = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize(
    ("path", "render"),
    [(schema.SCHEMA_FILE, schema.config_schema), (schema.REFERENCE_FILE, schema.reference)],
)
def test_the_checked_in_file_is_current(path: Path, render: object) -> None:
    assert callable(render)
    checked_in = (ROOT / path).read_text(encoding="utf-8")
    assert checked_in == render(), f"{path} is stale: run `{schema.COMMAND}` from the repository root"


def test_the_schema_describes_both_kinds_strictly() -> None:
    doc = json.loads(schema.config_schema())
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert doc["oneOf"] == [{"$ref": "#/$defs/SyncDocument"}, {"$ref": "#/$defs/RunnerDocument"}]
    spec = doc["$defs"]["SyncSpec"]
    assert spec["required"] == ["url", "interval"]
    assert all(d["additionalProperties"] is False for d in doc["$defs"].values())
    assert spec["properties"]["driftInterval"]["default"] == "1h"
    assert spec["properties"]["verify"]["$ref"] == "#/$defs/Verify"
    assert doc["$defs"]["Verify"]["properties"]["secretRef"]["$ref"] == "#/$defs/LocalObjectReference"
    assert doc["$defs"]["SyncDocument"]["properties"]["kind"]["const"] == "Sync"


def test_main_writes_both_files(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    assert schema.main([str(tmp_path)]) == 0
    assert (tmp_path / schema.SCHEMA_FILE).read_text() == schema.config_schema()
    assert (tmp_path / schema.REFERENCE_FILE).read_text() == schema.reference()
