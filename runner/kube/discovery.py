"""Which REST resource serves a kind: API discovery, per group-version, cached and lazy.

A pass discovers only the group-versions its objects use; a miss is looked up again once
(a CRD applied in this pass may have just become served). The resources the runner writes
itself (Secrets, Namespaces, Events, Leases) are constants. ``served`` reads every served
group-version and its kinds afresh, for the capabilities a runner publishes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lockgate.errors import ApplyError, LockgateError


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


SECRET = Resource("", "v1", "Secret", "secrets", True)
CONFIGMAP = Resource("", "v1", "ConfigMap", "configmaps", True)
NAMESPACE = Resource("", "v1", "Namespace", "namespaces", False)
EVENT = Resource("", "v1", "Event", "events", True)
LEASE = Resource("coordination.k8s.io", "v1", "Lease", "leases", True)

#: GET a discovery document by path; None when the group-version is not served
Fetch = Callable[[str], dict[str, Any] | None]


class Discovery:
    """Resources by group-version, fetched on first use; safe to share between threads."""

    def __init__(self, fetch: Fetch) -> None:
        self._fetch = fetch
        self._lock = threading.Lock()
        self._known: dict[str, dict[str, Resource]] = {}

    def _group_version(self, api_version: str, *, refresh: bool = False) -> dict[str, Resource]:
        with self._lock:
            known = self._known.get(api_version)
        if known is not None and not refresh:
            return known
        path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        group, _, version = api_version.rpartition("/")
        body = self._fetch(path) or {"resources": []}
        found = {
            r["kind"]: Resource(group, version, r["kind"], r["name"], bool(r.get("namespaced")))
            for r in body.get("resources", [])
            if "/" not in r["name"]  # subresources (status, scale) are not kinds
        }
        with self._lock:
            self._known[api_version] = found
        return found

    def resource(self, api_version: str, kind: str) -> Resource:
        """The REST resource of a kind; looked up again once on a miss (new CRDs)."""
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

    def scope(self, api_version: str, kind: str) -> bool | None:
        """Whether the kind is namespaced; None when the cluster does not serve it."""
        try:
            return self.resource(api_version, kind).namespaced
        except ApplyError:
            return None


def _path(group_version: str) -> str:
    return f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"


def served(fetch: Fetch) -> dict[str, tuple[str, ...]]:
    """Every group-version the API server lists (``/api``, ``/apis``) and the kinds each serves,
    read now (no cache). A group-version whose resources cannot be read (an aggregated API whose
    server is down answers 503) is listed without kinds, as discovery clients leave it."""
    group_versions = [str(v) for v in (fetch("/api") or {}).get("versions", [])]
    for group in (fetch("/apis") or {}).get("groups", []):
        group_versions += [str(v["groupVersion"]) for v in group.get("versions", []) if "groupVersion" in v]
    found: dict[str, tuple[str, ...]] = {}
    for group_version in dict.fromkeys(group_versions):
        try:
            body = fetch(_path(group_version)) or {}
        except LockgateError:
            body = {}
        kinds = {str(r["kind"]) for r in body.get("resources", []) if "/" not in str(r.get("name", ""))}
        found[group_version] = tuple(sorted(kinds))
    return found
