"""Gitea and Forgejo: a commit status and one pull request per branch (API v1, as Flux's ``gitea``).

Status: ``POST {base}/api/v1/repos/OWNER/REPO/statuses/SHA`` with ``state`` (pending,
success, failure), ``context``, ``description``, ``target_url``. Pull request: the open
pulls are listed (``GET /repos/OWNER/REPO/pulls?state=open``) and the one whose head is the
branch is updated (``PATCH /pulls/N``) or one is opened (``POST /pulls``). Labels are
IDs in Gitea: a name the repository lacks is created first (``POST /labels``). The token
goes in ``Authorization: token ...``.
"""

from __future__ import annotations

from typing import Any

from lockgate.forge import github
from lockgate.forge.base import Client, Credentials, OnePullRequest, Proposal
from lockgate.forge.remote import Repository

_PAGE = 50
_LABEL_COLOR = "#ededed"


def api_root(repository: Repository) -> str:
    return f"{repository.base_url}/api/v1"


def headers(credentials: Credentials) -> dict[str, str]:
    return {"Authorization": f"token {credentials.token}"}


# Gitea's status API is GitHub's (the same path, body and states): one implementation
status_request = github.status_request


class PullRequests(OnePullRequest):
    # 409 "pull request already exists for these targets"
    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self.path = github.repo_path(client.repository)

    def find_open(self, proposal: Proposal) -> dict[str, Any] | None:
        page = 1
        while True:
            found = self.client.call(
                "GET", f"{self.path}/pulls", params={"state": "open", "page": str(page), "limit": str(_PAGE)}
            )
            if not isinstance(found, list) or not found:
                return None
            for pull in found:
                head, into = pull.get("head") or {}, pull.get("base") or {}
                if head.get("ref") == proposal.branch and into.get("ref") == proposal.base:
                    return dict(pull)
            if len(found) < _PAGE:
                return None
            page += 1

    def create(self, proposal: Proposal) -> dict[str, Any]:
        payload = {**self._text(proposal), "head": proposal.branch, "base": proposal.base}
        return dict(self.client.call("POST", f"{self.path}/pulls", ok=(201,), json=payload))

    def identify(self, pull: dict[str, Any]) -> tuple[int, str]:
        return int(pull["number"]), str(pull.get("html_url", ""))

    def rewrite(self, number: int, pull: dict[str, Any], proposal: Proposal) -> None:
        self.client.call("PATCH", f"{self.path}/pulls/{number}", ok=(200, 201), json=self._text(proposal))

    def _text(self, proposal: Proposal) -> dict[str, Any]:
        text: dict[str, Any] = {"title": proposal.title, "body": proposal.body}
        if proposal.labels:
            text["labels"] = self._label_ids(proposal.labels)
        return text

    def _label_ids(self, names: tuple[str, ...]) -> list[int]:
        known: dict[str, int] = {}
        listed = self.client.call("GET", f"{self.path}/labels", params={"limit": "100"})
        for label in listed if isinstance(listed, list) else []:
            known[str(label.get("name"))] = int(label["id"])
        for name in names:
            if name not in known:
                made = self.client.call(
                    "POST", f"{self.path}/labels", ok=(201,), json={"name": name, "color": _LABEL_COLOR}
                )
                known[name] = int(made["id"])
        return [known[name] for name in names]
