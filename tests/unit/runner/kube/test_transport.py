"""What the API server's answers become: refusals are apply errors, a failing server is not."""

from __future__ import annotations

import json

import pytest
import urllib3

from lockgate.errors import AuthError, ExitCode, LockgateError
from runner.kube import transport
from runner.kube.discovery import Resource
from runner.kube.errors import ClusterFailing, KubeError, NotFoundError, PermissionDenied

CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps", True)


def answer(code: int, reason: str, message: str) -> transport.Reply:
    """An answer as urllib3 builds it from the wire (no server involved: pure mapping)."""
    body = json.dumps({"kind": "Status", "reason": reason, "message": message}).encode()
    raw = urllib3.HTTPResponse(body=body, status=code, preload_content=True)
    return transport.Reply(raw, "/api/v1/namespaces/a/configmaps/x")


@pytest.mark.parametrize(
    ("code", "reason", "kind", "exit_code"),
    [
        (403, "Forbidden", PermissionDenied, ExitCode.APPLY),
        (404, "NotFound", NotFoundError, ExitCode.APPLY),
        (422, "Invalid", KubeError, ExitCode.APPLY),
        (401, "Unauthorized", AuthError, ExitCode.AUTH),
        (500, "InternalError", ClusterFailing, ExitCode.CLUSTER),
        (503, "ServiceUnavailable", ClusterFailing, ExitCode.CLUSTER),
        (504, "Timeout", ClusterFailing, ExitCode.CLUSTER),
    ],
    ids=["forbidden", "not-found", "invalid", "unauthorized", "internal", "unavailable", "timeout"],
)
def test_each_answer_is_its_own_class(
    code: int, reason: str, kind: type[LockgateError], exit_code: ExitCode
) -> None:
    error = transport._error(answer(code, reason, "the reason"), "patch", CONFIGMAPS, "a", "")
    assert type(error) is kind
    assert isinstance(error, LockgateError) and error.exit_code is exit_code


def test_a_refusal_names_the_verb_and_resource_to_grant() -> None:
    error = transport._error(answer(403, "Forbidden", "nope"), "patch", CONFIGMAPS, "a", "")
    assert isinstance(error, PermissionDenied)
    assert "cannot patch configmaps in namespace a" in error.message
    assert "grant the runner's identity the 'patch' verb on 'configmaps'" in error.message
