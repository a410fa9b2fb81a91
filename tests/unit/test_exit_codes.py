"""The README's exit-code table, ``lockgate.errors.ExitCode`` and what the docs say about codes agree.

``tests/integration/test_exit_codes.py`` provokes each row's cause in every command; this
checks the words around it: the table has one row per ``ExitCode`` with that class's word,
every other exit-code table in the docs gives a code the README's class, and prose that names
a cause with a code (``an unreachable registry ... (exit code 4)``) names the cause's code.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lockgate.errors import ExitCode

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: the word each class's row starts with
CLASS_WORDS = {
    ExitCode.OK: "success",
    ExitCode.FAILURE: "generic",
    ExitCode.USAGE: "usage",
    ExitCode.AUTH: "authentication",
    ExitCode.VERIFICATION: "verification",
    ExitCode.APPLY: "apply",
    ExitCode.HEALTH: "health",
    ExitCode.RESOLVE: "resolve",
    ExitCode.RENDER: "render",
    ExitCode.REGISTRY: "registry",
    ExitCode.PARTIAL: "partial",
    ExitCode.CLUSTER: "cluster",
    ExitCode.ABANDONED: "abandoned",
    ExitCode.NOT_IMPLEMENTED: "not",
}

#: causes whose class is fixed, wherever they are met (the integration test provokes each)
CAUSES = {
    r"unreachable registry|registry (?:is )?unreachable|cannot reach (?:the )?registry": ExitCode.REGISTRY,
    r"\bno (?:verification )?policy\b|missing (?:verification )?policy": ExitCode.USAGE,
    r"(?:tag|digest) (?:that )?(?:does not exist|not found)|missing tag|no such tag": ExitCode.RESOLVE,
    r"\binterrupted\b": ExitCode.ABANDONED,
}
_CODE = re.compile(r"\bexit(?:s| code| codes)? (\d+)\b")


def readme_table() -> dict[int, str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("### Exit codes", 1)[1].split("\n#", 1)[0]
    return {
        int(code): meaning for code, meaning in re.findall(r"^\|\s*(\d+)\s*\|\s*(.+?)\s*\|$", section, re.M)
    }


def _tables(text: str) -> list[dict[int, str]]:
    """Every exit-code table of a page: a header ``| code | ... |``, then ``| N | meaning |`` rows."""
    found: list[dict[int, str]] = []
    current: dict[int, str] | None = None
    for line in text.splitlines():
        if re.match(r"^\|\s*code\s*\|", line):
            current = {}
            found.append(current)
        elif current is not None and line.startswith("|"):
            row = re.match(r"^\|\s*(\d+)\s*\|\s*(.+?)\s*\|$", line)
            if row:
                current[int(row.group(1))] = row.group(2)
        else:
            current = None
    return found


def _sentences(text: str) -> list[str]:
    """The prose of a page, a sentence at a time (code blocks and tables left out)."""
    prose, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and not line.startswith("|"):
            prose.append(line.strip())
    joined = " ".join(prose)
    return re.split(r"(?<=[.;])\s+(?=[A-Z`(*])", joined)


def test_the_table_has_one_row_per_class_in_its_words() -> None:
    table = readme_table()
    assert sorted(table) == sorted(int(code) for code in ExitCode)
    wrong = {
        code: meaning
        for code, meaning in table.items()
        if not meaning.lower().startswith(CLASS_WORDS[ExitCode(code)])
    }
    assert wrong == {}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_exit_code_table_gives_the_readme_class(page: Path) -> None:
    classes = {code: CLASS_WORDS[ExitCode(code)] for code in readme_table()}
    wrong = []
    for table in _tables(page.read_text()):
        for code, meaning in table.items():
            first = meaning.lower().lstrip("`*")
            if code not in classes:
                wrong.append(f"{code}: not in the README's table ({meaning})")
            elif (
                code >= 2 and not first.startswith(classes[code]) and classes[code] not in first.split(":")[0]
            ):
                wrong.append(f"{code}: {meaning!r} is not the README's class {classes[code]!r}")
            for cause, expected in CAUSES.items():
                if re.search(cause, meaning, re.I) and code != expected:
                    wrong.append(f"{code}: {meaning!r} names a cause of exit {int(expected)}")
    assert wrong == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_cause_named_with_a_code_gets_its_class_code(page: Path) -> None:
    wrong = []
    for sentence in _sentences(page.read_text()):
        for cause, expected in CAUSES.items():
            for match in re.finditer(cause, sentence, re.I):
                code = _CODE.search(sentence, match.end())
                if code is not None and int(code.group(1)) != expected:
                    wrong.append(
                        f"{match.group(0)!r} said to exit {code.group(1)}, not {int(expected)}: {sentence}"
                    )
    assert wrong == []
