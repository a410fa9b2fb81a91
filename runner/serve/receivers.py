"""Registry webhooks: Flux's Receiver types for registries that cannot sign or set headers.

A Runner's ``spec.receivers[]`` each have a ``type`` (``dockerhub``, ``quay``, ``harbor``,
``nexus``), a ``secretRef`` (key ``token``, at least 16 bytes) and the syncs they may
trigger (``resources``, default all). As Flux's notification-controller does
(``Receiver.GetWebhookPath``), each listens on a secret path derived from its token::

    /hook/ + hex(sha256(token + name + namespace))

with the receiver's name and the runner namespace (where its Secret lives, as a Flux
Receiver's namespace), or its ``pathNamespace`` (a Receiver imported from Flux keeps its
path). Docker Hub and Quay send no proof but the path; Harbor also sends
its webhook policy's auth header as ``Authorization`` (compared with the token, as Flux
does), Nexus an ``X-Nexus-Webhook-Signature`` (hex HMAC-SHA1 of the body). ``pushed`` reads
the repository and tags each type's documented payload names; ``matches`` tells whether a
sync's ``url`` is that repository. The tag does not filter (as Flux, which has an
ImageRepository rescan whatever tag was pushed): a pass resolves the sync's own tag or
semver range, so a tag outside it ends in a pass that changes nothing.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lockgate import registry
from lockgate.errors import LockgateError, UsageError
from runner.kube.client import Kube
from runner.pipeline import secretrefs
from runner.pipeline.runnerdoc import Receiver
from runner.serve import proofs

log = logging.getLogger("lockgate.serve.receivers")

TYPES = ("dockerhub", "quay", "harbor", "nexus")
PREFIX = "/hook/"
#: the hook path's digest: 64 hex digits (a sync name is at most 54 characters)
DIGEST_LENGTH = 64
#: Docker Hub's names for its registry, and the namespace of its official images
_DOCKER_HUB = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com"})


def hook_path(token: bytes, name: str, namespace: str) -> str:
    """``/hook/<sha256 hex>`` of the token, the receiver's name and the runner namespace."""
    return PREFIX + hashlib.sha256(token + name.encode() + namespace.encode()).hexdigest()


def is_digest(segment: str) -> bool:
    return len(segment) == DIGEST_LENGTH and all(c in "0123456789abcdef" for c in segment)


def authenticate(kind: str, headers: Mapping[str, str], body: bytes, token: bytes) -> bool:
    """What the sender proves besides the path: Harbor's auth header, Nexus's signature."""
    if kind == "harbor":
        return proofs.same(headers.get("authorization", ""), token)
    if kind == "nexus":
        return proofs.hmac_hex(headers.get("x-nexus-webhook-signature", ""), body, token, "sha1")
    return True


@dataclass(frozen=True)
class Pushed:
    """The repository a registry event names; ``host`` None when the payload has none (Nexus)."""

    host: str | None
    repository: str
    tags: tuple[str, ...]
    #: why the event asks for nothing (a pull, a delete), else ""
    ignored: str = ""

    def __str__(self) -> str:
        name = f"{self.host}/{self.repository}" if self.host else self.repository
        return name + (f":{','.join(self.tags)}" if self.tags else "")


class BadPayload(ValueError):
    """The payload lacks what the type's documentation says it carries."""


