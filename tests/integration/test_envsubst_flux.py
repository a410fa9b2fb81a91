"""The shared substitution table through the pinned ``flux envsubst --strict``: every row's output
or error must be exactly what lockgate.envsubst gives (tests/unit/test_envsubst.py).

The CLI reads stdin line by line and prints each line with a newline; its variables are the
process environment, so each row runs with exactly its own variables and nothing else.
"""

from __future__ import annotations

import subprocess

import pytest

from lockgate import envsubst
from tests.envsubst_cases import Case, cases
from tests.world.binaries import binary

pytestmark = pytest.mark.world


def _flux(case: Case) -> tuple[int, str, str]:
    done = subprocess.run(
        [str(binary("flux")), "envsubst", "--strict"],
        input=case.template.encode(),
        env=case.vars,
        capture_output=True,
        timeout=60,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


@pytest.mark.parametrize("case", cases(), ids=lambda case: case.name)
def test_flux_agrees(case: Case) -> None:
    code, out, err = _flux(case)
    try:
        ours: str | None = envsubst.evaluate(case.template, case.vars)
        our_error = None
    except envsubst.SubstitutionError as exc:
        ours, our_error = None, str(exc)
    if our_error is None:
        assert (code, out) == (0, f"{ours}\n")
        assert ours == case.out
    else:
        assert code != 0, out
        assert err.strip() == f"✗ {our_error}"
        assert our_error == case.error
