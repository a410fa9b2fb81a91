"""GitHub (and GitHub Enterprise Server): a commit status and one pull request per branch.

Status: ``POST {api}/repos/OWNER/REPO/statuses/SHA`` with ``state`` (pending, success,
failure), ``context``, ``description`` (GitHub keeps at most 140 characters) and
``target_url``. Pull request: ``GET /repos/OWNER/REPO/pulls?head=OWNER:BRANCH&base=BASE&
state=open``, then ``POST /pulls`` (422 when another run opened it meanwhile) or ``PATCH
/pulls/N``; labels through ``POST /issues/N/labels`` (a pull request is an issue). The API
root is ``https://api.github.com``, or ``https://HOST/api/v3`` for a repository on another
host (GitHub Enterprise Server).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from lockgate.forge.base import (
    Client,
    Credentials,
    OnePullRequest,
    Proposal,
    Request,
    Status,
)
from lockgate.forge.remote import Repository

PUBLIC_API = "https://api.github.com"


def api_root(repository: Repository) -> str:
    if repository.base_url in ("https://github.com", "http://github.com"):
        return PUBLIC_API
    return f"{repository.base_url}/api/v3"


def headers(credentials: Credentials) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {credentials.token}",
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": "2022-11-28",
    }


def repo_path(repository: Repository) -> str:
    """``/repos/OWNER/REPO``: GitHub's, and Gitea's API copies it."""
    return f"/repos/{quote(repository.owner, safe='')}/{quote(repository.name, safe='')}"


def status_request(repository: Repository, sha: str, status: Status, *, root: str) -> Request:
    body: dict[str, Any] = {
        "state": status.state,
        "context": status.context,
        "description": status.description,
    }
    if status.target_url:
        body["target_url"] = status.target_url
    return Request("POST", f"{root}{repo_path(repository)}/statuses/{sha}", body)


class PullRequests(OnePullRequest):
    conflict = (422,)  # "A pull request already exists for OWNER:BRANCH"

    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self.path = repo_path(client.repository)

    def find_open(self, proposal: Proposal) -> dict[str, Any] | None:
        head = f"{self.client.repository.owner}:{proposal.branch}"
        found = self.client.call(
            "GET", f"{self.path}/pulls", params={"head": head, "base": proposal.base, "state": "open"}
        )
        return dict(found[0]) if isinstance(found, list) and found else None

    def create(self, proposal: Proposal) -> dict[str, Any]:
        payload = {
            "title": proposal.title,
            "head": proposal.branch,
            "base": proposal.base,
            "body": proposal.body,
        }
        made = dict(self.client.call("POST", f"{self.path}/pulls", ok=(201,), json=payload))
        self._label(int(made["number"]), proposal)
        return made

    def identify(self, pull: dict[str, Any]) -> tuple[int, str]:
        return int(pull["number"]), str(pull.get("html_url", ""))

    def rewrite(self, number: int, pull: dict[str, Any], proposal: Proposal) -> None:
        self.client.call(
            "PATCH", f"{self.path}/pulls/{number}", json={"title": proposal.title, "body": proposal.body}
        )
        self._label(number, proposal)

    def _label(self, number: int, proposal: Proposal) -> None:
        if proposal.labels:
            self.client.call(
                "POST", f"{self.path}/issues/{number}/labels", json={"labels": list(proposal.labels)}
            )
