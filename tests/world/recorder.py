"""A local HTTP endpoint that records what it is sent: the stand-in for GitHub's REST API, Slack
and (with ``judge=tests.world.teams.judge``) a Microsoft Teams workflow.

GitHub and Slack are SaaS that cannot run here; everything else the notification tests use
is the real world. The recorder answers every POST with ``status`` (settable, e.g. 500 to
test retries), unless its ``judge`` refuses the request (``refusals``), and keeps each request
(method, path, headers, body). For GitHub it also answers
``GET /repos/OWNER/REPO/commits/SHA/statuses`` with the statuses posted so far, newest first,
as GitHub does, so a demo can show "the commit status landed".

``python -m tests.world.recorder [PORT]`` runs one in the foreground and prints each request.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_STATUSES = re.compile(
    r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/(?:statuses|commits)/(?P<sha>[^/]+)(?:/statuses)?$"
)


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        for key, value in self.headers.items():
            if key.lower() == name.lower():
                return value
        return None


#: a stand-in's judgement of one request: None to answer ``status``, else (status, body)
Judge = Callable[[Recorded], "tuple[int, bytes] | None"]


class Recorder:
    def __init__(
        self, *, status: int = 201, port: int = 0, echo: bool = False, judge: Judge | None = None
    ) -> None:
        self.status = status
        self.echo = echo
        self.judge = judge
        #: (path, the refusal's body) of every request the judge refused
        self.refusals: list[tuple[str, bytes]] = []
        self._requests: list[Recorded] = []
        self._lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                recorded = Recorded("POST", self.path, dict(self.headers.items()), body)
                recorder._record(recorded)
                status = recorder.status
                payload = b'{"message":"recorded"}' if status < 300 else b'{"message":"recorder says no"}'
                refused = recorder.judge(recorded) if recorder.judge is not None else None
                if refused is not None:
                    status, payload = refused
                    with recorder._lock:
                        recorder.refusals.append((self.path, payload))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                match = _STATUSES.match(self.path)
                if match is None:
                    self.send_error(404)
                    return
                posted = [
                    r.json()
                    for r in recorder.requests()
                    if r.path == f"/repos/{match['owner']}/{match['repo']}/statuses/{match['sha']}"
                ]
                payload = json.dumps(list(reversed(posted))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="recorder", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _record(self, recorded: Recorded) -> None:
        with self._lock:
            self._requests.append(recorded)
        if self.echo:
            print(f"{recorded.method} {recorded.path} {recorded.body.decode(errors='replace')}", flush=True)

    def requests(self, path: str | None = None) -> list[Recorded]:
        with self._lock:
            return [r for r in self._requests if path is None or r.path == path]

    def statuses(self, owner: str, repo: str, sha: str) -> list[dict[str, Any]]:
        """The commit statuses posted for ``owner/repo@sha``, oldest first."""
        return [r.json() for r in self.requests(f"/repos/{owner}/{repo}/statuses/{sha}")]

    def wait_for(
        self, predicate: Callable[[list[Recorded]], bool], *, timeout: float = 60, what: str = ""
    ) -> list[Recorded]:
        """Poll until ``predicate(requests)``; fails naming ``what`` and what was recorded."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen = self.requests()
            if predicate(seen):
                return seen
            time.sleep(0.05)
        shown = "\n".join(f"  {r.method} {r.path} {r.body[:300]!r}" for r in self.requests()) or "  nothing"
        raise AssertionError(f"the recorder did not see {what} within {timeout}s; it recorded:\n{shown}")

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def main(argv: list[str]) -> int:
    recorder = Recorder(port=int(argv[0]) if argv else 0, echo=True)
    print(f"recording on {recorder.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        recorder.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
