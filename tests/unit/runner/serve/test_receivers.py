"""Registry receivers: the hook path as Flux derives it, each type's payload read for its
repository, the match against a sync's url, and the Runner's ``receivers`` refused at load
when they cannot work (naming file:line and the field)."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

import pytest

from lockgate.errors import UsageError
from runner.pipeline import config
from runner.serve import forges, receivers

FIXTURES = Path(__file__).parents[3] / "fixtures" / "webhooks"
TOKEN = b"0123456789abcdef-receiver"


def test_the_hook_path_is_flux_s_sha256_of_token_name_and_namespace() -> None:
    expected = hashlib.sha256(b"0123456789abcdef-receiver" + b"hub" + b"lockgate-system").hexdigest()
    path = receivers.hook_path(TOKEN, "hub", "lockgate-system")
    assert path == f"/hook/{expected}" and receivers.is_digest(path.removeprefix("/hook/"))
    assert receivers.hook_path(TOKEN, "hub", "other-ns") != path
    assert not receivers.is_digest("web") and not receivers.is_digest(expected.upper())


@pytest.mark.parametrize(
    ("kind", "name", "host", "repository", "tags"),
    [
        ("dockerhub", "dockerhub.json", "docker.io", "svendowideit/testhook", ("latest",)),
        ("quay", "quay.json", "quay.io", "dgangaia/test", ("latest",)),
        ("harbor", "harbor.json", "harbor.example.com", "library/alpine", ("latest",)),
        ("nexus", "nexus.json", None, "team/myimage", ("1.4.0",)),
    ],
)
def test_each_documented_payload_names_its_repository(
    kind: str, name: str, host: str | None, repository: str, tags: tuple[str, ...]
) -> None:
    payload = json.loads((FIXTURES / name).read_text())
    event = receivers.pushed(kind, {"x-nexus-webhook-id": "rm:repository:component"}, payload)
    assert (event.host, event.repository, event.tags, event.ignored) == (host, repository, tags, "")


def test_matching_is_by_repository_with_docker_hub_s_aliases_and_not_by_tag() -> None:
    hub = receivers.Pushed("docker.io", "library/nginx", ("1.27",))
    assert receivers.matches(hub, "oci://index.docker.io/library/nginx:stable")
    assert receivers.matches(hub, "oci://registry-1.docker.io/library/nginx")
    assert not receivers.matches(hub, "oci://ghcr.io/library/nginx")
    assert not receivers.matches(hub, "oci://docker.io/library/nginx-other")
    nexus = receivers.Pushed(None, "team/app", ())
    assert receivers.matches(nexus, "oci://nexus.example.com:8443/team/app:1.0.0")
    assert not receivers.matches(nexus, "oci://nexus.example.com:8443/team/app2")
    official = receivers.pushed("dockerhub", {}, {"repository": {"repo_name": "nginx"}, "push_data": {}})
    assert official.repository == "library/nginx"


def test_a_payload_without_its_repository_is_refused_naming_the_field() -> None:
    with pytest.raises(receivers.BadPayload, match=r"no repository\.repo_name"):
        receivers.pushed("dockerhub", {}, {"push_data": {"tag": "x"}})
    with pytest.raises(receivers.BadPayload, match="resource_url"):
        receivers.pushed("harbor", {}, {"type": "PUSH_ARTIFACT", "event_data": {"resources": [{}]}})
    with pytest.raises(receivers.BadPayload, match="not an image reference"):
        receivers.pushed("quay", {}, {"docker_url": "not a reference"})


def test_harbor_and_nexus_prove_the_token_besides_the_path() -> None:
    body = b'{"a": 1}'
    assert receivers.authenticate("harbor", {"authorization": TOKEN.decode()}, body, TOKEN)
    assert not receivers.authenticate("harbor", {"authorization": "Bearer " + TOKEN.decode()}, body, TOKEN)
    signature = hmac.new(TOKEN, body, hashlib.sha1).hexdigest()
    assert receivers.authenticate("nexus", {"x-nexus-webhook-signature": signature}, body, TOKEN)
    assert not receivers.authenticate("nexus", {"x-nexus-webhook-signature": signature}, body + b" ", TOKEN)
    assert not receivers.authenticate("nexus", {}, body, TOKEN)
    assert receivers.authenticate("dockerhub", {}, body, TOKEN)  # the path is its only proof


def test_each_forge_s_proof_names_its_scheme_and_a_wrong_one_none() -> None:
    body = b"{}"
    sha256 = hmac.new(TOKEN, body, hashlib.sha256).hexdigest()
    assert forges.authenticate({"x-gitlab-token": TOKEN.decode()}, body, TOKEN) == "gitlab"
    assert forges.authenticate({"x-gitlab-token": TOKEN.decode()[:-1]}, body, TOKEN) is None
    assert forges.authenticate({"x-gitea-signature": sha256}, body, TOKEN) == "gitea"
    assert forges.authenticate({"x-forgejo-signature": sha256.upper()}, body, TOKEN) == "forgejo"
    assert forges.authenticate({"x-hub-signature": f"sha256={sha256}"}, body, TOKEN) == "bitbucket"
    # GitHub's legacy X-Hub-Signature is SHA-1: not accepted
    sha1 = hmac.new(TOKEN, body, hashlib.sha1).hexdigest()
    assert forges.authenticate({"x-hub-signature": f"sha1={sha1}"}, body, TOKEN) is None
    assert forges.authenticate({"x-gitlab-token": "ünïcode"}, body, TOKEN) is None


HEAD = (
    "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
    "spec:\n  url: oci://127.0.0.1:5000/web:latest\n  interval: 5m\n  verify: {insecureSkip: true}\n---\n"
    "apiVersion: lockgate.dev/v1alpha1\nkind: Runner\nspec:\n  receivers:\n"
)


def test_receivers_load_and_bad_ones_are_refused_naming_the_field() -> None:
    good = HEAD + (
        "    - {name: hub, type: dockerhub, secretRef: {name: hub}}\n"
        "    - {name: harbor, type: harbor, secretRef: {name: h}, resources: [{kind: Sync, name: web}]}\n"
    )
    loaded = config.parse(good.encode(), "lockgate.yaml").runner.receivers
    assert [(r.name, r.type, r.secret_ref) for r in loaded] == [
        ("hub", "dockerhub", "hub"),
        ("harbor", "harbor", "h"),
    ]
    assert [r.name for r in loaded[1].resources] == ["web"]
    bad = HEAD + (
        "    - {name: hub, type: dockerhub, secretRef: {name: hub}, resources: [{name: wbe}]}\n"
        "    - {name: hub, type: quay, secretRef: {name: q}}\n"
    )
    with pytest.raises(UsageError) as caught:
        config.parse(bad.encode(), "lockgate.yaml")
    message = caught.value.message
    assert "lockgate.yaml:13: spec.receivers[0].resources[0].name: no Sync named 'wbe'" in message
    assert "did you mean web?" in message
    assert "lockgate.yaml:14: spec.receivers[1].name: duplicate receiver 'hub'" in message
    for wrong in ("type: gcr, secretRef: {name: x}", "type: quay"):
        with pytest.raises(UsageError, match=r"receivers\[0\]"):
            config.parse((HEAD + f"    - {{name: x, {wrong}}}\n").encode(), "lockgate.yaml")


def test_gitea_sending_github_s_headers_too_is_named_gitea() -> None:
    body = b'{"ref": "refs/heads/main", "after": "bffeb74224043ba2feb48d137756c8a9331c449a"}'
    sha256 = hmac.new(TOKEN, body, hashlib.sha256).hexdigest()
    headers = {
        "x-gitea-signature": sha256,
        "x-hub-signature-256": f"sha256={sha256}",
        "x-gitea-event": "push",
        "x-github-event": "push",
    }
    scheme = forges.authenticate(headers, body, TOKEN)
    assert scheme == "gitea"
    event = forges.classify(scheme, headers, json.loads(body))
    assert (event.kind, event.text) == ("trigger", "webhook: Gitea push refs/heads/main@bffeb7422404")
