"""``Kube``: the verbs the runner needs, over one ``Transport`` and one ``Discovery``.

Raw REST with plain dicts, not the ``kubernetes`` package's typed client: bodies go
straight into server-side apply requests and come back as the dicts the pass compares, so
no per-object model (de)serialisation is paid at thousands of objects, and discovery is
lazy per group-version. Safe to share between the pass's threads. Build it with
``Kube.from_kubeconfig``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.kube import auth, discovery, kubeconfig
from runner.kube.discovery import Discovery, Resource
from runner.kube.errors import NotFoundError
from runner.kube.transport import Transport
from runner.kube.watch import WatchStream

APPLY_PATCH = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"


@dataclass(frozen=True)
class Listed:
    """Every object of a list (all pages) and the resourceVersion to watch from."""

    items: list[dict[str, Any]] = field(default_factory=list)
    resource_version: str = ""


class Kube:
    """A client for one API server."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.discovery = Discovery(self._discover)
        self._guard: Callable[[], None] | None = None
        self._impersonate: str | None = None

    def guarded(self, guard: Callable[[], None]) -> Kube:
        """A view sharing this client's connection and discovery that calls ``guard`` before
        every write (apply, patch, create, replace, delete); ``guard`` raises to stop the write, e.g.
        when the pass's Lease was lost or the runner is shutting down."""
        view = copy.copy(self)
        view._guard = guard
        return view

    def impersonating(self, user: str) -> Kube:
        """A view sharing this client's connection and discovery whose every request is made as
        ``user`` (``Impersonate-User``), e.g. ``system:serviceaccount:team-a:deployer``: the
        API server then allows exactly what that identity's RBAC allows. Discovery stays the
        runner's own (what kinds exist is not a tenant's secret)."""
        view = copy.copy(self)
        view._impersonate = user
        return view

    def own(self) -> Kube:
        """This view as the credentials' own identity (no impersonation; the guard stays), for
        what the runner does on its own behalf: the runner namespace, a sync's secretRefs."""
        view = copy.copy(self)
        view._impersonate = None
        return view

    @property
    def identity(self) -> str | None:
        """The impersonated user, or None for the credentials' own identity."""
        return self._impersonate

    def _before_write(self) -> None:
        if self._guard is not None:
            self._guard()

    def check_guard(self) -> None:
        """Ask the guard now, as before a write: a long read (a health wait) stops where it raises."""
        self._before_write()

    @classmethod
    def from_kubeconfig(cls, path: Path | None = None, *, context: str | None = None, pool: int = 16) -> Kube:
        """From ``path``, the merged ``$KUBECONFIG`` or ``~/.kube/config``; in-cluster when none exists.

        The session carries the credentials (``auth.session_for``: TLS material in memory, the
        Authorization header per request); after a 401 the transport asks the authenticator
        to renew them once (an exec plugin run again, a rotated token file read again).
        """
        return cls.for_credentials(kubeconfig.load(path, context), pool=pool)

    @classmethod
    def for_credentials(cls, credentials: kubeconfig.Credentials, *, pool: int = 16) -> Kube:
        session, authenticator = auth.session_for(credentials, pool=pool)
        return cls(Transport(credentials.server, session, authenticator=authenticator))

    @property
    def server(self) -> str:
        return self.transport.server

    @property
    def counts(self) -> dict[str, int]:
        """Requests sent so far, per verb (get, list, watch, create, patch, delete...)."""
        return dict(self.transport.counts)

    def version(self) -> dict[str, Any]:
        """``GET /version``: the cheapest request that proves the API server answers."""
        return dict(self.transport.request("GET", "/version", what="version").json())

    # ---- discovery -----------------------------------------------------------------
    def _discover(self, path: str) -> dict[str, Any] | None:
        try:
            return dict(self.transport.request("GET", path, what=f"discover {path}").json())
        except NotFoundError:
            return None

    def resource(self, api_version: str, kind: str) -> Resource:
        return self.discovery.resource(api_version, kind)

    def served(self) -> dict[str, tuple[str, ...]]:
        """Every served group-version and its kinds, read now (``discovery.served``)."""
        return discovery.served(self._discover)

    def knows(self, api_version: str, kind: str) -> bool:
        return self.discovery.knows(api_version, kind)

    # ---- verbs ---------------------------------------------------------------------
    def get(self, res: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            response = self.transport.request(
                "GET",
                res.path(namespace, name),
                resource=res,
                namespace=namespace,
                impersonate=self._impersonate,
            )
        except NotFoundError:
            return None
        return dict(response.json())

    def list_all(
        self, res: Resource, namespace: str = "", *, label_selector: str | None = None, limit: int = 500
    ) -> Iterator[dict[str, Any]]:
        """Every object, page by page (so memory stays bounded)."""
        for page in self._pages(res, namespace, label_selector=label_selector, limit=limit):
            yield from page.get("items") or []

    def snapshot(
        self,
        res: Resource,
        namespace: str = "",
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Listed:
        """Every object at once, with the list's resourceVersion (to start a watch from)."""
        items: list[dict[str, Any]] = []
        version = ""
        pages = self._pages(
            res, namespace, label_selector=label_selector, field_selector=field_selector, limit=500
        )
        for page in pages:
            items.extend(page.get("items") or [])
            version = str((page.get("metadata") or {}).get("resourceVersion", ""))
        return Listed(items, version)

    def _pages(
        self,
        res: Resource,
        namespace: str,
        *,
        label_selector: str | None,
        limit: int,
        field_selector: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        params: dict[str, str] = {"limit": str(limit)}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        while True:
            page = self.transport.request(
                "GET",
                res.path(namespace),
                params=params,
                what="list",
                resource=res,
                namespace=namespace,
                impersonate=self._impersonate,
            ).json()
            for item in page.get("items") or []:
                # list items carry no apiVersion/kind of their own
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return
            params["continue"] = token

    def apply(
        self, res: Resource, body: dict[str, Any], *, manager: str, force: bool = True, dry_run: bool = False
    ) -> tuple[bool, dict[str, Any]]:
        """Server-side apply; returns (created, object). The server answers 201 when it created."""
        if not dry_run:
            self._before_write()
        metadata = body["metadata"]
        params = {"fieldManager": manager, "force": "true" if force else "false"}
        if dry_run:
            params["dryRun"] = "All"
        response = self.transport.request(
            "PATCH",
            res.path(metadata.get("namespace", ""), metadata["name"]),
            params=params,
            body=body,
            content_type=APPLY_PATCH,
            resource=res,
            namespace=metadata.get("namespace", ""),
            impersonate=self._impersonate,
        )
        return response.status_code == 201, dict(response.json())

    def json_patch(
        self,
        res: Resource,
        namespace: str,
        name: str,
        ops: list[dict[str, Any]],
        *,
        manager: str | None = None,
    ) -> dict[str, Any]:
        self._before_write()
        response = self.transport.request(
            "PATCH",
            res.path(namespace, name),
            params={"fieldManager": manager} if manager else None,
            body=ops,
            content_type=JSON_PATCH,
            resource=res,
            namespace=namespace,
            impersonate=self._impersonate,
        )
        return dict(response.json())

    def create(self, res: Resource, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        self._before_write()
        response = self.transport.request(
            "POST",
            res.path(namespace),
            body=body,
            resource=res,
            namespace=namespace,
            impersonate=self._impersonate,
        )
        return dict(response.json())

    def replace(self, res: Resource, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        """PUT the whole object; with ``metadata.resourceVersion`` set the server answers 409
        (a ``KubeError`` with status 409) when someone else wrote it since it was read."""
        self._before_write()
        response = self.transport.request(
            "PUT",
            res.path(namespace, body["metadata"]["name"]),
            body=body,
            resource=res,
            namespace=namespace,
            impersonate=self._impersonate,
        )
        return dict(response.json())

    def delete(
        self,
        res: Resource,
        namespace: str,
        name: str,
        *,
        propagation: str = "Background",
        resource_version: str = "",
        uid: str = "",
    ) -> bool:
        """Delete; False when it was already gone. With ``resource_version`` only that version
        of the object is deleted (a newer one answers 409), with ``uid`` only that object (not
        one created again under its name)."""
        self._before_write()
        body: dict[str, Any] = {"propagationPolicy": propagation}
        preconditions = {k: v for k, v in (("resourceVersion", resource_version), ("uid", uid)) if v}
        if preconditions:
            body["preconditions"] = preconditions
        try:
            self.transport.request(
                "DELETE",
                res.path(namespace, name),
                body=body,
                resource=res,
                namespace=namespace,
                impersonate=self._impersonate,
            )
            return True
        except NotFoundError:
            return False

    def watch(
        self,
        res: Resource,
        namespace: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str,
        timeout: int,
    ) -> WatchStream:
        """Open a watch from ``resource_version``; the server ends it after ``timeout`` seconds."""
        params = {
            "watch": "true",
            "resourceVersion": resource_version,
            "timeoutSeconds": str(max(timeout, 1)),
            "allowWatchBookmarks": "true",
        }
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        response = self.transport.request(
            "GET",
            res.path(namespace),
            params=params,
            stream=True,
            timeout=timeout + 10,
            resource=res,
            namespace=namespace,
            impersonate=self._impersonate,
        )
        return WatchStream(response)
