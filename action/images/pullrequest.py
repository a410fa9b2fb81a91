"""``--pr``: open or update one pull request per update branch (IAC #524), via GitHub's REST API.

This is the GitHub seam of ``images``. After the update branch is pushed, ``ensure``
looks for an open pull request from that branch (``GET /repos/{owner}/{repo}/pulls?head=
owner:branch&state=open``); it updates its title and body when a new commit was pushed
(``PATCH``), or opens one (``POST``). So a scheduled job keeps exactly one pull request
current instead of opening one per run. The token comes from ``GITHUB_TOKEN`` and the API
from ``GITHUB_API_URL`` (GitHub Enterprise), as in GitHub Actions; the token is sent
only in the ``Authorization`` header and never appears in a message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import requests

from lockgate import __version__
from lockgate.errors import AuthError, LockgateError, UsageError

DEFAULT_API = "https://api.github.com"
_REMOTE = re.compile(r"github\.com[:/]+([^/\s]+)/([^/\s]+?)(?:\.git)?/?$")


class PullRequestError(LockgateError):
    """GitHub refused or failed a pull-request call; the pushed branch is kept."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class Action(Enum):
    """What ``ensure`` did to the pull request; the values are the report's words."""

    OPENED = "opened"
    UPDATED = "updated"  #: a new commit was pushed: title and body rewritten
    UNCHANGED = "unchanged"  #: nothing new was pushed: left as it was


@dataclass(frozen=True)
class PullRequest:
    number: int
    url: str
    action: Action


def repository_slug(env: Mapping[str, str], remote_url: str) -> str:
    """``owner/name``: ``GITHUB_REPOSITORY`` (set in Actions), else the github.com remote URL."""
    slug = env.get("GITHUB_REPOSITORY", "")
    if slug.count("/") == 1 and all(slug.split("/")):
        return slug
    match = _REMOTE.search(remote_url)
    if match is None:
        raise UsageError(
            "--pr: cannot tell the GitHub repository: set GITHUB_REPOSITORY=owner/name "
            "(the remote is not a github.com URL)"
        )
    return f"{match.group(1)}/{match.group(2)}"


class GitHub:
    """The four pull-request calls lockgate needs, for one repository."""

    def __init__(self, repository: str, *, token: str, api_url: str = DEFAULT_API) -> None:
        self.repository = repository
        self.owner = repository.split("/", 1)[0]
        self.api_url = api_url.rstrip("/")
        self.session = requests.Session()
        self.session.headers.update(
            {
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": f"lockgate/{__version__}",
            }
        )

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None, *, remote_url: str = "") -> GitHub:
        env = os.environ if env is None else env
        token = env.get("GITHUB_TOKEN", "")
        if not token:
            raise UsageError(
                "--pr needs GITHUB_TOKEN (a token allowed to write pull requests and contents); "
                "in GitHub Actions pass `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}`"
            )
        slug = repository_slug(env, remote_url)
        return cls(slug, token=token, api_url=env.get("GITHUB_API_URL") or DEFAULT_API)

    def _call(self, method: str, path: str, *, ok: tuple[int, ...], **kwargs: Any) -> Any:
        url = f"{self.api_url}/repos/{self.repository}{path}"
        try:
            response = self.session.request(method, url, timeout=30, **kwargs)
        except (requests.ConnectionError, requests.Timeout) as exc:
            reason = type(exc).__name__
            raise PullRequestError(f"cannot reach the GitHub API at {self.api_url}: {reason}") from None
        if response.status_code in ok:
            return response.json()
        try:
            detail = str(response.json().get("message", ""))
        except (ValueError, AttributeError):
            detail = ""
        what = f"GitHub API {method} /repos/{self.repository}{path} answered HTTP {response.status_code}"
        what += f": {detail}" if detail else ""
        if response.status_code in (401, 403):
            raise AuthError(f"{what}; check that GITHUB_TOKEN may write pull requests in {self.repository}")
        raise PullRequestError(what, status=response.status_code)

    def find_open(self, branch: str) -> dict[str, Any] | None:
        found = self._call(
            "GET", "/pulls", ok=(200,), params={"head": f"{self.owner}:{branch}", "state": "open"}
        )
        return found[0] if isinstance(found, list) and found else None

    def ensure(self, *, branch: str, base: str, title: str, body: str, refresh: bool) -> PullRequest:
        """The one open pull request from ``branch`` into ``base``; ``refresh`` rewrites its text."""
        existing = self.find_open(branch)
        if existing is None:
            payload = {"title": title, "head": branch, "base": base, "body": body}
            try:
                created = self._call("POST", "/pulls", ok=(201,), json=payload)
                return PullRequest(int(created["number"]), str(created.get("html_url", "")), Action.OPENED)
            except PullRequestError as exc:
                # 422 "A pull request already exists": another run opened it meanwhile
                existing = self.find_open(branch) if exc.status == 422 else None
                if existing is None:
                    raise
        number, url = int(existing["number"]), str(existing.get("html_url", ""))
        if not refresh:
            return PullRequest(number, url, Action.UNCHANGED)
        self._call("PATCH", f"/pulls/{number}", ok=(200,), json={"title": title, "body": body})
        return PullRequest(number, url, Action.UPDATED)
