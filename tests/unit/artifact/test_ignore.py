"""Ignore rules in .gitignore syntax: Flux's defaults, anchoring, negation, directories, domains."""

from __future__ import annotations

import pytest

from lockgate.artifact import ignore


@pytest.mark.parametrize(
    ("path", "is_dir", "ignored"),
    [
        (".git", True, True),
        ("sub/.git", True, True),
        (".git", False, False),  # .git/ matches directories only
        ("logo.png", False, True),
        ("deep/dir/chart.tar.gz", False, True),
        ("app.yaml", False, False),
        (".gitignore", False, True),
    ],
)
def test_flux_defaults(path: str, is_dir: bool, ignored: bool) -> None:
    assert ignore.Matcher.default().ignored(path, is_dir) is ignored


@pytest.mark.parametrize(
    ("patterns", "path", "ignored"),
    [
        (["/top.yaml"], "top.yaml", True),
        (["/top.yaml"], "sub/top.yaml", False),
        (["docs/*.md"], "docs/a.md", True),
        (["docs/*.md"], "docs/x/a.md", False),
        (["**/tmp"], "a/b/tmp", True),
        (["a/**/z.yaml"], "a/z.yaml", True),
        (["a/**/z.yaml"], "a/b/c/z.yaml", True),
        (["*.yaml", "!keep.yaml"], "keep.yaml", False),
        (["*.yaml", "!keep.yaml"], "drop.yaml", True),
        (["file?.yml"], "file1.yml", True),
        (["file[0-9].yml"], "fileA.yml", False),
        (["# comment", "", "  "], "x", False),
        (["\\#hash"], "#hash", True),
    ],
)
def test_gitignore_syntax(patterns: list[str], path: str, ignored: bool) -> None:
    assert ignore.Matcher(ignore.parse_lines(patterns)).ignored(path, False) is ignored


def test_ignore_paths_are_added_to_the_defaults_and_split_on_commas() -> None:
    matcher = ignore.Matcher.default(["*.md,secret/"])
    assert matcher.ignored("README.md", False)
    assert matcher.ignored("secret", True)
    assert matcher.ignored("x.png", False)


def test_sourceignore_patterns_apply_inside_their_directory_only() -> None:
    matcher = ignore.Matcher(ignore.parse_lines(["*.txt", "/local.yaml"], domain="apps/web"))
    assert matcher.ignored("apps/web/notes.txt", False)
    assert matcher.ignored("apps/web/local.yaml", False)
    assert not matcher.ignored("apps/web/sub/local.yaml", False)
    assert not matcher.ignored("other/notes.txt", False)
