"""The bodies of notifications, built from a pass's ``Result``: pure functions, no I/O.

A forge's commit status: its state and a description of at most 140 characters (GitHub's
limit, which every forge takes); the request is ``lockgate.forge``'s, the repository and
commit come from the artifact's ``org.opencontainers.image.source`` and ``.revision``
annotations (``main@sha1:<sha>``, Flux's format, ``lockgate.forge.remote``). Generic: Flux's event
(``fluxcd/pkg`` ``runtime/events.Event``: ``involvedObject``, ``severity``, ``timestamp``,
``message``, ``reason``, ``metadata``, ``reportingController``), with the metadata keys
without a group prefix, as notification-controller forwards them. Slack: an incoming-webhook
``text``: a line saying what happened, then the error whole. An error is summarised
(``lockgate.summary``) only where the provider has no room for it: the 140 characters of a
commit status's description.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import re
from typing import Any, Literal

from lockgate.errors import HealthError
from lockgate.summary import counted, summarise
from runner.inventory import events
from runner.pipeline.result import Result

API_VERSION = "lockgate.dev/v1alpha1"
KIND = "Sync"
CONTROLLER = "lockgate"
MAX_DESCRIPTION = 140
#: Flux's limit on an event's message
MAX_MESSAGE = 39_000
#: Slack's limit on a message's text is 40,000 characters
MAX_SLACK = 39_000
HEALTH_FAILED = "HealthCheckFailed"

State = Literal["pending", "success", "failure"]

def outcome(result: Result) -> tuple[State, str]:
    """The commit status of a finished pass: its state and a description of at most 140 chars."""
    if result.error is None:
        healthy = f", {counted(len(result.health), 'object')} healthy" if result.health else ""
        return "success", clip(f"applied {result.changeset.summary()}{healthy}", MAX_DESCRIPTION)
    prefix = "health check failed: " if isinstance(result.error, HealthError) else ""
    # the objects a failure names are on the lines after the first: summarised with them
    return "failure", prefix + summarise(result.error.message, MAX_DESCRIPTION - len(prefix))


def pending(result: Result) -> tuple[State, str]:
    return "pending", clip(f"applying {result.revision or result.digest}", MAX_DESCRIPTION)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def whole_or_summary(text: str, limit: int) -> str:
    """``text`` whole when it fits in ``limit``, else its summary: never cut."""
    return text if len(text) <= limit else summarise(text, limit)


def status_body(body: dict[str, Any]) -> bytes:
    """A forge's commit status request body (``lockgate.forge`` builds it) as sent."""
    return _dumps(body)


def reason_of(result: Result) -> str:
    if result.error is None:
        return events.SUCCEEDED
    if isinstance(result.error, HealthError):
        return HEALTH_FAILED
    return events.reason_for(result.error)


def message_of(result: Result) -> str:
    if result.error is not None:
        return whole_or_summary(result.error.message, MAX_MESSAGE)
    lines = [f"{e.key} {e.action.value}" for e in result.changeset.entries if e.action.value != "unchanged"]
    return clip("\n".join(lines) or result.changeset.summary(), MAX_MESSAGE)


def metadata_of(result: Result) -> dict[str, str]:
    meta = {"revision": result.revision, "digest": result.digest, "source": result.url}
    if result.source_revision:
        meta["originRevision"] = result.source_revision
    if result.source_url:
        meta["originSource"] = result.source_url
    if result.rolled_back_to:
        meta["rolledBackFrom"], meta["rolledBackTo"] = result.rolled_back_from, result.rolled_back_to
    return {k: v for k, v in meta.items() if v}


def flux_event(result: Result, *, now: dt.datetime, instance: str = "") -> bytes:
    """Flux's event JSON for a finished pass (what notification-controller's generic provider POSTs)."""
    body: dict[str, Any] = {
        "involvedObject": {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": result.name,
            "namespace": result.namespace,
        },
        "severity": "info" if result.error is None else "error",
        "timestamp": now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "message": message_of(result),
        "reason": reason_of(result),
        "metadata": metadata_of(result),
        "reportingController": CONTROLLER,
    }
    if instance:
        body["reportingInstance"] = instance
    return _dumps(body)


def signature(key: bytes, body: bytes) -> str:
    """The ``X-Signature`` header of Flux's generic-hmac provider."""
    return "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()


def slack_message(result: Result, *, cluster: str) -> bytes:
    where = f"{result.namespace}/{result.name}" + (f" on {cluster}" if cluster else "")
    if result.error is None:
        text = f":white_check_mark: {where}: applied {result.revision}: {result.changeset.summary()}"
    else:
        header = f":x: {where}: {reason_of(result)} at {result.revision or result.url}\n"
        text = header + whole_or_summary(result.error.message, MAX_SLACK - len(header))
    return _dumps({"text": text})


#: the event reason of a pass whose newest digest lacks the attestations it requires (promotion)
WAITING = "PromotionWaiting"
_COUNTDOWN = re.compile(r": [0-9hms]+ left")


def waiting_key(waiting: str) -> str:
    """What a waiting message is about, without its soak countdown (which changes every pass)."""
    return _COUNTDOWN.sub("", waiting)


def waiting_event(result: Result, *, now: dt.datetime, instance: str = "") -> bytes:
    """Flux's event JSON for "this digest waits for its attestations" (severity info)."""
    revision = result.waiting.split(": ", 1)[0]
    body: dict[str, Any] = {
        "involvedObject": {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": result.name,
            "namespace": result.namespace,
        },
        "severity": "info",
        "timestamp": now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "message": clip(result.waiting, MAX_MESSAGE),
        "reason": WAITING,
        "metadata": {k: v for k, v in {"revision": revision, "applied": result.revision}.items() if v},
        "reportingController": CONTROLLER,
    }
    if instance:
        body["reportingInstance"] = instance
    return _dumps(body)


#: the event reason of drift a pass left (``driftDetection.mode: warn``), HelmRelease's word
DRIFT_DETECTED = "DriftDetected"


def drift_event(result: Result, *, now: dt.datetime, instance: str = "") -> bytes:
    """Flux's event JSON for drift left in the cluster: severity error, as Flux forwards a
    Warning Event (HelmRelease's ``DriftDetected``)."""
    body: dict[str, Any] = {
        "involvedObject": {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": result.name,
            "namespace": result.namespace,
        },
        "severity": "error",
        "timestamp": now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "message": whole_or_summary(result.drift_reported, MAX_MESSAGE),
        "reason": DRIFT_DETECTED,
        "metadata": metadata_of(result),
        "reportingController": CONTROLLER,
    }
    if instance:
        body["reportingInstance"] = instance
    return _dumps(body)


def slack_drift(result: Result, *, cluster: str) -> bytes:
    where = f"{result.namespace}/{result.name}" + (f" on {cluster}" if cluster else "")
    header = f":warning: {where}: {DRIFT_DETECTED}\n"
    return _dumps({"text": header + whole_or_summary(result.drift_reported, MAX_SLACK - len(header))})


def slack_waiting(result: Result, *, cluster: str) -> bytes:
    where = f"{result.namespace}/{result.name}" + (f" on {cluster}" if cluster else "")
    return _dumps({"text": f":hourglass: {where}: {clip(result.waiting, 300)}"})


def _dumps(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
