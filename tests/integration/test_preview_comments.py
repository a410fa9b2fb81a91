"""``lockgate preview --comment``: one comment per pull request and workflow, updated in place.

Gitea is the real forge (``tests/world/gitea.py``), commenting on a real pull request. GitHub
and GitLab cannot run here: ``comment_support`` holds local stand-ins implementing their
documented issue-comment and merge-request-note requests strictly (and says so). The preview
itself runs against the world's registry: a sync with no attestations, compared with its tag.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.comment_support import GitHubComments, GitLabNotes
from tests.integration.preview_support import configmap, dump, write_tree
from tests.integration.reconcile_support import push_tree
from tests.world.gitea import Gitea
from tests.world.registry import Registry

pytestmark = pytest.mark.world

LOCKGATE = [sys.executable, "-m", "lockgate"]


def setup(registry: Registry, unique: str, tmp: Path) -> tuple[Path, Path]:
    """A published release, a cluster's config taking its tag, and a pull request's PATH."""
    push_tree(registry, unique, {"app.yaml": dump(configmap("web", {"color": "blue"}))}, tag="main")
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
    config = tmp / "staging.yaml"
    config.write_text(yaml.safe_dump_all([runner, sync]))
    path = write_tree(tmp / "deploy", {"app.yaml": dump(configmap("web", {"color": "green"}))})
    return config, path


def preview(path: Path, config: Path, env: dict[str, str], *more: str) -> tuple[int, dict[str, Any], str]:
    (document,) = [d for d in yaml.safe_load_all(config.read_text()) if d["kind"] == "Sync"]
    url = document["spec"]["url"].rsplit(":", 1)[0]
    proc = subprocess.run(
        [
            *LOCKGATE,
            "preview",
            str(path),
            "--cluster",
            str(config),
            "--url",
            url,
            "--comment",
            *more,
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITLAB", "GITEA", "CI_"))}
        | env,
        timeout=120,
    )
    try:
        return proc.returncode, json.loads(proc.stdout), proc.stderr
    except json.JSONDecodeError:
        raise AssertionError(f"{proc.returncode}\n{proc.stdout}\n{proc.stderr}") from None


def actions_env(tmp: Path, api: str, token: str, **more: str) -> dict[str, str]:
    event = tmp / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "pull_request": {"number": 7}}))
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": "acme/app",
        "GITHUB_SERVER_URL": "https://github.test",
        "GITHUB_API_URL": api,
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_TOKEN": token,
        "GITHUB_WORKFLOW": "lockgate preview",
        **more,
    }


def test_github_one_comment_then_the_same_updated_and_one_per_workflow(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    config, path = setup(registry, unique, tmp_path)
    with GitHubComments("acme", "app", {"ghs_write": "write"}).running() as github:
        env = actions_env(tmp_path, github.url, "ghs_write")
        code, first, err = preview(path, config, env)
        assert code == 1, err
        assert first["comment"]["status"] == "created", first["comment"]
        (path / "app.yaml").write_text(dump(configmap("web", {"color": "red"})))  # a second push
        code, second, _ = preview(path, config, env)
        assert second["comment"]["status"] == "updated"
        assert second["comment"]["url"] == first["comment"]["url"]
        _, third, _ = preview(path, config, env)
        assert third["comment"]["status"] == "unchanged"
        writes = [c for c in github.calls if c[0] in ("POST", "PATCH")]
        assert writes == [
            ("POST", "/repos/acme/app/issues/7/comments"),
            ("PATCH", f"/repos/acme/app/issues/comments/{next(iter(github.comments))}"),
        ]
        (only,) = github.comments.values()
        assert only["body"].startswith("<!-- lockgate:lockgate preview -->\n")
        assert only["body"].split("\n", 1)[1] == second["markdown"]
        assert '"red"' in only["body"] and '"green"' not in only["body"]
        # another workflow keeps its own comment
        preview(path, config, {**env, "GITHUB_WORKFLOW": "nightly"})
        assert len(github.comments) == 2


def test_a_read_only_token_skips_the_comment_and_still_previews(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    config, path = setup(registry, unique, tmp_path)
    with GitHubComments("acme", "app", {"ghs_fork": "read"}).running() as github:
        code, document, err = preview(path, config, actions_env(tmp_path, github.url, "ghs_fork"))
    assert code == 1, err
    assert document["comment"]["status"] == "skipped"
    assert "read-only" in document["comment"]["reason"]
    assert "ghs_fork" not in json.dumps(document) + err
    assert github.comments == {} and document["targets"][0]["changed"]


def test_gitlab_one_merge_request_note_updated_in_place(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    config, path = setup(registry, unique, tmp_path)
    with GitLabNotes("group/app", "glpat-preview").running() as gitlab:
        env = {
            "GITLAB_CI": "true",
            "CI_PROJECT_PATH": "group/app",
            "CI_SERVER_URL": "https://gitlab.test",
            "CI_API_V4_URL": f"{gitlab.url}/api/v4",
            "CI_MERGE_REQUEST_IID": "3",
            "GITLAB_TOKEN": "glpat-preview",
            "CI_JOB_NAME": "preview",
        }
        _, first, err = preview(path, config, env)
        assert first["comment"]["status"] == "created", (first.get("comment"), err)
        (path / "app.yaml").write_text(dump(configmap("web", {"color": "red"})))
        _, second, _ = preview(path, config, env)
    assert second["comment"]["status"] == "updated"
    (note,) = gitlab.notes.values()
    assert note["body"].endswith(second["markdown"]) and "#note_" in second["comment"]["url"]
    assert [c for c in gitlab.calls if c[0] in ("POST", "PUT")] == [
        ("POST", "/api/v4/projects/group%2Fapp/merge_requests/3/notes"),
        ("PUT", f"/api/v4/projects/group%2Fapp/merge_requests/3/notes/{note['id']}"),
    ]


def git(cwd: Path, *args: str) -> None:
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", *ident, *args], cwd=cwd, check=True, capture_output=True)


def test_gitea_one_comment_on_a_real_pull_request(
    gitea: Gitea, registry: Registry, unique: str, tmp_path: Path
) -> None:
    config, path = setup(registry, unique, tmp_path)
    url = gitea.create_repo(unique)
    work = tmp_path / "work"
    git(tmp_path, "clone", "--quiet", url, str(work))
    git(work, "checkout", "--quiet", "-B", "main")
    (work / "README").write_text("app\n")
    git(work, "add", ".")
    git(work, "commit", "--quiet", "-m", "seed")
    git(work, "push", "--quiet", "origin", "main")
    git(work, "checkout", "--quiet", "-b", "change")
    (work / "README").write_text("app 2\n")
    git(work, "commit", "--quiet", "-am", "change")
    git(work, "push", "--quiet", "origin", "change")
    repo = f"/repos/{gitea.user}/{unique}"
    pull = gitea.call("POST", f"{repo}/pulls", json={"title": "change", "head": "change", "base": "main"})
    event = tmp_path / "gitea-event.json"
    event.write_text(json.dumps({"pull_request": {"number": pull["number"]}}))
    env = {
        "GITEA_ACTIONS": "true",
        "GITHUB_REPOSITORY": f"{gitea.user}/{unique}",
        "GITHUB_SERVER_URL": gitea.url,
        "GITHUB_API_URL": gitea.api,
        "GITHUB_EVENT_PATH": str(event),
        "GITEA_TOKEN": gitea.token,
        "GITHUB_WORKFLOW": "preview",
    }
    _, first, err = preview(path, config, env)
    assert first["comment"]["status"] == "created", (first.get("comment"), err)
    (path / "app.yaml").write_text(dump(configmap("web", {"color": "red"})))
    _, second, _ = preview(path, config, env)
    assert second["comment"]["status"] == "updated"
    comments = gitea.call("GET", f"{repo}/issues/{pull['number']}/comments")
    assert len(comments) == 1
    assert comments[0]["body"].endswith(second["markdown"].rstrip("\n")) or comments[0]["body"].endswith(
        second["markdown"]
    )
    assert comments[0]["html_url"] == second["comment"]["url"]
