"""Kubernetes Events on the ApplySet parent: what ``kubectl describe secret lockgate-<name>`` shows.

Best effort: a pass must not fail because it could not record an Event (the runner's
role may lack ``create events``); the reason is returned to the caller instead. A message
is kept whole up to the 1024 characters of an ``events.k8s.io`` note; a longer one is
summarised (``lockgate.summary``), never cut.
"""

from __future__ import annotations

import datetime as dt
import socket

from lockgate.errors import ExitCode, LockgateError
from lockgate.summary import summarise
from runner.kube.client import Kube
from runner.kube.discovery import EVENT
from runner.plan import prune_plan
from runner.plan.inventory import Inventory

MAX_MESSAGE = 1024
SUCCEEDED = "ReconciliationSucceeded"
#: Warning reasons by failure class: stable names to filter on (``kubectl get events``)
FAILED_REASONS = {
    ExitCode.APPLY: "ApplyFailed",
    ExitCode.HEALTH: "HealthCheckFailed",
    ExitCode.RENDER: "RenderFailed",
    ExitCode.AUTH: "AuthFailed",
    ExitCode.VERIFICATION: "VerificationFailed",
    #: the artifact could not be resolved or pulled (Flux's kustomize-controller word)
    ExitCode.RESOLVE: "ArtifactFailed",
    ExitCode.REGISTRY: "ArtifactFailed",
    ExitCode.ABANDONED: "Abandoned",
}
PRUNE_REFUSED = "PruneRefused"
#: a Warning: a revision failed its health checks (or a person asked) and an earlier one was applied
ROLLED_BACK = "RolledBack"


def reason_for(error: LockgateError) -> str:
    """The Warning reason of a failed pass; a refused mass prune has its own."""
    if isinstance(error, prune_plan.MassPruneError):
        return PRUNE_REFUSED
    return FAILED_REASONS.get(error.exit_code, "ReconciliationFailed")


def emit(kube: Kube, inventory: Inventory, *, warning: bool, reason: str, message: str) -> str | None:
    """Record an Event on the parent; returns an error description instead of raising."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{inventory.parent}.", "namespace": inventory.namespace},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Secret",
            "name": inventory.parent,
            "namespace": inventory.namespace,
        },
        "type": "Warning" if warning else "Normal",
        "reason": reason,
        "message": message if len(message) <= MAX_MESSAGE else summarise(message, MAX_MESSAGE),
        "source": {"component": "lockgate"},
        "reportingComponent": "lockgate",
        "reportingInstance": socket.gethostname()[:128],
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    try:
        kube.create(EVENT, inventory.namespace, body)
    except LockgateError as exc:
        return exc.message
    return None
