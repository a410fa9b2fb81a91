"""Reports: exit codes for partial and total failures, and the "why" of a change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from action.images import config, policy, pullrequest, run, scan
from action.images.model import Automation, Config, ImagePolicy, ImageRepository, NamespacedName
from action.images.update import LatestRef, PolicyResult, TreeResult
from lockgate.errors import ExitCode, UsageError

A, B = NamespacedName("apps", "a"), NamespacedName("apps", "b")
CONFIG = Config(
    repositories={A: ImageRepository(A, "r/a"), B: ImageRepository(B, "r/b")},
    policies={
        A: ImagePolicy(A, A, policy.SemverChoice("^1.0")),
        B: ImagePolicy(B, B, policy.NumericalChoice("desc"), policy.TagFilter("^b-(?P<n>[0-9]+)", "$n")),
    },
)
OK = PolicyResult(A, LatestRef("r/a", "1.2.0"), candidates=3)


def _scanned(root: Path) -> run.ScanReport:
    """The configuration under ``root`` with policy A evaluated (no registry involved)."""
    return run.ScanReport(config.load(root), {}, {A: OK})


DENIED = PolicyResult(B, None, "refused", exit_code=ExitCode.AUTH)


def test_some_failed_is_partial() -> None:
    failure = run.ScanReport(CONFIG, {}, {A: OK, B: DENIED}).failure("scan")
    assert isinstance(failure, run.PartialError) and failure.exit_code == ExitCode.PARTIAL
    assert failure.message == "scan: 1 of 2 policies failed (see above)"


def test_all_failed_for_one_reason_exits_with_that_reason() -> None:
    denied_a = PolicyResult(A, None, "refused", exit_code=ExitCode.AUTH)
    failure = run.ScanReport(CONFIG, {}, {A: denied_a, B: DENIED}).failure("scan")
    assert failure is not None and failure.exit_code == ExitCode.AUTH


def test_all_failed_for_different_reasons_is_partial() -> None:
    missing = PolicyResult(A, None, "not found", exit_code=ExitCode.RESOLVE)
    failure = run.ScanReport(CONFIG, {}, {A: missing, B: DENIED}).failure("scan")
    assert failure is not None and failure.exit_code == ExitCode.PARTIAL


def test_nothing_failed() -> None:
    assert run.ScanReport(CONFIG, {}, {A: OK}).failure("scan") is None


def test_why_names_policy_counts_and_result() -> None:
    listing = scan.Listing(A, tags=("1.0.0", "1.2.0", "2.0.0"), listed=4)
    report = run.ScanReport(CONFIG, {A: listing}, {A: OK, B: DENIED})
    assert report.why(A) == {
        "policy": "semver ^1.0",
        "tags": 4,
        "excluded": 1,
        "candidates": 3,
        "latest": "r/a:1.2.0",
    }
    assert report.why(B)["policy"] == "numerical desc of tags matching ^b-(?P<n>[0-9]+) extract $n"


def test_push_without_commit_is_refused_unless_pr() -> None:
    with pytest.raises(UsageError, match="--push needs --commit"):
        run.GitOptions.defaults(push=True)
    options = run.GitOptions.defaults(pull_request=True, branch="image-updates")
    assert options.commit and options.push and options.pull_request


def _tree(root: Path, *, suspend: bool = False) -> Path:
    (root / "images.yaml").write_text(
        "apiVersion: lockgate.dev/v1alpha1\nkind: ImageAutomation\nmetadata: {name: web, namespace: apps}\n"
        "spec:\n  git: {author: {email: bot@example.com}}\n  update: {path: deploy}\n"
        "  images:\n    - {name: a, image: r/a, semver: '*'}\n"
    )
    if suspend:
        (root / "flux.yaml").write_text(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n"
            "metadata: {name: paused, namespace: apps}\n"
            "spec:\n  suspend: true\n  git: {commit: {author: {email: e@x}}}\n"
        )
    (root / "deploy").mkdir()
    marked = root / "deploy" / "a.yaml"
    marked.write_text('image: r/a:1.0.0 # {"$imagepolicy": "apps:a"}\n')
    return marked


def test_dry_run_returns_a_diff_and_writes_nothing(tmp_path: Path) -> None:
    marked = _tree(tmp_path)
    report = run.update_from(tmp_path, _scanned(tmp_path), dry_run=True)
    (item,) = report.automations
    assert marked.read_text() == 'image: r/a:1.0.0 # {"$imagepolicy": "apps:a"}\n'
    assert item.diff.splitlines()[2:] == [
        "@@ -1 +1 @@",
        '-image: r/a:1.0.0 # {"$imagepolicy": "apps:a"}',
        '+image: r/a:1.2.0 # {"$imagepolicy": "apps:a"}',
    ]


def test_suspended_automation_is_skipped_and_reported(tmp_path: Path) -> None:
    marked = _tree(tmp_path, suspend=True)
    report = run.update_from(tmp_path, _scanned(tmp_path))
    rows = {row["automation"]: row for row in report.to_json()["automations"]}
    assert rows["apps/paused"]["suspended"] and not rows["apps/paused"]["changes"]
    assert rows["apps/web"]["changes"][0]["new"] == "r/a:1.2.0"
    assert marked.read_text().startswith("image: r/a:1.2.0 ")


def test_out_of_scope_marker_is_a_notice_unless_strict(tmp_path: Path) -> None:
    marked = _tree(tmp_path)
    other = tmp_path / "deploy" / "web.yaml"
    other.write_text('tag: 6.0.0 # {"$imagepolicy": "web:podinfo:tag"}\n')
    report = run.update_from(tmp_path, _scanned(tmp_path))
    (row,) = report.to_json()["automations"]
    assert [(p["file"], p["kind"]) for p in row["problems"]] == [("deploy/web.yaml", "out-of-scope")]
    assert marked.read_text().startswith("image: r/a:1.2.0 ")
    assert other.read_text() == 'tag: 6.0.0 # {"$imagepolicy": "web:podinfo:tag"}\n'
    assert report.failure() is None
    strict = report.failure(strict=True)
    assert isinstance(strict, run.PartialError) and "--strict" in strict.message


def test_pull_request_action_is_reported_in_todays_words() -> None:
    automation = Automation(NamespacedName("apps", "web"), "", "e@x")
    rows = [
        run.UpdateReport(
            run.ScanReport(CONFIG, {}, {}),
            [
                run.AutomationReport(
                    automation, TreeResult(), pull_request=pullrequest.PullRequest(7, "u", action)
                )
            ],
        ).to_json()["automations"][0]["pullRequest"]
        for action in pullrequest.Action
    ]
    assert json.dumps(rows) == (
        '[{"number": 7, "url": "u", "action": "opened"}, {"number": 7, "url": "u", "action": "updated"}, '
        '{"number": 7, "url": "u", "action": "unchanged"}]'
    )
