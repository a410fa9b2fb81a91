"""Conflicting or ignored flags are usage errors (exit 2), never silently dropped.

The registry is a closed port: a command that went on to the network instead of refusing
its flags would exit 9 (registry), so exit 2 also proves nothing was contacted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.cli import main

REPO = "oci://127.0.0.1:9/app"
DIGEST = "sha256:" + "b" * 64

#: ``build --render``, the start of the capabilities cases
CAPS = ["build", "{plain}", "--render"]

CASES: list[tuple[list[str], str]] = [
    (["reconcile", f"{REPO}:v1", "--name", "a", "--semver", ">=1.0.0"], "has a tag and --semver"),
    (["reconcile", REPO, "--name", "a", "--insecure-skip-verify"], "names no tag"),
    (["reconcile", f"{REPO}:v1", "--name", "a", "--timeout", "10s"], "add --wait"),
    (["reconcile", f"{REPO}:v1", "--name", "a", "--wait", "--concurrency", "0"], "--concurrency"),
    (["reconcile", "--config", "{sync}", "--prune"], "--prune: not used with --config"),
    (
        ["reconcile", "--config", "{sync}", "--verify-key", "k.pub", "--semver", "1.x"],
        "--semver, --verify-key",
    ),
    (["reconcile", f"{REPO}:v1", "--config", "{sync}"], "cannot be combined with a URL"),
    (["list", f"{REPO}:v1"], "not a tag"),
    (["list", f"{REPO}@{DIGEST}"], "not a digest"),
    (["images", "update", "--path", "{images}", "--dry-run", "--commit"], "cannot be combined with --commit"),
    (["images", "update", "--path", "{images}", "--dry-run", "--pr"], "--pr"),
    (["images", "update", "--path", "{images}", "--branch", "bump"], "add --commit"),
    (["images", "scan", "--path", "{plain}"], "no ImagePolicy found"),
    (["images", "update", "--path", "{plain}"], "no ImageUpdateAutomation"),
    (["push", "{plain}", REPO], "the tag is missing"),
    (["build", "{plain}", "--skip-crds"], "--capabilities-from need --render"),
    (["build", "{plain}", "--capabilities-from", REPO, "--cluster", "a"], "needs --render"),
    ([*CAPS, "--cluster", "a"], "need --capabilities-from oci://REGISTRY/REPO"),
    ([*CAPS, "--capabilities-from", REPO], "needs --cluster NAME"),
    ([*CAPS, "--capabilities-from", REPO, "--cluster", "a"], "--capabilities-key FILE"),
    (
        [
            *CAPS,
            "--capabilities-from",
            REPO,
            "--cluster",
            "a",
            "--capabilities-key",
            "k",
            "--kube-version",
            "1",
        ],
        "keep one",
    ),
    (
        [*CAPS, "--capabilities-from", f"{REPO}:v1", "--cluster", "a", "--capabilities-key", "k"],
        "repository only",
    ),
]


@pytest.fixture()
def trees(tmp_path: Path) -> dict[str, str]:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    images = tmp_path / "images"
    images.mkdir()
    (images / "policy.yaml").write_text(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: app\n"
        "  namespace: flux-system\nspec:\n  image: 127.0.0.1:9/app\n---\n"
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: app\n"
        "  namespace: flux-system\nspec:\n  imageRepositoryRef:\n    name: app\n"
        "  policy:\n    semver:\n      range: '>=1.0.0'\n"
    )
    sync = tmp_path / "sync.yaml"
    sync.write_text(
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata:\n  name: a\nspec:\n"
        f"  url: {REPO}:v1\n  interval: 5m\n  verify: {{insecureSkip: true}}\n"
    )
    return {"{plain}": str(plain), "{images}": str(images), "{sync}": str(sync)}


@pytest.mark.parametrize(("argv", "says"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_conflicting_or_ignored_flags_are_usage_errors(
    argv: list[str], says: str, trees: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([trees.get(a, a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert says in err, err


def test_a_sync_document_with_a_tagged_url_and_semver_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sync = tmp_path / "sync.yaml"
    sync.write_text(
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata:\n  name: a\nspec:\n"
        f"  url: {REPO}:v1\n  semver: '>=1.0.0'\n  interval: 5m\n  verify: {{insecureSkip: true}}\n"
    )
    code = main(["reconcile", "--config", str(sync), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{sync}:7: Sync/a: spec.semver" in err and "already names a tag" in err, err


@pytest.mark.parametrize("command", ["reconcile", "serve"])
def test_a_yaml_error_in_config_is_usage(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit classes as the README documents them: a broken --config file is usage (2)."""
    bad = tmp_path / "sync.yaml"
    bad.write_text("kind: Sync\nmetadata: {name: a\n")
    code = main([command, "--config", str(bad)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{bad}:3:1: invalid YAML" in err, err
