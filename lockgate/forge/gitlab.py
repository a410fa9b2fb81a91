"""GitLab (gitlab.com and self-hosted): a commit status and one merge request per branch.

Status: ``POST {base}/api/v4/projects/ID/statuses/SHA`` (ID: the URL-encoded project path,
nested groups included) with ``state`` (pending -> ``running``, success, failure ->
``failed``: Flux's mapping, plus running while a pass applies), ``name`` (the context),
``description`` and ``target_url``. Merge request: ``GET /projects/ID/merge_requests?
state=opened&source_branch=B&target_branch=BASE``, then ``PUT /merge_requests/IID`` or
``POST /merge_requests`` (labels as GitLab takes them: one comma-separated string). The
token (personal, project or group access token with the ``api`` scope) goes in
``PRIVATE-TOKEN``.
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

#: GitLab stores a status's name in 255 characters
MAX_NAME = 255
_STATE = {"pending": "running", "success": "success", "failure": "failed"}


def api_root(repository: Repository) -> str:
    return f"{repository.base_url}/api/v4"


def headers(credentials: Credentials) -> dict[str, str]:
    return {"PRIVATE-TOKEN": credentials.token}


def project_path(repository: Repository) -> str:
    return "/projects/" + quote(repository.slug, safe="")


def status_request(repository: Repository, sha: str, status: Status, *, root: str) -> Request:
    body: dict[str, Any] = {
        "state": _STATE[status.state],
        "name": status.context[:MAX_NAME],
        "description": status.description,
    }
    if status.target_url:
        body["target_url"] = status.target_url
    return Request("POST", f"{root}{project_path(repository)}/statuses/{sha}", body)


class PullRequests:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.path = project_path(client.repository) + "/merge_requests"

    def _find_open(self, proposal: Proposal) -> dict[str, Any] | None:
        found = self.client.call(
            "GET",
            self.path,
            params={"state": "opened", "source_branch": proposal.branch, "target_branch": proposal.base},
        )
        return dict(found[0]) if isinstance(found, list) and found else None

    def ensure(self, proposal: Proposal, *, refresh: bool) -> PullRequest:
        text: dict[str, Any] = {"title": proposal.title, "description": proposal.body}
        if proposal.labels:
            text["labels"] = ",".join(proposal.labels)
        existing = self._find_open(proposal)
        if existing is None:
            payload = {**text, "source_branch": proposal.branch, "target_branch": proposal.base}
            try:
                made = self.client.call("POST", self.path, ok=(201,), json=payload)
                return PullRequest(int(made["iid"]), str(made.get("web_url", "")), Action.OPENED)
            except PullRequestError as exc:
                # 409 "Another open merge request already exists for this source branch"
                existing = self._find_open(proposal) if exc.status == 409 else None
                if existing is None:
                    raise
        number, url = int(existing["iid"]), str(existing.get("web_url", ""))
        if not refresh:
            return PullRequest(number, url, Action.UNCHANGED)
        self.client.call("PUT", f"{self.path}/{number}", json=text)
        return PullRequest(number, url, Action.UPDATED)
