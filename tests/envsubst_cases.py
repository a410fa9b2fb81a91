"""The shared table of postBuild substitution cases (tests/data/envsubst/cases.yaml), read by the
engine's unit test and by the test that runs the same table through the pinned flux CLI."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

TABLE = Path(__file__).parent / "data" / "envsubst" / "cases.yaml"


@dataclass(frozen=True)
class Case:
    name: str
    template: str
    vars: dict[str, str]
    out: str | None
    error: str | None


def cases() -> list[Case]:
    rows = yaml.safe_load(TABLE.read_text())
    return [
        Case(
            name=row["name"],
            template=row["template"],
            vars={str(k): str(v) for k, v in row["vars"].items()},
            out=row.get("out"),
            error=row.get("error"),
        )
        for row in rows
    ]
