"""Local stand-ins for GitHub's issue-comment API and GitLab's merge-request notes API.

Neither service can run here, so these are not GitHub nor GitLab: each is a loopback HTTP
endpoint implementing, strictly, only the documented requests ``lockgate.forge.comments``
makes, and answering in the documented shapes. Each records every call.

GitHub (REST API version 2022-11-28): ``GET /repos/{owner}/{repo}/issues/{number}/comments``
(``per_page`` at most 100, ``page``), ``POST`` there with a JSON object whose only field is
``body`` (201), ``PATCH /repos/{owner}/{repo}/issues/comments/{id}`` (200), ``GET /user``. A
request without ``Authorization: Bearer`` is 401; an unknown field, a missing or non-string
``body`` or one over 65,536 characters is 422 ("Validation Failed"); a read-only token (a fork's
``GITHUB_TOKEN``) gets 403 "Resource not accessible by integration" on a write, as does any
Actions token on ``GET /user``. Comments written with an Actions token are by
``github-actions[bot]`` (``type: Bot``).

GitLab (v4): ``GET /projects/{id}/merge_requests/{iid}/notes`` (``per_page``, ``page``, ``sort``,
``order_by``), ``POST`` there with ``body`` (201), ``PUT .../notes/{note_id}`` (200), ``GET
/user``; ``PRIVATE-TOKEN`` is required (401 otherwise). A note's author is the token's user.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.integration.images_support import serve_http

MAX_BODY = 65536
BOT = {"login": "github-actions[bot]", "type": "Bot", "id": 41898282}


def _reply(
    handler: BaseHTTPRequestHandler, status: int, value: Any, headers: dict[str, str] | None = None
) -> None:
    data = json.dumps(value).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json; charset=utf-8")
    for name, text in (headers or {}).items():
        handler.send_header(name, text)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _read(handler: BaseHTTPRequestHandler) -> Any:
    length = int(handler.headers.get("Content-Length") or 0)
    return json.loads(handler.rfile.read(length)) if length else None


@dataclass
class GitHubComments:
    """GitHub's issue comments of one repository; ``tokens`` maps a token to its rights."""

    owner: str
    repo: str
    #: token -> "write" or "read" (a pull request from a fork)
    tokens: dict[str, str]
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    url: str = ""

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        parsed = urllib.parse.urlsplit(handler.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        self.calls.append((handler.command, parsed.path))
        auth = handler.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else ""
        if token not in self.tokens:
            return _reply(handler, 401, {"message": "Bad credentials"})
        body = _read(handler)
        parts = parsed.path.strip("/").split("/")
        if parsed.path == "/user":
            return _reply(handler, 403, {"message": "Resource not accessible by integration"})
        if parts[:3] != ["repos", self.owner, self.repo] or len(parts) < 5 or parts[3] != "issues":
            return _reply(handler, 404, {"message": "Not Found"})
        writing = handler.command in ("POST", "PATCH")
        if writing and self.tokens[token] != "write":
            return _reply(handler, 403, {"message": "Resource not accessible by integration"})
        if writing and not (
            isinstance(body, dict) and set(body) == {"body"} and isinstance(body["body"], str)
        ):
            return _reply(handler, 422, {"message": "Validation Failed", "errors": [{"field": "body"}]})
        if writing and len(body["body"]) > MAX_BODY:
            return _reply(
                handler, 422, {"message": "Validation Failed", "errors": [{"message": "Body is too long"}]}
            )
        if len(parts) == 6 and parts[5] == "comments" and parts[4].isdigit():
            number = int(parts[4])
            if handler.command == "GET":
                per_page, page = int(query.get("per_page", "30")), int(query.get("page", "1"))
                if per_page > 100:
                    per_page = 100
                mine = [c for c in self.comments.values() if c["issue"] == number]
                chunk = mine[(page - 1) * per_page : page * per_page]
                return _reply(handler, 200, [{k: v for k, v in c.items() if k != "issue"} for c in chunk])
            if handler.command == "POST":
                comment_id = 1000 + len(self.comments)
                self.comments[comment_id] = {
                    "id": comment_id,
                    "issue": number,
                    "body": body["body"],
                    "user": BOT,
                    "html_url": f"https://github.test/{self.owner}/{self.repo}/pull/{number}#issuecomment-{comment_id}",
                }
                return _reply(
                    handler, 201, {k: v for k, v in self.comments[comment_id].items() if k != "issue"}
                )
        if len(parts) == 6 and parts[4] == "comments" and parts[5].isdigit() and handler.command == "PATCH":
            found = self.comments.get(int(parts[5]))
            if found is None:
                return _reply(handler, 404, {"message": "Not Found"})
            found["body"] = body["body"]
            return _reply(handler, 200, {k: v for k, v in found.items() if k != "issue"})
        return _reply(handler, 404, {"message": "Not Found"})

    @contextmanager
    def running(self) -> Iterator[GitHubComments]:
        with serve_http(self._answer) as port:
            self.url = f"http://127.0.0.1:{port}"
            yield self


@dataclass
class GitLabNotes:
    """GitLab's notes of one project's merge requests; ``token`` is a user's (``username``)."""

    project: str
    token: str
    username: str = "preview-bot"
    notes: dict[int, dict[str, Any]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    url: str = ""

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        parsed = urllib.parse.urlsplit(handler.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        self.calls.append((handler.command, parsed.path))
        if handler.headers.get("PRIVATE-TOKEN") != self.token:
            return _reply(handler, 401, {"message": "401 Unauthorized"})
        body = _read(handler)
        if parsed.path == "/api/v4/user":
            return _reply(handler, 200, {"id": 7, "username": self.username})
        prefix = f"/api/v4/projects/{urllib.parse.quote(self.project, safe='')}/merge_requests/"
        raw = handler.path.split("?")[0]
        if not raw.startswith(prefix):
            return _reply(handler, 404, {"message": "404 Project Not Found"})
        rest = raw[len(prefix) :].split("/")
        if len(rest) >= 2 and rest[1] == "notes" and rest[0].isdigit():
            iid = int(rest[0])
            if len(rest) == 2 and handler.command == "GET":
                per_page, page = min(int(query.get("per_page", "20")), 100), int(query.get("page", "1"))
                mine = [n for n in self.notes.values() if n["noteable_iid"] == iid]
                return _reply(handler, 200, mine[(page - 1) * per_page : page * per_page])
            if len(rest) == 2 and handler.command == "POST" and isinstance(body, dict) and "body" in body:
                note_id = 500 + len(self.notes)
                self.notes[note_id] = {
                    "id": note_id,
                    "body": body["body"],
                    "author": {"id": 7, "username": self.username},
                    "system": False,
                    "noteable_iid": iid,
                }
                return _reply(handler, 201, self.notes[note_id])
            if len(rest) == 3 and handler.command == "PUT" and isinstance(body, dict) and "body" in body:
                found = self.notes.get(int(rest[2]))
                if found is None:
                    return _reply(handler, 404, {"message": "404 Not found"})
                found["body"] = body["body"]
                return _reply(handler, 200, found)
        return _reply(handler, 400, {"message": "400 Bad request"})

    @contextmanager
    def running(self) -> Iterator[GitLabNotes]:
        with serve_http(self._answer) as port:
            self.url = f"http://127.0.0.1:{port}"
            yield self
