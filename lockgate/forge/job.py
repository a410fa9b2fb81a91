"""Which pull request a CI job runs for, and with which token to comment on it, from the job's environment.

Read only from the variables each CI documents, never from the repository's content:

- GitHub Actions: ``GITHUB_REPOSITORY``, ``GITHUB_SERVER_URL``, ``GITHUB_API_URL``, the event
  payload at ``GITHUB_EVENT_PATH`` (``pull_request.number``), the token in ``GITHUB_TOKEN``;
  the comment's key is ``GITHUB_WORKFLOW``.
- Gitea and Forgejo Actions set the same variables (and ``GITEA_ACTIONS``); the token is
  ``GITEA_TOKEN``, else ``GITHUB_TOKEN``.
- GitLab CI: ``CI_PROJECT_PATH``, ``CI_SERVER_URL``, ``CI_API_V4_URL``,
  ``CI_MERGE_REQUEST_IID`` (a merge-request pipeline), the token in ``GITLAB_TOKEN`` (the job's
  own ``CI_JOB_TOKEN`` may not write notes); the key is ``CI_JOB_NAME``.

``detect`` says plainly what is missing when the job is not for a pull request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lockgate import boundedjson
from lockgate.errors import LockgateError, UsageError
from lockgate.forge.remote import ForgeName, Repository

#: GitHub's event payloads are far smaller; a bigger file is not read
EVENT_BYTES = 25 << 20


@dataclass(frozen=True)
class PullRequestJob:
    repository: Repository
    number: int
    api_root: str
    token: str = field(repr=False)
    #: names the comment: one per workflow (or job)
    key: str


def _event_number(path: str) -> int | None:
    try:
        event = boundedjson.json_value(Path(path).read_bytes(), path, max_bytes=EVENT_BYTES)
    except (OSError, ValueError, LockgateError):
        return None
    if not isinstance(event, dict):
        return None
    pull = event.get("pull_request")
    number = pull.get("number") if isinstance(pull, dict) else event.get("number")
    return number if isinstance(number, int) and number > 0 else None


def _actions(env: Mapping[str, str], forge: ForgeName) -> PullRequestJob:
    slug = env.get("GITHUB_REPOSITORY", "")
    owner, _, name = slug.partition("/")
    number = _event_number(env.get("GITHUB_EVENT_PATH", ""))
    if number is None:
        raise UsageError(
            "--comment: this job runs for no pull request (GITHUB_EVENT_PATH holds no pull_request.number); "
            "run it on pull_request events"
        )
    token = env.get("GITEA_TOKEN", "") if forge == "gitea" else ""
    token = token or env.get("GITHUB_TOKEN", "")
    if not token:
        raise UsageError(
            f"--comment: no token: set {'GITEA_TOKEN or ' if forge == 'gitea' else ''}GITHUB_TOKEN"
        )
    server = env.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
    api = env.get("GITHUB_API_URL", "").rstrip("/") or (
        "https://api.github.com" if server == "https://github.com" else f"{server}/api/v3"
    )
    return PullRequestJob(
        Repository(forge, server, owner, name), number, api, token, env.get("GITHUB_WORKFLOW", "lockgate")
    )


def _gitlab(env: Mapping[str, str]) -> PullRequestJob:
    iid = env.get("CI_MERGE_REQUEST_IID", "")
    if not iid.isdigit():
        raise UsageError(
            "--comment: this pipeline is not for a merge request (CI_MERGE_REQUEST_IID is not set)"
        )
    token = env.get("GITLAB_TOKEN", "")
    if not token:
        raise UsageError(
            "--comment: set GITLAB_TOKEN (a token with the api scope: CI_JOB_TOKEN may not write notes)"
        )
    path = env.get("CI_PROJECT_PATH", "")
    owner, _, name = path.rpartition("/")
    server = env.get("CI_SERVER_URL", "https://gitlab.com").rstrip("/")
    api = env.get("CI_API_V4_URL", f"{server}/api/v4").rstrip("/")
    return PullRequestJob(
        Repository("gitlab", server, owner, name), int(iid), api, token, env.get("CI_JOB_NAME", "lockgate")
    )


def detect(env: Mapping[str, str]) -> PullRequestJob:
    """The pull request of this CI job; ``UsageError`` saying what is missing."""
    if env.get("GITLAB_CI") == "true":
        return _gitlab(env)
    if env.get("GITEA_ACTIONS") == "true" or env.get("FORGEJO_ACTIONS") == "true":
        return _actions(env, "gitea")
    if env.get("GITHUB_ACTIONS") == "true":
        return _actions(env, "github")
    raise UsageError(
        "--comment: not a GitHub Actions, Gitea/Forgejo Actions or GitLab CI job for a pull request "
        "(GITHUB_ACTIONS, GITEA_ACTIONS or GITLAB_CI is not set)"
    )
