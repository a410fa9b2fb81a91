"""Azure DevOps (dev.azure.com, *.visualstudio.com, Server): a commit status and one pull request.

Status (as Flux's ``azuredevops``): ``POST {org}/PROJECT/_apis/git/repositories/REPO/commits/
SHA/statuses?api-version=7.1`` with ``state`` (pending, succeeded, and Flux's ``error`` for a
failure), ``description``, ``targetUrl`` and ``context`` ``{"genre": "lockgate", "name":
CONTEXT}``. Pull request: ``GET .../pullrequests?searchCriteria.sourceRefName=refs/heads/B
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
    Action,
    Client,
    Credentials,
    Proposal,
    PullRequest,
    PullRequestError,
    Request,
    Status,
)
from lockgate.forge.remote import Repository

API_VERSION = "7.1"
GENRE = "lockgate"
#: Azure DevOps refuses a pull request description over 4000 characters
MAX_PR_DESCRIPTION = 4000
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
        "context": {"genre": GENRE, "name": status.context},
    }
    if status.target_url:
        body["targetUrl"] = status.target_url
    url = f"{root}{_repo_path(repository)}/commits/{sha}/statuses?api-version={API_VERSION}"
    return Request("POST", url, body)


class PullRequests:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.path = _repo_path(client.repository) + "/pullrequests"

    def _find_open(self, proposal: Proposal) -> dict[str, Any] | None:
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

    def _web_url(self, number: int) -> str:
        repo = self.client.repository
        return f"{repo.base_url}/{quote(repo.owner)}/_git/{quote(repo.name)}/pullrequest/{number}"

    def ensure(self, proposal: Proposal, *, refresh: bool) -> PullRequest:
        body = proposal.body
        if len(body) > MAX_PR_DESCRIPTION:
            body = body[: MAX_PR_DESCRIPTION - 1] + "…"
        text = {"title": proposal.title, "description": body}
        version = {"api-version": API_VERSION}
        existing = self._find_open(proposal)
        if existing is None:
            payload: dict[str, Any] = {
                **text,
                "sourceRefName": f"refs/heads/{proposal.branch}",
                "targetRefName": f"refs/heads/{proposal.base}",
                "labels": [{"name": name} for name in proposal.labels],
            }
            try:
                made = self.client.call("POST", self.path, ok=(201,), json=payload, params=version)
                number = int(made["pullRequestId"])
                return PullRequest(number, self._web_url(number), Action.OPENED)
            except PullRequestError as exc:
                # 409 TF401179: an active pull request for these branches exists (another run)
                existing = self._find_open(proposal) if exc.status == 409 else None
                if existing is None:
                    raise
        number = int(existing["pullRequestId"])
        if not refresh:
            return PullRequest(number, self._web_url(number), Action.UNCHANGED)
        self.client.call("PATCH", f"{self.path}/{number}", json=text, params=version)
        for name in proposal.labels:
            self.client.call(
                "POST", f"{self.path}/{number}/labels", ok=(200, 201), json={"name": name}, params=version
            )
        return PullRequest(number, self._web_url(number), Action.UPDATED)
