"""HTTP to one API server: the only module of the runner that touches ``requests``.

One pooled ``requests.Session`` shared by the pass's threads; credentials and TLS are set
on the session when it is built (``auth.session_for``), never passed around; a 401 asks
the authenticator to renew them once. Requests
are counted per verb, so a pass can report its cost. 429 and 503 (a just-established CRD
answers them while its storage initialises) are retried with backoff honouring
``Retry-After``; a connection failure is tried again twice. What the server says is turned
into the typed errors of ``errors``; credentials never appear in a message.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import requests

from lockgate.errors import AuthError
from runner.kube.discovery import Resource
from runner.kube.errors import ClusterFailing, ClusterUnreachable, KubeError, NotFoundError, PermissionDenied

if TYPE_CHECKING:
    from runner.kube.auth import Authenticator

TIMEOUT = 60.0
CONNECT_TIMEOUT = 10.0
RETRIES = 8
CONNECT_RETRIES = 2
_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class Transport:
    """Requests to ``server`` over ``session`` (TLS, pool and ``authenticator`` already set up by
    ``auth.session_for``); after a 401 the authenticator renews the credentials once."""

    def __init__(self, server: str, session: requests.Session, *, authenticator: Authenticator) -> None:
        self.server = server.rstrip("/")
        self.session = session
        self.authenticator = authenticator
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

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
        impersonate: str | None = None,
    ) -> requests.Response:
        """One request, retried as described above; a 4xx raises, never returns."""
        verb = "list" if method == "GET" and what == "list" else ("watch" if stream else _VERBS[method])
        data = json.dumps(body, separators=(",", ":")).encode() if body is not None else None
        headers = {"Content-Type": content_type, "Accept": "application/json"} if data else {}
        if impersonate:
            headers["Impersonate-User"] = impersonate
        refreshed = False
        attempt = connect_attempt = 0
        while True:
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
                    timeout=(CONNECT_TIMEOUT, timeout),
                )
            except requests.RequestException as exc:
                if connect_attempt < CONNECT_RETRIES and not isinstance(exc, requests.exceptions.SSLError):
                    time.sleep(0.25 * 2**connect_attempt)
                    connect_attempt += 1
                    continue
                raise ClusterUnreachable(
                    f"cannot reach the Kubernetes API at {self.server}: {_reason(exc)}; check that the "
                    "cluster is up and the kubeconfig's server address"
                ) from None
            if response.status_code == 401 and not refreshed:
                refreshed = True
                if self.authenticator.refresh():
                    response.close()
                    continue
            # 429 also means "storage is (re)initializing" for a just-established CRD
            if response.status_code in (429, 502, 503, 504) and attempt < RETRIES:
                response.close()
                time.sleep(_retry_after(response.headers.get("Retry-After"), attempt))
                attempt += 1
                continue
            break
        if response.status_code >= 400:
            raise _error(response, verb, resource, namespace, what, impersonate)
        return response


def _reason(exc: requests.RequestException) -> str:
    if isinstance(exc, requests.exceptions.SSLError):
        text = str(exc).lower()
        if "hostname mismatch" in text or "doesn't match" in text:
            return (
                "TLS failed: the server's certificate does not name it (check the server or tls-server-name)"
            )
        if "certificate verify failed" in text:
            return (
                "TLS failed: the server's certificate is not signed by the kubeconfig's certificate-authority"
            )
        return "TLS failed"
    if isinstance(exc, requests.Timeout):
        return "timed out"
    text = str(exc).lower()
    for marker in ("connection refused", "name or service not known", "no route to host", "connection reset"):
        if marker in text:
            return marker
    return type(exc).__name__


def _retry_after(header: str | None, attempt: int) -> float:
    try:
        return min(float(header), 10.0) if header else min(0.25 * 2**attempt, 5.0)
    except ValueError:
        return 1.0


def who(user: str | None) -> str:
    """How an identity is named in messages: ``ServiceAccount team-a/deployer``, or the runner's."""
    if not user:
        return "the runner's identity"
    parts = user.split(":")
    if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
        return f"ServiceAccount {parts[2]}/{parts[3]}"
    return f"user {user}"


def _impersonate_grant(user: str) -> str:
    """The RBAC rule that lets the runner impersonate ``user``, in words."""
    parts = user.split(":")
    if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
        return f"the 'impersonate' verb on 'serviceaccounts' named {parts[3]} in namespace {parts[2]}"
    return f"the 'impersonate' verb on 'users' named {user}"


def _error(
    response: requests.Response,
    verb: str,
    resource: Resource | None,
    namespace: str,
    what: str,
    impersonate: str | None = None,
) -> Exception:
    try:
        status = response.json()
    except ValueError:
        status = {}
    if not isinstance(status, dict):
        status = {}
    server_message = str(status.get("message") or response.text[:300] or response.reason)
    reason = str(status.get("reason") or "")
    target = resource.display if resource else what or response.request.path_url.split("?")[0]
    where = f" in namespace {namespace}" if namespace else ""
    code = response.status_code
    response.close()
    if code == 401:
        return AuthError(
            "the Kubernetes API refused the credentials (401 Unauthorized): check the kubeconfig"
        )
    if code == 403 and impersonate and "cannot impersonate" in server_message:
        # the runner's own identity was refused the impersonation, not the tenant the request
        return PermissionDenied(
            f"permission denied: the runner's identity cannot impersonate {who(impersonate)}; grant "
            f"the runner's identity {_impersonate_grant(impersonate)} (API server: {server_message})",
            status=403,
            reason=reason,
            server_message=server_message,
        )
    if code == 403:
        return PermissionDenied(
            f"permission denied: {who(impersonate)} cannot {verb} {target}{where}; grant "
            f"{who(impersonate)} the '{verb}' verb on '{target}' (API server: {server_message})",
            status=403,
            reason=reason,
            server_message=server_message,
        )
    if code >= 500:
        return ClusterFailing(
            f"the Kubernetes API server failed to {verb} {target}{where} ({code} {reason}): {server_message}",
            status=code,
        )
    cls = NotFoundError if code == 404 else KubeError
    return cls(
        f"{verb} {target}{where} failed ({code} {reason}): {server_message}",
        status=code,
        reason=reason,
        server_message=server_message,
    )
