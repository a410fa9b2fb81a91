"""One comment per pull request and workflow, kept current: GitHub, GitLab (a merge-request note), Gitea.

A CI job that reports on a pull request on every push should leave one comment, rewritten in
place, never one more per run. The comment carries a hidden marker (``marker``: the workflow's
key) on its first line; ``OneComment.ensure`` lists the pull request's comments, takes the
first one that begins with the marker and was written by the token's own user (``whoami``; a
GitHub Actions token may not ask, so there a comment by a bot account counts), rewrites its
body when it differs, or creates one. Each forge says only how to list, create and rewrite,
with its documented requests:

- GitHub: ``GET /repos/O/R/issues/N/comments`` (``per_page``/``page``), ``POST`` to the same
  path, ``PATCH /repos/O/R/issues/comments/ID``; ``GET /user`` for the token's login.
- GitLab: ``GET /projects/ID/merge_requests/IID/notes`` (``per_page``/``page``; system notes
  left out), ``POST`` to the same path, ``PUT .../notes/NOTE_ID``; ``GET /user``.
- Gitea and Forgejo: GitHub's paths under ``/api/v1`` (``GET .../issues/N/comments``,
  ``POST``, ``PATCH /repos/O/R/issues/comments/ID``), ``GET /user``.

A token that may not write (a pull request from a fork gets a read-only one) is answered 401
or 403: ``post`` returns ``skipped`` with why, never an error, since the preview is in the
job's log and summary all the same.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from lockgate.errors import AuthError
from lockgate.forge import github, gitlab, module
from lockgate.forge.base import Client, Credentials, PullRequestError
from lockgate.forge.remote import ForgeName, Repository

_PAGE = 100
#: pages read at most while looking for the comment (10,000 comments)
MAX_PAGES = 100
_KEY = re.compile(r"[^A-Za-z0-9._/ :-]")


def marker(key: str) -> str:
    """The hidden first line that names the comment's workflow (HTML comment, never shown)."""
    safe = _KEY.sub("-", key).replace("--", "-").strip() or "lockgate"
    return f"<!-- lockgate:{safe} -->"


@dataclass(frozen=True)
class Posted:
    #: created, updated, unchanged or skipped
    status: str
    url: str = ""
    reason: str = ""

    def to_json(self) -> dict[str, str]:
        return {"status": self.status, "url": self.url, "reason": self.reason}


class OneComment(ABC):
    #: a comment by such an author counts when the token cannot tell its own name
    bots_count = False

    def __init__(self, client: Client, number: int) -> None:
        self.client = client
        self.number = number

    @abstractmethod
    def comments(self) -> Iterator[dict[str, Any]]:
        """The pull request's comments, oldest first."""

    @abstractmethod
    def create(self, body: str) -> dict[str, Any]: ...

    @abstractmethod
    def rewrite(self, comment: dict[str, Any], body: str) -> dict[str, Any]: ...

    @abstractmethod
    def author(self, comment: dict[str, Any]) -> tuple[str, bool]:
        """(login, is a bot account)."""

    @abstractmethod
    def link(self, comment: dict[str, Any]) -> str: ...

    def whoami(self) -> str | None:
        """The token's user, or None when the forge does not tell it to this token."""
        try:
            found = self.client.call("GET", "/user")
        except (AuthError, PullRequestError):
            return None
        name = found.get("login") or found.get("username") if isinstance(found, dict) else None
        return str(name) if name else None

    def _pages(self, path: str, params: dict[str, str]) -> Iterator[dict[str, Any]]:
        for page in range(1, MAX_PAGES + 1):
            found = self.client.call(
                "GET", path, params={**params, "per_page": str(_PAGE), "page": str(page)}
            )
            if not isinstance(found, list):
                return
            yield from (c for c in found if isinstance(c, dict))
            if len(found) < _PAGE:
                return

    def ensure(self, key: str, body: str) -> Posted:
        text = f"{marker(key)}\n{body}"
        me = self.whoami()
        for comment in self.comments():
            if not str(comment.get("body", "")).startswith(marker(key)):
                continue
            login, bot = self.author(comment)
            if (me is not None and login != me) or (me is None and not (bot and self.bots_count)):
                continue
            if comment.get("body") == text:
                return Posted("unchanged", self.link(comment))
            return Posted("updated", self.link(self.rewrite(comment, text)))
        return Posted("created", self.link(self.create(text)))


