"""Stand-ins for the forges that cannot run here: GitLab, Bitbucket Cloud and Server, Azure DevOps.

They are SaaS (or licensed servers) with no build we could run on loopback, so each test
that uses one says so. A ``ForgeStandIn`` is a local HTTP (or HTTPS, for Bitbucket Server
behind a private CA) endpoint that implements the documented requests lockgate makes and
answers in the documented shapes, records every request (method, path, query, headers,
JSON body), and refuses a request without the expected credential header with 401, as the
real services do. It keeps open pull requests in memory, per forge:

- GitLab v4: ``POST /projects/:id/statuses/:sha``; ``GET/POST /projects/:id/merge_requests``,
  ``PUT /merge_requests/:iid`` (``iid``, ``web_url``; ``labels`` a comma-separated string).
- Bitbucket Cloud 2.0: ``POST /repositories/:ws/:repo/commit/:sha/statuses/build``;
  ``GET (q=source.branch.name="B" AND state="OPEN")/POST /pullrequests``, ``PUT /pullrequests/:id``.
- Bitbucket Server: ``POST /rest/api/latest/projects/:p/repos/:r/commits/:sha/builds`` (204);
  ``GET (at=refs/heads/B)/POST .../pull-requests``, ``PUT .../pull-requests/:id`` with the
  current ``version`` (else 409, as Bitbucket does).
- Azure DevOps: ``POST /:project/_apis/git/repositories/:repo/commits/:sha/statuses``;
  ``GET (searchCriteria.*)/POST .../pullrequests``, ``PATCH .../pullrequests/:id``,
  ``POST .../pullrequests/:id/labels``; every call carries ``api-version``.

Opening a second pull request between the same two branches is refused as each forge
documents it: GitLab, Bitbucket Server and Azure DevOps answer 409. Bitbucket Cloud does not
document its answer; its stand-in answers what was observed and recorded by a public
Bitbucket Cloud client (an SCM plugin whose ``createPr`` notes that "Bitbucket rejects a second
POST for the same source branch with ``400 There is already an open pull request for this
source branch``"): 400 with Bitbucket's error object ``{"type": "error", "error": {"message"}}``.
"""

from __future__ import annotations

import json
import re
import ssl
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.world.pki import KeyPair

Json = Any


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Json

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)


