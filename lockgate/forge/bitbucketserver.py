"""Bitbucket Server / Data Center: a build status and one pull request per branch (Flux: bitbucketserver).

Status: ``POST {base}/rest/api/latest/projects/PROJECT/repos/REPO/commits/SHA/builds`` with
``key`` (the context's SHA-1: 40 characters, as Flux), ``state`` (INPROGRESS, SUCCESSFUL,
FAILED), ``name`` (``context [description]``, shown in the browser, Flux's form),
``description`` and ``url`` (the target URL, else the repository's). The repository is read
from the HTTPS clone URL ``https://HOST[/CONTEXT]/scm/PROJECT/REPO.git``. Credentials: the
Secret's ``token`` (an HTTP access token, Bearer) or ``username`` + ``password`` (Basic);
Atlassian's ``X-Atlassian-Token: no-check`` goes with every write. A server with a private
CA is trusted through the provider's ``certSecretRef`` (``ca.crt``).

Pull request: ``GET /pull-requests?state=OPEN&direction=OUTGOING&at=refs/heads/B``, then
``PUT /pull-requests/ID`` (with the ``version`` read, as Bitbucket requires) or ``POST``.
Bitbucket Server pull requests have no labels: they are listed in the description.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from lockgate.forge import bitbucket
from lockgate.forge.base import (
    Client,
    Credentials,
    OnePullRequest,
    Proposal,
    Request,
    Status,
)
from lockgate.forge.remote import Repository

_STATE = {"pending": "INPROGRESS", "success": "SUCCESSFUL", "failure": "FAILED"}


def api_root(repository: Repository) -> str:
    return f"{repository.base_url}/rest/api/latest"


def headers(credentials: Credentials) -> dict[str, str]:
    auth = credentials.basic() if credentials.password else f"Bearer {credentials.token}"
    return {"Authorization": auth, "X-Atlassian-Token": "no-check", "X-Requested-With": "XMLHttpRequest"}


def _repo_path(repository: Repository) -> str:
    return f"/projects/{quote(repository.owner, safe='')}/repos/{quote(repository.name, safe='')}"


def status_request(repository: Repository, sha: str, status: Status, *, root: str) -> Request:
    body = {
        "key": bitbucket.key_of(status.context),
        "state": _STATE[status.state],
        "name": f"{status.context} [{status.description}]",
        "description": status.description,
        "url": status.target_url
        or f"{repository.base_url}/projects/{repository.owner}/repos/{repository.name}",
    }
    return Request("POST", f"{root}{_repo_path(repository)}/commits/{sha}/builds", body)


class PullRequests(OnePullRequest):
    # 409 DuplicatePullRequestException
    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self.path = _repo_path(client.repository) + "/pull-requests"

    def find_open(self, proposal: Proposal) -> dict[str, Any] | None:
        found = self.client.call(
            "GET",
            self.path,
            params={"state": "OPEN", "direction": "OUTGOING", "at": f"refs/heads/{proposal.branch}"},
        )
        for pull in found.get("values", []) if isinstance(found, dict) else []:
            if (pull.get("toRef") or {}).get("id") == f"refs/heads/{proposal.base}":
                return dict(pull)
        return None

    def create(self, proposal: Proposal) -> dict[str, Any]:
        payload = {
            **_text(proposal),
            "fromRef": {"id": f"refs/heads/{proposal.branch}"},
            "toRef": {"id": f"refs/heads/{proposal.base}"},
        }
        return dict(self.client.call("POST", self.path, ok=(201,), json=payload))

    def identify(self, pull: dict[str, Any]) -> tuple[int, str]:
        links = (pull.get("links") or {}).get("self") or [{}]
        return int(pull["id"]), str(links[0].get("href", ""))

    def rewrite(self, number: int, pull: dict[str, Any], proposal: Proposal) -> None:
        # Bitbucket Server refuses an update without the version it holds (optimistic locking)
        self.client.call(
            "PUT", f"{self.path}/{number}", json={**_text(proposal), "version": pull.get("version", 0)}
        )


def _text(proposal: Proposal) -> dict[str, str]:
    return {"title": proposal.title, "description": bitbucket.description(proposal)}