class GitHubComment(OneComment):
    bots_count = True  # github-actions[bot]: an Actions token may not read GET /user

    def __init__(self, client: Client, number: int) -> None:
        super().__init__(client, number)
        self.path = github.repo_path(client.repository)

    def comments(self) -> Iterator[dict[str, Any]]:
        return self._pages(f"{self.path}/issues/{self.number}/comments", {})

    def create(self, body: str) -> dict[str, Any]:
        return dict(
            self.client.call(
                "POST", f"{self.path}/issues/{self.number}/comments", ok=(201,), json={"body": body}
            )
        )

    def rewrite(self, comment: dict[str, Any], body: str) -> dict[str, Any]:
        path = f"{self.path}/issues/comments/{int(comment['id'])}"
        return dict(self.client.call("PATCH", path, json={"body": body}))

    def author(self, comment: dict[str, Any]) -> tuple[str, bool]:
        user = comment.get("user") or {}
        return str(user.get("login", "")), user.get("type") == "Bot"

    def link(self, comment: dict[str, Any]) -> str:
        return str(comment.get("html_url", ""))


class GiteaComment(GitHubComment):
    bots_count = False  # Gitea's tokens may always ask who they are

    def comments(self) -> Iterator[dict[str, Any]]:
        found = self.client.call("GET", f"{self.path}/issues/{self.number}/comments")
        return iter([c for c in found if isinstance(c, dict)] if isinstance(found, list) else [])

    def rewrite(self, comment: dict[str, Any], body: str) -> dict[str, Any]:
        path = f"{self.path}/issues/comments/{int(comment['id'])}"
        return dict(self.client.call("PATCH", path, ok=(200, 201), json={"body": body}))


class GitLabNote(OneComment):
    def __init__(self, client: Client, number: int) -> None:
        super().__init__(client, number)
        self.path = f"{gitlab.project_path(client.repository)}/merge_requests/{number}/notes"

    def comments(self) -> Iterator[dict[str, Any]]:
        return (
            n
            for n in self._pages(self.path, {"sort": "asc", "order_by": "created_at"})
            if not n.get("system")
        )

    def create(self, body: str) -> dict[str, Any]:
        return dict(self.client.call("POST", self.path, ok=(201,), json={"body": body}))

    def rewrite(self, comment: dict[str, Any], body: str) -> dict[str, Any]:
        return dict(self.client.call("PUT", f"{self.path}/{int(comment['id'])}", json={"body": body}))

    def author(self, comment: dict[str, Any]) -> tuple[str, bool]:
        author = comment.get("author") or {}
        return str(author.get("username", "")), bool(author.get("bot"))

    def link(self, comment: dict[str, Any]) -> str:
        repo = self.client.repository
        return (
            f"{repo.base_url}/{quote(repo.slug)}/-/merge_requests/{self.number}#note_{comment.get('id', '')}"
        )


_KINDS: dict[ForgeName, type[OneComment]] = {
    "github": GitHubComment,
    "gitea": GiteaComment,
    "gitlab": GitLabNote,
}


def one_comment(repository: Repository, number: int, token: str, *, api_root: str) -> OneComment:
    kind = _KINDS.get(repository.forge)
    if kind is None:
        raise PullRequestError(
            f"comments on {repository.forge} pull requests are not supported (github, gitlab, gitea)"
        )
    forge = module(repository.forge)
    client = Client(repository.forge, repository, api_root, forge.headers(Credentials(token=token)))
    return kind(client, number)


def post(comment: OneComment, key: str, body: str) -> Posted:
    """``ensure`` the comment; a token that may not write skips it, with why."""
    try:
        return comment.ensure(key, body)
    except AuthError as exc:
        return Posted(
            "skipped",
            reason="the token may not write comments here (a pull request from a fork gets a "
            f"read-only one): {exc.message}",
        )
