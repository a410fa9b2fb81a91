"""Helpers for the image automation tests: seed tags fast, and a page-capping registry proxy.

``seed_tags`` stores one config blob, then PUTs a manifest under every tag from a thread
pool (a thousand tags take seconds, not minutes). ``CappingProxy`` stands in front of the
world's real registry and behaves like registries that cap the page size (IRC #585, #931):
it serves ``/v2/<repo>/tags/list`` in pages of at most ``cap`` tags with a ``Link`` header
to the next page, and can answer ``429 Too Many Requests`` with ``Retry-After`` first.
Distribution 2.8 itself ignores ``n`` and returns every tag at once, so the proxy asks it
for the full list and paginates it, in lexical order with ``last=`` as the spec says;
every other request is forwarded unchanged (authentication challenges included).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests

from lockgate import registry
from lockgate.registry import oci


@contextmanager
def serve_http(handle: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[int]:
    """A threaded HTTP server on a free loopback port that hands every request to ``handle``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            handle(self)

        do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = do_GET

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


CONFIG = "application/vnd.oci.image.config.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
LOCKGATE = [sys.executable, "-m", "lockgate"]


def seed_tags(
    host: str,
    repo: str,
    tags: list[str],
    *,
    credentials: registry.Credentials | None = None,
    workers: int = 8,
) -> dict[str, str]:
    """Push ``tags`` to ``host/repo``, each a distinct tiny manifest sharing one config blob."""
    ref = registry.parse(f"{host}/{repo}")
    client = registry.RegistryClient.for_reference(ref, credentials=credentials)
    blob = b"{}"
    config = oci.Descriptor(CONFIG, oci.sha256_digest(blob), len(blob))
    client.upload_blob(repo, blob, digest=config.digest, size=len(blob))
    local = threading.local()

    def put(tag: str) -> tuple[str, str]:
        if not hasattr(local, "client"):
            local.client = registry.RegistryClient.for_reference(ref, credentials=credentials)
        manifest = oci.ImageManifest(config=config, layers=(), annotations={"tag": tag})
        return tag, local.client.put_manifest(repo, tag, manifest.to_bytes(), MANIFEST)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(pool.map(put, tags))


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, str]
    status: int
    at: float