@dataclass
class ForgeStandIn:
    forge: str
    #: the header that must be present (name, value); anything else is answered 401
    auth: tuple[str, str]
    tls: KeyPair | None = None
    calls: list[Call] = field(default_factory=list)
    pulls: dict[int, dict[str, Json]] = field(default_factory=dict)
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ---- what tests read ------------------------------------------------------------------
    def statuses(self) -> list[Call]:
        return [c for c in self.calls if c.method == "POST" and _STATUS[self.forge].search(c.path)]

    def pull_calls(self) -> list[Call]:
        return [c for c in self.calls if c not in self.statuses()]

    # ---- the endpoint ------------------------------------------------------------------------
    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urllib.parse.urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        call = Call(
            handler.command,
            parts.path,
            dict(urllib.parse.parse_qsl(parts.query)),
            dict(handler.headers.items()),
            json.loads(raw) if raw else None,
        )
        with self._lock:
            self.calls.append(call)
            if call.header(self.auth[0]) != self.auth[1]:
                status, reply = 401, {"message": "401 Unauthorized"}
            else:
                status, reply = self._route(call)
        data = b"" if status == 204 else json.dumps(reply).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _route(self, call: Call) -> tuple[int, Json]:
        if call.method == "POST" and _STATUS[self.forge].search(call.path):
            return (204, None) if self.forge == "bitbucketserver" else (201, call.body)
        route = getattr(self, f"_{self.forge}")
        answer: tuple[int, Json] = route(call)
        return answer

    def _open(self, fields: dict[str, Json]) -> dict[str, Json]:
        number = len(self.pulls) + 1
        self.pulls[number] = {"number": number, "open": True, **fields}
        return self.pulls[number]

    def _twin(self, source: str, target: str, body: Json) -> int | None:
        """The open pull request between the same two branches, which the forges refuse to open twice."""
        for number, pull in self.pulls.items():
            if pull["open"] and (pull.get(source), pull.get(target)) == (body.get(source), body.get(target)):
                return number
        return None

    def _gitlab(self, call: Call) -> tuple[int, Json]:
        match = re.search(r"/merge_requests(?:/(\d+))?$", call.path)
        if match is None:
            return 404, {"message": "404 Not found"}
        if call.method == "GET":
            found = [
                {"iid": p["number"], "web_url": p["web_url"]}
                for p in self.pulls.values()
                if p["source_branch"] == call.query.get("source_branch")
                and p["target_branch"] == call.query.get("target_branch")
                and call.query.get("state") == "opened"
            ]
            return 200, found
        if call.method == "POST":
            twin = self._twin("source_branch", "target_branch", call.body)
            if twin is not None:  # documented: 409 and the existing merge request's reference
                return 409, {
                    "message": [f"Another open merge request already exists for this source branch: !{twin}"]
                }
            pull = self._open({**call.body, "web_url": f"https://gitlab.test/mr/{len(self.pulls) + 1}"})
            return 201, {"iid": pull["number"], "web_url": pull["web_url"]}
        if call.method == "PUT" and match[1]:
            pull = self.pulls[int(match[1])]
            pull.update(call.body)
            return 200, {"iid": pull["number"], "web_url": pull["web_url"]}
        return 405, {"message": "405 Method Not Allowed"}

    def _bitbucket(self, call: Call) -> tuple[int, Json]:
        match = re.search(r"/pullrequests(?:/(\d+))?$", call.path)
        if match is None:
            return 404, {"type": "error", "error": {"message": "Resource not found"}}
        if call.method == "GET":
            branch = re.search(r'source\.branch\.name="([^"]+)"', call.query.get("q", ""))
            found = [
                _bitbucket_pull(p)
                for p in self.pulls.values()
                if branch and p["source"]["branch"]["name"] == branch[1] and 'state="OPEN"' in call.query["q"]
            ]
            return 200, {"values": found, "pagelen": 10, "size": len(found), "page": 1}
        if call.method == "POST":
            if self._twin("source", "destination", call.body) is not None:
                # undocumented; the answer observed and recorded by a public Bitbucket Cloud
                # client (see the module docstring): 400 with Bitbucket's error object
                return 400, {
                    "type": "error",
                    "error": {"message": "There is already an open pull request for this source branch"},
                }
            return 201, _bitbucket_pull(self._open(call.body))
        if call.method == "PUT" and match[1]:
            pull = self.pulls[int(match[1])]
            pull.update(call.body)
            return 200, _bitbucket_pull(pull)
        return 405, {"type": "error", "error": {"message": "Method not allowed"}}

    def _bitbucketserver(self, call: Call) -> tuple[int, Json]:
        match = re.search(r"/pull-requests(?:/(\d+))?$", call.path)
        if match is None:
            return 404, {"errors": [{"message": "not found"}]}
        if call.method == "GET":
            found = [
                _server_pull(p)
                for p in self.pulls.values()
                if p["fromRef"]["id"] == call.query.get("at") and call.query.get("state") == "OPEN"
            ]
            return 200, {"values": found, "size": len(found), "isLastPage": True, "start": 0}
        if call.method == "POST":
            if self._twin("fromRef", "toRef", call.body) is not None:
                return 409, {"errors": [{"message": "Only one pull request may be open for a given source "
                                         "and target branch", "exceptionName": "com.atlassian.bitbucket"
                                         ".pull.DuplicatePullRequestException"}]}  # fmt: skip
            return 201, _server_pull(self._open({**call.body, "version": 0}))
        if call.method == "PUT" and match[1]:
            pull = self.pulls[int(match[1])]
            if call.body.get("version") != pull["version"]:
                return 409, {"errors": [{"message": "You are attempting to modify a pull request based "
                                         "on out-of-date information."}]}  # fmt: skip
            pull.update({k: v for k, v in call.body.items() if k != "version"})
            pull["version"] += 1
            return 200, _server_pull(pull)
        return 405, {"errors": [{"message": "method not allowed"}]}

    def _azuredevops(self, call: Call) -> tuple[int, Json]:
        if "api-version" not in call.query:
            return 400, {"message": "No api-version was supplied for the request."}
        match = re.search(r"/pullrequests(?:/(\d+)(/labels)?)?$", call.path, re.IGNORECASE)
        if match is None:
            return 404, {"message": "TF401019: not found"}
        if call.method == "GET":
            found = [
                {"pullRequestId": p["number"], "status": "active"}
                for p in self.pulls.values()
                if p["sourceRefName"] == call.query.get("searchCriteria.sourceRefName")
                and p["targetRefName"] == call.query.get("searchCriteria.targetRefName")
                and call.query.get("searchCriteria.status") == "active"
            ]
            return 200, {"value": found, "count": len(found)}
        if call.method == "POST" and match[1] and match[2]:
            pull = self.pulls[int(match[1])]
            pull["labels"] = [*pull.get("labels", []), call.body]
            return 200, {"name": call.body["name"], "active": True}
        if call.method == "POST":
            twin = self._twin("sourceRefName", "targetRefName", call.body)
            if twin is not None:
                return 409, {"message": f"TF401179: An active pull request for the source and target branch "
                                        f"already exists. Pull request ID: {twin}"}  # fmt: skip
            pull = self._open(call.body)
            return 201, {"pullRequestId": pull["number"], "status": "active"}
        if call.method == "PATCH" and match[1]:
            pull = self.pulls[int(match[1])]
            pull.update(call.body)
            return 200, {"pullRequestId": pull["number"], "status": "active"}
        return 405, {"message": "method not allowed"}

    @contextmanager
    def running(self) -> Iterator[ForgeStandIn]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                stand_in._handle(self)

            do_PUT = do_POST = do_PATCH = do_GET

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        scheme = "http"
        if self.tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(self.tls.cert, self.tls.key)
            server.socket = context.wrap_socket(server.socket, server_side=True)
            scheme = "https"
        thread = threading.Thread(target=server.serve_forever, name=f"{self.forge}-stand-in", daemon=True)
        thread.start()
        self.url = f"{scheme}://127.0.0.1:{server.server_address[1]}"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()


