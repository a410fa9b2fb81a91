"""Every third-party action and base image the project ships or shows is pinned by digest.

A tag can be moved by whoever controls the upstream repository (or steals its token); a
commit SHA or a sha256 digest cannot. So each ``uses:`` of a third-party action (workflows,
action.yml, the act test workflows, the examples in the docs) names a full 40-hex commit with
its release tag in a comment, and each image the Containerfile builds FROM, or a manifest under
deploy/ runs, carries a ``@sha256:`` digest. First-party references (``lockgate-dev/lockgate``,
the lockgate image) are by release tag: their digests exist only once a release is cut, and a
user's overlay pins them (deploy/README.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY_ACTIONS = ("lockgate-dev/lockgate", "./")
FIRST_PARTY_IMAGES = ("lockgate", "ghcr.io/lockgate-dev/lockgate", "$LOCKGATE_IMAGE")
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*([^\s#]+)(.*)$")
PINNED_ACTION = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
TAG_COMMENT = re.compile(r"^\s+#\s+v\d+(\.\d+)*\S*\s*$")
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def _action_files() -> list[Path]:
    files = [ROOT / "action.yml", ROOT / "README.md"]
    for pattern in ("workflows/**/*.yml", ".github/workflows/*.yml", "tests/data/act/*.yml", "docs/*.md"):
        files += sorted(ROOT.glob(pattern))
    return files


def _uses() -> list[tuple[str, str, str]]:
    """``(where, reference, rest of the line)`` of every ``uses:``."""
    found = []
    for path in _action_files():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = USES.match(line)
            if match:
                found.append((f"{path.relative_to(ROOT)}:{number}", match[1].strip("'\""), match[2]))
    return found


def test_third_party_actions_are_pinned_to_a_commit_with_the_tag_in_a_comment() -> None:
    uses = _uses()
    assert any(ref.startswith("actions/checkout@") for _, ref, _ in uses), "no action found: the scan is off"
    unpinned = [
        f"{where}: {ref}{rest}"
        for where, ref, rest in uses
        if not ref.startswith(FIRST_PARTY_ACTIONS)
        and not (PINNED_ACTION.match(ref) and TAG_COMMENT.match(rest))
    ]
    assert not unpinned, "pin these to a release's commit SHA, its tag in a comment:\n" + "\n".join(unpinned)


def test_one_commit_per_action_and_tag_everywhere() -> None:
    """The same release is the same commit in every file (a copy-paste of an old pin shows here)."""
    commits: dict[str, set[str]] = {}
    for _, ref, rest in _uses():
        if PINNED_ACTION.match(ref):
            name, commit = ref.split("@")
            commits.setdefault(f"{name} {rest.strip()}", set()).add(commit)
    assert commits and all(len(found) == 1 for found in commits.values()), commits


def _containerfile_bases(path: Path) -> list[tuple[str, str]]:
    """``(line, image)`` of each FROM that is not an earlier stage, ARG defaults substituted."""
    args: dict[str, str] = {}
    stages: set[str] = set()
    found = []
    for line in path.read_text().splitlines():
        arg = re.match(r"^ARG\s+(\w+)=(\S+)", line)
        if arg:
            args[arg[1]] = arg[2]
        source = re.match(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", line, re.IGNORECASE)
        if source:
            image = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m[1], m[0]), source[1])
            if image not in stages and image != "scratch":
                found.append((line, image))
            if source[2]:
                stages.add(source[2])
    return found


def test_the_containerfile_builds_on_a_base_pinned_by_digest() -> None:
    bases = _containerfile_bases(ROOT / "deploy" / "Containerfile")
    assert bases, "no FROM found"
    for line, image in bases:
        assert DIGEST.search(image), f"deploy/Containerfile: {line!r} -> {image}: pin it @sha256:..."
        # the tag says which build the digest is, for the next person to bump it
        assert re.search(r":[\w.-]+@sha256:", image), f"{image}: keep the tag before the digest"


def _images(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [str(node["image"])] if isinstance(node.get("image"), str) else []
        if isinstance(node.get("image"), dict) and "name" in node["image"]:
            found.append(str(node["image"]["name"]))
        return found + [image for value in node.values() for image in _images(value)]
    if isinstance(node, list):
        return [image for value in node for image in _images(value)]
    return []


@pytest.mark.parametrize("pattern", ["deploy/**/*.yaml", "workflows/gitlab/*.yml", "examples/demo*.yaml"])
def test_images_the_install_runs_are_first_party_or_pinned(pattern: str) -> None:
    for path in sorted(ROOT.glob(pattern)):
        for doc in yaml.safe_load_all(path.read_text()):
            for image in _images(doc):
                name = image.split("@")[0].rsplit(":", 1)[0] if "/" in image else image.split(":")[0]
                assert name in FIRST_PARTY_IMAGES or DIGEST.search(image), (
                    f"{path.relative_to(ROOT)}: image {image} is neither lockgate's nor pinned @sha256:"
                )


def test_the_scan_sees_an_unpinned_reference() -> None:
    """The patterns themselves: a tag alone is caught, a SHA with its tag comment passes."""
    assert USES.match("      - uses: actions/checkout@v4")
    assert not PINNED_ACTION.match("actions/checkout@v4")
    assert PINNED_ACTION.match("actions/checkout@" + "a" * 40)
    assert TAG_COMMENT.match(" # v4.4.0") and not TAG_COMMENT.match("")
    assert not DIGEST.search("debian:bookworm-slim")