@dataclass
class CappingProxy:
    """A reverse proxy on 127.0.0.1 that caps tag-list pages at ``cap`` and can throttle."""

    upstream: str  #: host:port of the real registry
    cap: int = 100
    throttle: int = 0  #: answer this many tag-list requests with 429 first
    retry_after: str = "1"
    seen: list[Seen] = field(default_factory=list)
    host: str = ""

    def tag_pages(self) -> list[Seen]:
        return [s for s in self.seen if s.path.endswith("/tags/list")]

    def _tags(self, handler: BaseHTTPRequestHandler, repo: str, query: dict[str, str]) -> int:
        if self.throttle > 0:
            self.throttle -= 1
            handler.send_response(429)
            handler.send_header("Retry-After", self.retry_after)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return 429
        headers = {k: v for k, v in handler.headers.items() if k.lower() == "authorization"}
        upstream = requests.get(f"http://{self.upstream}/v2/{repo}/tags/list", headers=headers, timeout=30)
        if upstream.status_code != 200:
            return self._relay(handler, upstream)
        tags = sorted(upstream.json().get("tags") or [])
        if "last" in query:
            tags = [t for t in tags if t > query["last"]]
        n = min(int(query.get("n") or self.cap), self.cap)
        page, more = tags[:n], len(tags) > n
        body = json.dumps({"name": repo, "tags": page}).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        if more:
            next_query = urllib.parse.urlencode({"n": n, "last": page[-1]})
            handler.send_header("Link", f'</v2/{repo}/tags/list?{next_query}>; rel="next"')
        handler.end_headers()
        handler.wfile.write(body)
        return 200

    @staticmethod
    def _relay(handler: BaseHTTPRequestHandler, response: requests.Response) -> int:
        body = response.content
        handler.send_response(response.status_code)
        for name, value in response.headers.items():
            if name.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding"):
                handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(body)
        return response.status_code

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        parsed = urllib.parse.urlsplit(handler.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        if handler.command == "GET" and parsed.path.startswith("/v2/") and parsed.path.endswith("/tags/list"):
            status = self._tags(handler, parsed.path[len("/v2/") : -len("/tags/list")], query)
        else:
            length = int(handler.headers.get("Content-Length") or 0)
            data = handler.rfile.read(length) if length else None
            headers = {
                k: v for k, v in handler.headers.items() if k.lower() not in ("host", "content-length")
            }
            upstream = requests.request(
                handler.command,
                f"http://{self.upstream}{handler.path}",
                headers=headers,
                data=data,
                timeout=30,
                allow_redirects=False,
            )
            status = self._relay(handler, upstream)
        self.seen.append(Seen(handler.command, parsed.path, query, status, time.monotonic()))

    @contextmanager
    def running(self) -> Iterator[CappingProxy]:
        with serve_http(self._handle) as port:
            self.host = f"127.0.0.1:{port}"
            yield self


def docker_config(path: Path, host: str, username: str, password: str) -> Path:
    """A Docker config JSON (the content of a dockerconfigjson Secret) at ``path``."""
    import base64

    auth = base64.b64encode(f"{username}:{password}".encode()).decode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"auths": {host: {"auth": auth}}}))
    return path


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def lockgate(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Run:
    """The real CLI in a child process (exit codes and error printing as users see them)."""
    proc = subprocess.run(
        [*LOCKGATE, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=300,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def native_config(root: Path, images: list[str], *, namespace: str = "apps", path: str = "deploy") -> Path:
    """A lockgate-native ImageAutomation with one entry per flow mapping in ``images``."""
    body = "".join(f"    - {image}\n" for image in images)
    target = root / "images.yaml"
    target.write_text(
        "apiVersion: lockgate.dev/v1alpha1\nkind: ImageAutomation\n"
        f"metadata: {{name: web, namespace: {namespace}}}\n"
        f"spec:\n  git: {{author: {{email: bot@example.com}}}}\n  update: {{path: {path}}}\n  images:\n{body}"
    )
    return target


def flux_config(root: Path, name: str, image: str, *, secret: str | None = None, semver: str = "*") -> Path:
    """Flux ImageRepository + ImagePolicy in namespace ``apps``."""
    secret_ref = f"  secretRef:\n    name: {secret}\n" if secret else ""
    target = root / f"{name}.yaml"
    target.write_text(
        "apiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImageRepository\n"
        f"metadata: {{name: {name}, namespace: apps}}\nspec:\n  image: {image}\n{secret_ref}"
        "---\napiVersion: image.toolkit.fluxcd.io/v1beta2\nkind: ImagePolicy\n"
        f"metadata: {{name: {name}, namespace: apps}}\nspec:\n  imageRepositoryRef: {{name: {name}}}\n"
        f"  policy:\n    semver:\n      range: '{semver}'\n"
    )
    return target


@dataclass
class GitHubStandIn:
    """A local HTTP endpoint standing in for GitHub's pull-request REST API; it records calls.

    It is not GitHub: it keeps open pull requests in a dict and answers the four calls
    ``--pr`` makes (list by head, create, update) with the fields lockgate reads; a second
    open pull request from one branch is refused with 422, as GitHub does.
    """

    calls: list[dict[str, object]] = field(default_factory=list)
    pulls: dict[int, dict[str, object]] = field(default_factory=dict)
    url: str = ""

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        parsed = urllib.parse.urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length)) if length else None
        self.calls.append(
            {
                "method": handler.command,
                "path": parsed.path,
                "query": dict(urllib.parse.parse_qsl(parsed.query)),
                "authorization": handler.headers.get("Authorization"),
                "body": body,
            }
        )
        status, reply = self._route(
            handler.command, parsed.path, dict(urllib.parse.parse_qsl(parsed.query)), body
        )
        data = json.dumps(reply).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _route(self, method: str, path: str, query: dict[str, str], body: object) -> tuple[int, object]:
        parts = path.strip("/").split("/")  # repos, owner, name, pulls[, number]
        if len(parts) < 4 or parts[0] != "repos" or parts[3] != "pulls":
            return 404, {"message": "Not Found"}
        owner = parts[1]
        if method == "GET" and len(parts) == 4:
            head, base = query.get("head", ""), query.get("base")
            found = [
                p
                for p in self.pulls.values()
                if f"{owner}:{p['head']}" == head and p["state"] == "open" and base in (None, p["base"])
            ]
            return 200, found
        if method == "POST" and len(parts) == 4 and isinstance(body, dict):
            if any(p["head"] == body["head"] and p["state"] == "open" for p in self.pulls.values()):
                # documented: 422 Validation Failed, "A pull request already exists for OWNER:BRANCH."
                message = f"A pull request already exists for {owner}:{body['head']}."
                return 422, {"message": "Validation Failed", "errors": [{"message": message}]}
            number = len(self.pulls) + 1
            pull = {
                **body,
                "number": number,
                "state": "open",
                "html_url": f"https://github.test/pull/{number}",
            }
            self.pulls[number] = pull
            return 201, pull
        if method == "PATCH" and len(parts) == 5 and isinstance(body, dict):
            pull = self.pulls[int(parts[4])]
            pull.update(body)
            return 200, pull
        return 422, {"message": "Validation Failed"}

    @contextmanager
    def running(self) -> Iterator[GitHubStandIn]:
        with serve_http(self._answer) as port:
            self.url = f"http://127.0.0.1:{port}"
            yield self
