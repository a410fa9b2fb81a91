"""What the API server's answers become: refusals are apply errors, a failing server is not."""

from __future__ import annotations

import json

import pytest
import requests

from lockgate.errors import AuthError, ExitCode, LockgateError
from runner.kube import transport
from runner.kube.discovery import Resource
from runner.kube.errors import ClusterFailing, KubeError, NotFoundError, PermissionDenied

CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps", True)


def answer(code: int, reason: str, message: str) -> requests.Response:
    """A response as requests builds it from the wire (no server involved: pure mapping)."""
    response = requests.Response()
    response.status_code = code
    response._content = json.dumps({"kind": "Status", "reason": reason, "message": message}).encode()
    response.request = requests.Request(
        "PATCH", "https://127.0.0.1:6443/api/v1/namespaces/a/configmaps/x"
    ).prepare()
    return response


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
