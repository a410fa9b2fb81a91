"""Bitbucket Cloud: a commit status and one pull request per branch (API 2.0, as Flux's ``bitbucket``).

Status: ``POST https://api.bitbucket.org/2.0/repositories/WORKSPACE/REPO/commit/SHA/
statuses/build`` with ``state`` (INPROGRESS, SUCCESSFUL, FAILED), ``key`` (Bitbucket takes
at most 40 characters: the SHA-1 of the context in hex, as Flux), ``name`` (the context),
``description`` and ``url`` (required: the target URL, else bitbucket.org, as Flux).
Pull request: ``GET /pullrequests?q=source.branch.name="B" AND state="OPEN"``, then
``PUT /pullrequests/ID`` or ``POST /pullrequests``. Bitbucket pull requests have no
labels: they are listed in the description instead. The token is ``user:app-password``
(HTTP Basic, Flux's format) or an access token (Bearer).
"""

from __future__ import annotations

import hashlib
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

PUBLIC_API = "https://api.bitbucket.org/2.0"
_STATE = {"pending": "INPROGRESS", "success": "SUCCESSFUL", "failure": "FAILED"}


def api_root(repository: Repository) -> str:
    del repository  # Bitbucket Cloud has one API
    return PUBLIC_API


def key_of(context: str) -> str:
    """Bitbucket's build key holds 40 characters: the context's SHA-1 (Flux's choice too)."""
    return hashlib.sha1(context.encode()).hexdigest()


def headers(credentials: Credentials) -> dict[str, str]:
    if ":" in credentials.token or credentials.password:
        return {"Authorization": credentials.basic()}
    return {"Authorization": f"Bearer {credentials.token}"}


def _repo_path(repository: Repository) -> str:
    return f"/repositories/{quote(repository.owner, safe='')}/{quote(repository.name, safe='')}"


def status_request(repository: Repository, sha: str, status: Status, *, root: str) -> Request:
    body = {
        "state": _STATE[status.state],
        "key": key_of(status.context),
        "name": status.context,
        "description": status.description,
        "url": status.target_url or "https://bitbucket.org",
    }
    return Request("POST", f"{root}{_repo_path(repository)}/commit/{sha}/statuses/build", body)


def description(proposal: Proposal) -> str:
    if not proposal.labels:
        return proposal.body
    return f"{proposal.body}\n\nLabels: {', '.join(proposal.labels)}"


class PullRequests(OnePullRequest):
    conflict = (400, 409)  # Bitbucket Cloud answers 400 for a second open pull request

    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self.path = _repo_path(client.repository) + "/pullrequests"

    def find_open(self, proposal: Proposal) -> dict[str, Any] | None:
        query = f'source.branch.name="{proposal.branch}" AND state="OPEN"'
        found = self.client.call("GET", self.path, params={"q": query})
        for pull in found.get("values", []) if isinstance(found, dict) else []:
            if ((pull.get("destination") or {}).get("branch") or {}).get("name") in (None, proposal.base):
                return dict(pull)
        return None

    def create(self, proposal: Proposal) -> dict[str, Any]:
        payload = {
            **_text(proposal),
            "source": {"branch": {"name": proposal.branch}},
            "destination": {"branch": {"name": proposal.base}},
        }
        return dict(self.client.call("POST", self.path, ok=(201,), json=payload))

    def identify(self, pull: dict[str, Any]) -> tuple[int, str]:
        return int(pull["id"]), str(((pull.get("links") or {}).get("html") or {}).get("href", ""))

    def rewrite(self, number: int, pull: dict[str, Any], proposal: Proposal) -> None:
        self.client.call("PUT", f"{self.path}/{number}", json=_text(proposal))


def _text(proposal: Proposal) -> dict[str, str]:
    return {"title": proposal.title, "description": description(proposal)}
