"""Azure DevOps (dev.azure.com, *.visualstudio.com, Server): a commit status and one pull request.

Status (as Flux's ``azuredevops``): ``POST {org}/PROJECT/_apis/git/repositories/REPO/commits/
SHA/statuses?api-version=7.1`` with ``state`` (pending, succeeded, and Flux's ``error`` for a
failure), ``description``, ``targetUrl`` and ``context`` ``{"genre": "lockgate", "name":
CONTEXT}`` (the provider's ``genre`` instead, when set: ``fluxcd`` keeps Flux's statuses).
Pull request: ``GET .../pullrequests?searchCriteria.sourceRefName=refs/heads/B
&searchCriteria.targetRefName=refs/heads/BASE&searchCriteria.status=active``, then
``PATCH .../pullrequests/ID`` or ``POST .../pullrequests`` (labels: ``labels`` on create,
``POST .../pullRequests/ID/labels`` each on update). A personal access token goes as HTTP
Basic with an empty user name, as Azure DevOps documents. The organisation URL is the
``base_url`` of the repository (``https://dev.azure.com/ORG``; ``$SYSTEM_COLLECTIONURI`` in
Azure Pipelines).
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

API_VERSION = "7.1"
GENRE = "lockgate"
#: Azure DevOps refuses a pull request description over 4000 characters
MAX_PR_DESCRIPTION = 4000
_VERSION = {"api-version": API_VERSION}
_STATE = {"pending": "pending", "success": "succeeded", "failure": "error"}


def api_root(repository: Repository) -> str:
    return repository.base_url


def headers(credentials: Credentials) -> dict[str, str]:
    return {"Authorization": Credentials(username="", password=credentials.token).basic()}


def _repo_path(repository: Repository) -> str:
    return f"/{quote(repository.owner, safe='')}/_apis/git/repositories/{quote(repository.name, safe='')}"


def status_request(repository: Repository, sha: str, status: Status, *, root: str) -> Request:
    body: dict[str, Any] = {
        "state": _STATE[status.state],
        "description": status.description,
        "context": {"genre": status.genre or GENRE, "name": status.context},
    }
    if status.target_url:
        body["targetUrl"] = status.target_url
    url = f"{root}{_repo_path(repository)}/commits/{sha}/statuses?api-version={API_VERSION}"
    return Request("POST", url, body)


class PullRequests(OnePullRequest):
    # 409 TF401179: an active pull request for these branches exists
    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self.path = _repo_path(client.repository) + "/pullrequests"

    def find_open(self, proposal: Proposal) -> dict[str, Any] | None:
        found = self.client.call(
            "GET",
            self.path,
            params={
                "searchCriteria.sourceRefName": f"refs/heads/{proposal.branch}",
                "searchCriteria.targetRefName": f"refs/heads/{proposal.base}",
                "searchCriteria.status": "active",
                "api-version": API_VERSION,
            },
        )
        values = found.get("value", []) if isinstance(found, dict) else []
        return dict(values[0]) if values else None

    def create(self, proposal: Proposal) -> dict[str, Any]:
        payload: dict[str, Any] = {
            **_text(proposal),
            "sourceRefName": f"refs/heads/{proposal.branch}",
            "targetRefName": f"refs/heads/{proposal.base}",
            "labels": [{"name": name} for name in proposal.labels],
        }
        return dict(self.client.call("POST", self.path, ok=(201,), json=payload, params=_VERSION))

    def identify(self, pull: dict[str, Any]) -> tuple[int, str]:
        number = int(pull["pullRequestId"])
        repo = self.client.repository
        return number, f"{repo.base_url}/{quote(repo.owner)}/_git/{quote(repo.name)}/pullrequest/{number}"

    def rewrite(self, number: int, pull: dict[str, Any], proposal: Proposal) -> None:
        self.client.call("PATCH", f"{self.path}/{number}", json=_text(proposal), params=_VERSION)
        for name in proposal.labels:
            self.client.call(
                "POST", f"{self.path}/{number}/labels", ok=(200, 201), json={"name": name}, params=_VERSION
            )


def _text(proposal: Proposal) -> dict[str, str]:
    body = proposal.body
    if len(body) > MAX_PR_DESCRIPTION:
        body = body[: MAX_PR_DESCRIPTION - 1] + "…"
    return {"title": proposal.title, "description": body}