_STATUS = {
    "gitlab": re.compile(r"^/api/v4/projects/[^/]+/statuses/[0-9a-f]{40}$"),
    "bitbucket": re.compile(r"/repositories/[^/]+/[^/]+/commit/[0-9a-f]{40}/statuses/build$"),
    "bitbucketserver": re.compile(
        r"/rest/api/latest/projects/[^/]+/repos/[^/]+/commits/[0-9a-f]{40}/builds$"
    ),
    "azuredevops": re.compile(r"/_apis/git/repositories/[^/]+/commits/[0-9a-f]{40}/statuses$"),
}


def _bitbucket_pull(pull: dict[str, Json]) -> dict[str, Json]:
    number = pull["number"]
    return {
        "id": number,
        "state": "OPEN",
        "source": pull["source"],
        "destination": pull["destination"],
        "links": {"html": {"href": f"https://bitbucket.test/pull-requests/{number}"}},
    }


def _server_pull(pull: dict[str, Json]) -> dict[str, Json]:
    number = pull["number"]
    return {
        "id": number,
        "version": pull["version"],
        "state": "OPEN",
        "fromRef": pull["fromRef"],
        "toRef": pull["toRef"],
        "links": {"self": [{"href": f"https://bitbucket-server.test/pull-requests/{number}"}]},
    }
