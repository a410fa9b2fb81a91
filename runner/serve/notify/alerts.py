"""The Alertmanager body of a failing or recovered sync: one alert, fired and then resolved.

``POST {address}`` (Alertmanager's ``/api/v2/alerts``) with a list of one postable alert, as
Flux's ``alertmanager`` notifier posts it: ``labels``, ``annotations`` (``summary``,
``message``) and ``startsAt`` in RFC 3339. Flux fires an alert per error event and leaves it to
expire after Alertmanager's ``resolve_timeout``; a sync knows when it recovers, so here the
alert is one per sync and cluster and is resolved by posting it again with ``endsAt``.
Alertmanager tells alerts apart by their labels, so the labels are those that stay the same
while the sync fails (``alertname``, ``severity``, ``cluster``, ``sync``, ``namespace``,
``kind``, ``reportingcontroller``); what changes between failures (reason, revision, message)
is in the annotations, and a new failure of the same sync updates the same alert. Each failing
pass posts the alert again with the ``startsAt`` of the first failure and an ``endsAt`` two
intervals ahead (as Prometheus sends ``endsAt`` ahead of its next evaluation): the next pass
comes within one interval (retries back off up to it), so the alert stays active however long
the sync fails, whatever Alertmanager's ``resolve_timeout``, and expires by itself if the runner
stops reporting. Pure, apart from ``auth_headers`` reading a Secret's entries.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Mapping

from runner.pipeline.result import Result
from runner.serve.notify import messages

ALERTNAME = "LockgateSyncFailed"
#: how many sync intervals a firing alert lasts without another pass re-posting it
LIFETIME_INTERVALS = 2


def timestamp(now: dt.datetime) -> str:
    return now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def labels(result: Result, *, cluster: str) -> dict[str, str]:
    """What identifies the alert in Alertmanager: the same from the first failure to the resolve."""
    found = {
        "alertname": ALERTNAME,
        "severity": "error",
        "cluster": cluster,
        "sync": result.name,
        "namespace": result.namespace,
        "kind": messages.KIND,
        "reportingcontroller": messages.CONTROLLER,
    }
    return {k: v for k, v in found.items() if v}


def firing(result: Result, *, cluster: str, starts_at: str, ends_at: str) -> bytes:
    where = f"{result.namespace}/{result.name}" + (f" on {cluster}" if cluster else "")
    at = result.revision or result.url
    annotations = {
        "summary": messages.clip(f"sync {where} is failing: {messages.reason_of(result)} at {at}", 300),
        "message": messages.message_of(result),
        "reason": messages.reason_of(result),
        "revision": result.revision,
    }
    alert = {
        "labels": labels(result, cluster=cluster),
        "annotations": {k: v for k, v in annotations.items() if v},
        "startsAt": starts_at,
        "endsAt": ends_at,
    }
    return json.dumps([alert], separators=(",", ":"), ensure_ascii=False).encode()


def resolved(result: Result, *, cluster: str, starts_at: str | None, ends_at: str) -> bytes:
    where = f"{result.namespace}/{result.name}" + (f" on {cluster}" if cluster else "")
    alert: dict[str, object] = {
        "labels": labels(result, cluster=cluster),
        "annotations": {"summary": f"sync {where} recovered: applied {result.revision}"},
        "endsAt": ends_at,
    }
    if starts_at:
        alert["startsAt"] = starts_at
    return json.dumps([alert], separators=(",", ":"), ensure_ascii=False).encode()


def auth_headers(secret: Mapping[str, bytes]) -> dict[str, str]:
    """A Secret's ``token`` as a bearer token, or ``username`` and ``password`` as basic auth
    (Flux's Provider Secret entries for alertmanager)."""
    token = secret.get("token", b"").decode().strip()
    if token:
        return {"Authorization": f"Bearer {token}"}
    user, password = secret.get("username", b"").decode(), secret.get("password", b"").decode()
    if user and password:
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
    return {}