def pushed(kind: str, headers: Mapping[str, str], payload: Any) -> Pushed:
    """The repository and tags of a ``kind`` event; ``BadPayload`` naming the missing field."""
    if not isinstance(payload, dict):
        raise BadPayload(f"a {kind} webhook sends a JSON object (Content-Type: application/json)")
    if kind == "dockerhub":
        repo = _field(payload, kind, "repository", "repo_name")
        tag = _optional(payload, "push_data", "tag")
        # an official image's repo_name is "nginx"; it is library/nginx in the registry
        return Pushed("docker.io", repo if "/" in repo else f"library/{repo}", (tag,) if tag else ())
    if kind == "quay":
        host, repo = _split(_field(payload, kind, "docker_url"), kind, "docker_url")
        tags = payload.get("updated_tags")
        # documented as a list; early payloads sent a tag -> image mapping
        names = tuple(t for t in (tags or ()) if isinstance(t, str)) if isinstance(tags, list | dict) else ()
        return Pushed(host, repo, names)
    if kind == "harbor":
        return _harbor(payload)
    if kind == "nexus":
        return _nexus(headers, payload)
    raise BadPayload(f"unknown receiver type {kind!r}")


def _harbor(payload: dict[str, Any]) -> Pushed:
    # the Default format has type PUSH_ARTIFACT and event_data; CloudEvents harbor.artifact.pushed and data
    event = str(payload.get("type") or "")
    data = payload.get("event_data") if "event_data" in payload else payload.get("data")
    if not isinstance(data, dict):
        raise BadPayload("the harbor webhook has no event_data object")
    resources = data.get("resources")
    if not isinstance(resources, list) or not resources or not isinstance(resources[0], dict):
        raise BadPayload("the harbor webhook has no event_data.resources[]")
    url = resources[0].get("resource_url")
    if not isinstance(url, str) or not url:
        raise BadPayload("the harbor webhook has no event_data.resources[].resource_url")
    host, repo = _split(url, "harbor", "event_data.resources[].resource_url")
    tags = tuple(
        r["tag"] for r in resources if isinstance(r, dict) and isinstance(r.get("tag"), str) and r["tag"]
    )
    ignored = "" if event in ("PUSH_ARTIFACT", "harbor.artifact.pushed") else f"Harbor event {event!r}"
    return Pushed(host, repo, tuple(t for t in tags if not t.startswith("sha256:")), ignored)


def _nexus(headers: Mapping[str, str], payload: dict[str, Any]) -> Pushed:
    # rm:repository:component names the image as component.name and the tag as component.version;
    # the registry's host is a connector port or a proxy of Nexus, never in the payload
    name = _field(payload, "nexus", "component", "name")
    version = _optional(payload, "component", "version")
    action = str(payload.get("action") or "")
    hook = headers.get("x-nexus-webhook-id", "")
    ignored = ""
    if hook and hook != "rm:repository:component":
        ignored = f"Nexus webhook {hook!r}"
    elif action not in ("CREATED", "UPDATED"):
        ignored = f"Nexus action {action!r}"
    return Pushed(None, name.strip("/"), (version,) if version else (), ignored)


def _field(payload: dict[str, Any], kind: str, *path: str) -> str:
    value: Any = payload
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    if not isinstance(value, str) or not value.strip():
        raise BadPayload(f"the {kind} webhook has no {'.'.join(path)}")
    return value.strip()


def _optional(payload: dict[str, Any], *path: str) -> str:
    value: Any = payload
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) else ""


def _split(reference: str, kind: str, field: str) -> tuple[str, str]:
    try:
        ref = registry.parse(reference)
    except UsageError:
        raise BadPayload(f"the {kind} webhook's {field} is not an image reference") from None
    return ref.host, ref.repository


def _host(host: str) -> str:
    host = host.lower()
    return "docker.io" if host in _DOCKER_HUB else host


def matches(event: Pushed, url: str) -> bool:
    """Whether a sync's ``url`` is the repository ``event`` names (host compared case-blind,
    Docker Hub's aliases as one; without a host in the event, the repository alone)."""
    try:
        ref = registry.parse(url)
    except UsageError:
        return False
    if ref.repository != event.repository.lower():
        return False
    return event.host is None or _host(ref.host) == _host(event.host)


@dataclass(frozen=True)
class Found:
    """The receiver a hook path belongs to, with what it needs to check and trigger."""

    name: str
    kind: str
    token: bytes
    #: (sync name, url) of the syncs its resources select
    syncs: tuple[tuple[str, str], ...]


