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
    Client,
    Credentials,
    OnePullRequest,
    Proposal,
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


class PullRequests(OnePullRequest):
    # 409 "Another open merge request already exists for this source branch"
    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self.path = project_path(client.repository) + "/merge_requests"

    def find_open(self, proposal: Proposal) -> dict[str, Any] | None:
        found = self.client.call(
            "GET",
            self.path,
            params={"state": "opened", "source_branch": proposal.branch, "target_branch": proposal.base},
        )
        return dict(found[0]) if isinstance(found, list) and found else None

    def create(self, proposal: Proposal) -> dict[str, Any]:
        payload = {**_text(proposal), "source_branch": proposal.branch, "target_branch": proposal.base}
        return dict(self.client.call("POST", self.path, ok=(201,), json=payload))

    def identify(self, pull: dict[str, Any]) -> tuple[int, str]:
        return int(pull["iid"]), str(pull.get("web_url", ""))

    def rewrite(self, number: int, pull: dict[str, Any], proposal: Proposal) -> None:
        self.client.call("PUT", f"{self.path}/{number}", json=_text(proposal))


def _text(proposal: Proposal) -> dict[str, Any]:
    text: dict[str, Any] = {"title": proposal.title, "description": proposal.body}
    if proposal.labels:
        text["labels"] = ",".join(proposal.labels)  # GitLab takes one comma-separated string
    return text
