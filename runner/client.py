"""The one seam to the Kubernetes API: raw REST over ``requests`` with the kubeconfig's credentials.

Why not the ``kubernetes`` package's typed client: lockgate speaks plain dicts, which go
straight into server-side apply bodies and come straight out of lists, with no
per-object model (de)serialisation, and it discovers resources lazily, one
group-version when first needed. This client is safe to share between threads (one
pooled ``requests.Session``) and counts requests per verb so passes can report their
cost. Credentials come from ``runner.kube.kubeconfig`` and are set up by
``runner.kube.auth`` (TLS in memory, the header per request, one renewal after a 401).
Credentials never appear in messages.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from lockgate.errors import ApplyError, AuthError
from runner.kube import auth, kubeconfig

APPLY_PATCH = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
TIMEOUT = 60.0
RETRIES = 8


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def display(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str = "", name: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


class KubeError(ApplyError):
    """The API server refused a request; ``status`` and ``reason`` are its answer."""

    def __init__(self, message: str, *, status: int, reason: str, server_message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.server_message = server_message

    @property
    def is_immutable(self) -> bool:
        text = self.server_message.lower()
        return self.reason in ("Conflict", "Invalid") and (
            "immutable" in text or "field is immutable" in text
        )


class PermissionDenied(KubeError):
    """RBAC said no: the message names the verb and the resource to grant."""


class NotFoundError(KubeError):
    pass


_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class Kube:
    """A client for one API server. Build it with ``from_kubeconfig`` (in-cluster without a kubeconfig)."""

    def __init__(self, server: str, session: requests.Session, *, authenticator: auth.Authenticator) -> None:
        """``session`` comes from ``auth.session_for`` (TLS, pool size); ``authenticator`` is its ``auth``."""
        self.server = server.rstrip("/")
        self.session = session
        self.authenticator = authenticator
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._discovery: dict[str, dict[str, Resource]] = {}

    @classmethod
    def from_kubeconfig(cls, path: Path | None = None, *, context: str | None = None, pool: int = 16) -> Kube:
        """From ``path``, the merged ``$KUBECONFIG`` or ``~/.kube/config``; in-cluster when none exists."""
        credentials = kubeconfig.load(path, context)
        session, authenticator = auth.session_for(credentials, pool=pool)
        return cls(credentials.server, session, authenticator=authenticator)

    # ---- transport -----------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        stream: bool = False,
        timeout: float = TIMEOUT,
        what: str = "",
        resource: Resource | None = None,
        namespace: str = "",
    ) -> requests.Response:
        verb = "list" if method == "GET" and what == "list" else ("watch" if stream else _VERBS[method])
        data = json.dumps(body, separators=(",", ":")).encode() if body is not None else None
        headers = {"Content-Type": content_type, "Accept": "application/json"} if data else {}
        reauthenticated = False
        for attempt in range(RETRIES + 1):
            with self._lock:
                self.counts[verb] += 1
            try:
                response = self.session.request(
                    method,
                    self.server + path,
                    params=params,
                    data=data,
                    headers=headers,
                    stream=stream,
                    timeout=(10, timeout),
                )
            except requests.RequestException as exc:
                raise ApplyError(
                    f"cannot reach the Kubernetes API at {self.server}: {type(exc).__name__}"
                ) from None
            # a rotated token or an expired plugin credential: renew once and send again
            if (
                response.status_code == 401
                and not reauthenticated
                and attempt < RETRIES
                and self.authenticator.refresh()
            ):
                reauthenticated = True
                response.close()
                continue
            # 429 also means "storage is (re)initializing" for a just-established CRD
            if response.status_code not in (429, 503) or attempt == RETRIES:
                break
            response.close()
            time.sleep(_retry_after(response.headers.get("Retry-After"), attempt))
        if response.status_code >= 400:
            raise _error(response, verb, resource, namespace, what)
        return response

    @property
    def total_requests(self) -> int:
        return sum(self.counts.values())

    # ---- discovery -----------------------------------------------------------------
    def _group_version(self, api_version: str, *, refresh: bool = False) -> dict[str, Resource]:
        with self._lock:
            known = self._discovery.get(api_version)
        if known is not None and not refresh:
            return known
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        group, _, version = api_version.rpartition("/")
        try:
            body = self.request("GET", path, what=f"discover {api_version}").json()
        except NotFoundError:
            body = {"resources": []}
        found = {
            r["kind"]: Resource(group, version, r["kind"], r["name"], bool(r.get("namespaced")))
            for r in body.get("resources", [])
            if "/" not in r["name"]
        }
        with self._lock:
            self._discovery[api_version] = found
        return found

    def resource(self, api_version: str, kind: str) -> Resource:
        """The REST resource of a kind; discovery is refreshed once on a miss (new CRDs)."""
        found = self._group_version(api_version).get(kind) or self._group_version(
            api_version, refresh=True
        ).get(kind)
        if found is None:
            raise ApplyError(
                f"the cluster has no kind {kind} in {api_version}: install its CRD first, "
                "or include the CustomResourceDefinition in the artifact"
            )
        return found

    def knows(self, api_version: str, kind: str) -> bool:
        try:
            self.resource(api_version, kind)
            return True
        except ApplyError:
            return False

    # ---- verbs ---------------------------------------------------------------------
    def get(self, res: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return dict(
                self.request("GET", res.path(namespace, name), resource=res, namespace=namespace).json()
            )
        except NotFoundError:
            return None

    def list_all(
        self, res: Resource, namespace: str = "", *, label_selector: str | None = None, limit: int = 500
    ) -> Iterator[dict[str, Any]]:
        """Every object, page by page (so memory stays bounded); the last page's list is yielded too."""
        params: dict[str, str] = {"limit": str(limit)}
        if label_selector:
            params["labelSelector"] = label_selector
        while True:
            page = self.request(
                "GET", res.path(namespace), params=params, what="list", resource=res, namespace=namespace
            ).json()
            for item in page.get("items") or []:
                # list items carry no apiVersion/kind of their own
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
                yield item
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return
            params["continue"] = token

    def apply(
        self, res: Resource, body: dict[str, Any], *, manager: str, force: bool = True, dry_run: bool = False
    ) -> tuple[bool, dict[str, Any]]:
        """Server-side apply; returns (created, object). The server answers 201 when it created."""
        metadata = body["metadata"]
        params = {"fieldManager": manager, "force": "true" if force else "false"}
        if dry_run:
            params["dryRun"] = "All"
        response = self.request(
            "PATCH",
            res.path(metadata.get("namespace", ""), metadata["name"]),
            params=params,
            body=body,
            content_type=APPLY_PATCH,
            resource=res,
            namespace=metadata.get("namespace", ""),
        )
        return response.status_code == 201, dict(response.json())

    def json_patch(
        self, res: Resource, namespace: str, name: str, ops: list[dict[str, Any]]
    ) -> dict[str, Any]:
        response = self.request(
            "PATCH",
            res.path(namespace, name),
            body=ops,
            content_type=JSON_PATCH,
            resource=res,
            namespace=namespace,
        )
        return dict(response.json())

    def create(self, res: Resource, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(
            self.request("POST", res.path(namespace), body=body, resource=res, namespace=namespace).json()
        )

    def delete(self, res: Resource, namespace: str, name: str, *, propagation: str = "Background") -> bool:
        """Delete; False when it was already gone."""
        try:
            self.request(
                "DELETE",
                res.path(namespace, name),
                body={"propagationPolicy": propagation},
                resource=res,
                namespace=namespace,
            )
            return True
        except NotFoundError:
            return False

    def watch(
        self,
        res: Resource,
        namespace: str,
        *,
        label_selector: str,
        resource_version: str,
        timeout: int,
        on_open: Callable[[requests.Response], None] | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Watch events; ``on_open`` receives the response so another thread can close it."""
        params = {
            "watch": "true",
            "labelSelector": label_selector,
            "resourceVersion": resource_version,
            "timeoutSeconds": str(max(timeout, 1)),
            "allowWatchBookmarks": "true",
        }
        response = self.request(
            "GET",
            res.path(namespace),
            params=params,
            stream=True,
            timeout=timeout + 10,
            resource=res,
            namespace=namespace,
        )
        if on_open is not None:
            on_open(response)
        with response:
            for line in response.iter_lines():
                if line:
                    event = json.loads(line)
                    yield str(event.get("type")), dict(event.get("object") or {})


def _retry_after(header: str | None, attempt: int) -> float:
    try:
        return min(float(header), 10.0) if header else min(0.25 * 2**attempt, 5.0)
    except ValueError:
        return 1.0


def _error(
    response: requests.Response, verb: str, resource: Resource | None, namespace: str, what: str
) -> KubeError:
    try:
        status = response.json()
    except ValueError:
        status = {}
    server_message = str(status.get("message") or response.text[:300] or response.reason)
    reason = str(status.get("reason") or "")
    target = resource.display if resource else what or response.request.path_url.split("?")[0]
    where = f" in namespace {namespace}" if namespace else ""
    if response.status_code == 401:
        raise AuthError("the Kubernetes API refused the credentials (401 Unauthorized): check the kubeconfig")
    if response.status_code == 403:
        return PermissionDenied(
            f"permission denied: cannot {verb} {target}{where}; grant the runner's identity "
            f"the '{verb}' verb on '{target}' (API server: {server_message})",
            status=403,
            reason=reason,
            server_message=server_message,
        )
    cls = NotFoundError if response.status_code == 404 else KubeError
    return cls(
        f"{verb} {target}{where} failed ({response.status_code} {reason}): {server_message}",
        status=response.status_code,
        reason=reason,
        server_message=server_message,
    )