def selected(resources: tuple[str, ...], syncs: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """The syncs a receiver's ``resources`` names select: all without any, ``*`` all."""
    if not resources or "*" in resources:
        return tuple(syncs)
    return tuple((name, url) for name, url in syncs if name in resources)


def field(index: int) -> str:
    return f"spec.receivers[{index}].secretRef.name"


class Directory:
    """The configured receivers and their hook paths, from their Secrets: each token is read
    again after ``cache_seconds`` (Secrets rotate), and held in memory only."""

    def __init__(
        self,
        kube: Callable[[], Kube],
        namespace: str,
        configured: Callable[[], tuple[Receiver, ...]],
        syncs: Callable[[], list[tuple[str, str]]],
        *,
        cache_seconds: float = 30.0,
    ) -> None:
        self.kube, self.namespace, self.configured, self.syncs = kube, namespace, configured, syncs
        self.cache_seconds = cache_seconds
        #: Secret name -> (when read, token or None while unusable)
        self._tokens: dict[str, tuple[float, bytes | None]] = {}

    def token(self, index: int, receiver: Receiver) -> bytes:
        """The receiver's token; ``UsageError`` (naming the Secret and field, never the value) when
        it is missing or short, ``LockgateError`` when the Secret cannot be read."""
        assert receiver.secret_ref is not None  # required by the configuration
        reader = secretrefs.SecretReader(self.kube(), self.namespace)
        data = reader.read(receiver.secret_ref, field=field(index))
        where = reader.where(receiver.secret_ref, field(index))
        return secretrefs.usable_token(data, where=where, what="receiver")

    def _cached(self, index: int, receiver: Receiver) -> bytes | None:
        name = receiver.secret_ref or ""
        at, token = self._tokens.get(name, (0.0, None))
        if time.monotonic() - at < self.cache_seconds:
            return token
        try:
            token = self.token(index, receiver)
        except UsageError as exc:
            log.error("receiver token refused; its hook answers 401", extra={"reason": exc.message})
            token = None
        except LockgateError as exc:
            # the last good token while the API server is away
            log.warning("cannot read a receiver's Secret", extra={"reason": exc.message})
        self._tokens[name] = (time.monotonic(), token)
        return token

    def check(self) -> None:
        """At start: a receiver whose token is missing or short stops ``serve`` (exit 2); a
        Secret that cannot be read yet is read again when a hook needs it."""
        for index, receiver in enumerate(self.configured()):
            try:
                self.token(index, receiver)
            except UsageError:
                raise
            except LockgateError as exc:
                log.warning("cannot read a receiver's Secret yet", extra={"reason": exc.message})

    def receiver(self, digest: str) -> Found | None:
        """The receiver whose hook path is ``/hook/<digest>`` (every one compared, in constant time)."""
        wanted = (PREFIX + digest).encode()
        found: Found | None = None
        for index, receiver in enumerate(self.configured()):
            token = self._cached(index, receiver)
            if token is None:
                continue
            path = hook_path(token, receiver.name, receiver.path_namespace or self.namespace)
            if proofs.same(path, wanted) and found is None:
                names = tuple(r.name for r in receiver.resources)
                found = Found(receiver.name, receiver.type, token, selected(names, self.syncs()))
        return found


@dataclass(frozen=True)
class HookPath:
    """A receiver's hook path, for the person who configures the registry."""

    name: str
    type: str
    path: str


def hook_paths(kube: Kube, namespace: str, configured: tuple[Receiver, ...]) -> list[HookPath]:
    """Each receiver's hook path, from its Secret (``lockgate receivers``)."""
    directory = Directory(lambda: kube, namespace, lambda: configured, lambda: [])
    return [
        HookPath(r.name, r.type, hook_path(directory.token(i, r), r.name, r.path_namespace or namespace))
        for i, r in enumerate(configured)
    ]
