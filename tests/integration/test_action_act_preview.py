"""The pr-diff reusable workflow's preview under act: ONE pull-request comment, updated on the next push.

act runs a repository's own workflow that calls ``pr-diff.yml`` (the reusable workflow, as
written) with ``clusters`` on a ``pull_request`` event, against the world's registry; the
action is this checkout (``tests/world/act.py``). GitHub's REST API cannot run here: its
issue-comment endpoints are played by ``comment_support.GitHubComments``, a local stand-in that
implements the documented requests strictly (and is not GitHub). The comment's Markdown is then
rendered as a forge renders it (markdown-it-py, CommonMark with GitHub's tables) and shown in
Chromium, whose screenshot is kept under ``tests/.artifacts/web``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt

from tests.integration.comment_support import GitHubComments
from tests.integration.preview_support import configmap, dump
from tests.integration.reconcile_support import push_tree
from tests.integration.web_support import browser, watch
from tests.world import act
from tests.world.registry import Registry

pytestmark = pytest.mark.world

ROOT = Path(__file__).resolve().parents[2]
CALLER = """name: preview
on: pull_request
permissions: {}
jobs:
  preview:
    uses: ./.github/workflows/pr-diff.yml
    permissions: {contents: read, packages: read, pull-requests: write}
    with:
      path: deploy
      url: URL
      clusters: |
        clusters/staging.yaml
"""


def commit(repo: Path, message: str) -> str:
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", *ident, "commit", "-qam", message], cwd=repo, check=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def event(tmp: Path, base: str, head: str) -> Path:
    path = tmp / f"event-{head[:7]}.json"
    pull = {"number": 7, "base": {"sha": base, "ref": "main"}, "head": {"sha": head, "ref": "feature"}}
    path.write_text(json.dumps({"action": "synchronize", "number": 7, "pull_request": pull}))
    return path


def test_one_comment_then_the_same_updated_on_the_next_push_and_the_markdown_renders(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    push_tree(registry, unique, {"web.yaml": dump(configmap("web", {"color": "blue"}))}, tag="main")
    runner = {"apiVersion": "lockgate.dev/v1alpha1", "kind": "Runner", "spec": {"clusterName": "staging"}}
    sync = {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": "web"},
        "spec": {
            "url": registry.oci(unique, ":main"),
            "interval": "1m",
            "targetNamespace": "apps",
            "verify": {"insecureSkip": True},
        },
    }
    repo = tmp_path / "repo"
    base = act.make_repo(
        repo,
        {
            "deploy/web.yaml": dump(configmap("web", {"color": "blue"})),
            "clusters/staging.yaml": yaml.safe_dump_all([runner, sync]),
            ".github/workflows/preview.yml": CALLER.replace("URL", registry.oci(unique)),
        },
        [ROOT / ".github/workflows/pr-diff.yml"],
    )
    action = act.stage_action(tmp_path / "action")
    token = "ghs_act-preview-token"
    with GitHubComments("acme", "app", {token: "write"}).running() as github:

        def run(head: str) -> act.ActRun:
            done = act.run_workflow(
                repo,
                ".github/workflows/preview.yml",
                event="pull_request",
                secrets={"GITHUB_TOKEN": token},
                env={"GITHUB_API_URL": github.url, "GITHUB_REPOSITORY": "acme/app"},
                action=action,
                extra_args=["-e", str(event(tmp_path, base, head))],
            )
            assert done.code == 0, done.tail()
            return done

        (repo / "deploy/web.yaml").write_text(dump(configmap("web", {"color": "green"})))
        first = run(commit(repo, "green"))
        assert [c for c in github.calls if c[0] != "GET"] == [("POST", "/repos/acme/app/issues/7/comments")]
        (repo / "deploy/web.yaml").write_text(dump(configmap("web", {"color": "red"})))
        second = run(commit(repo, "red"))
        (comment_id,) = github.comments
        assert [c for c in github.calls if c[0] != "GET"] == [
            ("POST", "/repos/acme/app/issues/7/comments"),
            ("PATCH", f"/repos/acme/app/issues/comments/{comment_id}"),
        ]
    body = github.comments[comment_id]["body"]
    # the key is the workflow name act gives the job (GitHub gives the caller's)
    assert body.startswith("<!-- lockgate:lockgate pr diff -->\n")
    assert '"red"' in body and '"green"' not in body
    summaries = [s for s in second.summaries() if "lockgate preview" in s]
    assert summaries and summaries[-1].strip() == body.split("\n", 1)[1].strip()
    assert any("lockgate preview" in s for s in first.summaries())
    assert token not in first.text() + second.text()

    html = MarkdownIt("commonmark").enable("table").render(body)
    assert "<table>" in html and "<details>" in html and "ConfigMap/apps/web" in html
    with browser() as chromium:
        page = watch(chromium)
        page.page.set_content(f"<!doctype html><html lang='en'><body><main>{html}</main></body></html>")
        page.page.click("summary")
        rows = page.page.locator("table").first.locator("tr").count()
        assert rows == 2  # the header and staging / web
        assert page.page.locator("details table code").first.inner_text().startswith("ConfigMap/apps/web")
        shot = page.shot("preview-comment")
    assert shot.stat().st_size > 5000
