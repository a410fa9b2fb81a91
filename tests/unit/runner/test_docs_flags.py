"""docs/runner.md's table of ``lockgate reconcile`` flags names every flag the command takes.

A flag missing from the table is one a new user cannot find (the GitLab pins and
``--verify-signed-repository`` were); a row naming a flag the command lacks is one that fails.
``--X[-Y]`` in a row stands for ``--X`` and ``--X-Y``.
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from runner.cli import reconcile

ROOT = Path(__file__).resolve().parents[3]


def _documented() -> set[str]:
    text = (ROOT / "docs" / "runner.md").read_text()
    rows = [line for line in text.split("## Sync documents", 1)[0].splitlines() if line.startswith("| `--")]
    named: set[str] = set()
    for row in rows:
        cell = row.split(" | ", 1)[0]
        for flag, optional in re.findall(r"(--[a-z][a-z0-9-]*)(\[-[a-z-]+\])?", cell):
            named.add(flag)
            if optional:
                named.add(flag + optional[1:-1])
    return named


def test_every_reconcile_flag_is_in_the_table_and_no_other() -> None:
    taken = {
        opt
        for param in reconcile.params
        if isinstance(param, click.Option)
        for opt in param.opts
        if opt.startswith("--") and opt != "--help"
    }
    documented = _documented()
    assert sorted(taken - documented) == [], "flags docs/runner.md's table lacks"
    assert sorted(documented - taken) == [], "flags in the table reconcile does not take"
