"""Which pull request a CI job runs for, from the CI's documented variables only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lockgate.errors import UsageError
from lockgate.forge import comments, job


def test_github_actions_reads_the_event_payload(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 12}}))
    found = job.detect(
        {
            "GITHUB_ACTIONS": "true",
            "GITHUB_REPOSITORY": "acme/app",
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_TOKEN": "ghs_secret_value",
            "GITHUB_WORKFLOW": "preview",
        }
    )
    assert (found.repository.forge, found.repository.slug, found.number) == ("github", "acme/app", 12)
    assert found.api_root == "https://api.github.com" and found.key == "preview"
    assert "ghs_secret_value" not in repr(found)


def test_gitea_actions_takes_gitea_token_and_its_api(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": 3}))
    found = job.detect(
        {
            "GITEA_ACTIONS": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_REPOSITORY": "o/r",
            "GITHUB_SERVER_URL": "https://git.example",
            "GITHUB_API_URL": "https://git.example/api/v1",
            "GITHUB_EVENT_PATH": str(event),
            "GITEA_TOKEN": "g",
        }
    )
    assert (found.repository.forge, found.api_root, found.token) == (
        "gitea",
        "https://git.example/api/v1",
        "g",
    )


def test_gitlab_merge_request_pipelines() -> None:
    found = job.detect(
        {
            "GITLAB_CI": "true",
            "CI_PROJECT_PATH": "group/sub/app",
            "CI_SERVER_URL": "https://gitlab.example",
            "CI_API_V4_URL": "https://gitlab.example/api/v4",
            "CI_MERGE_REQUEST_IID": "9",
            "GITLAB_TOKEN": "glpat",
            "CI_JOB_NAME": "preview",
        }
    )
    assert (found.repository.owner, found.repository.name, found.number) == ("group/sub", "app", 9)


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({}, "not a GitHub Actions"),
        ({"GITLAB_CI": "true"}, "not for a merge request"),
        ({"GITLAB_CI": "true", "CI_MERGE_REQUEST_IID": "1"}, "set GITLAB_TOKEN"),
        ({"GITHUB_ACTIONS": "true", "GITHUB_EVENT_PATH": "/nonexistent"}, "runs for no pull request"),
    ],
)
def test_what_is_missing_is_said(env: dict[str, str], said: str) -> None:
    with pytest.raises(UsageError, match=said):
        job.detect(env)


def test_the_marker_cannot_close_its_html_comment() -> None:
    assert comments.marker("lockgate pr diff") == "<!-- lockgate:lockgate pr diff -->"
    assert "-->" not in comments.marker("x --> <script>")[:-4]
