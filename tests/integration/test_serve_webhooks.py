"""Registry receivers and forge webhooks against a running ``lockgate serve``.

Each registry's and forge's documented payload (tests/fixtures/webhooks, README there says
where each comes from) is replayed, authenticated the way that vendor does it, on the
webhook listener of a real ``serve`` (a child process on the world's cluster). Docker Hub,
Quay, Harbor, Nexus, GitLab, Gitea/Forgejo and Bitbucket are hosted services or servers
that cannot run here; what they send is only an HTTP POST, which the test sends as they do.
(Gitea also runs here: test_gitea_webhooks.py has the real one deliver its own webhooks.)
The receivers' hook paths come from ``lockgate receivers``, which reads their Secrets.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.serve_support import LOCKGATE, Served, start_serve, sync_doc
from tests.integration.test_serve import TOKEN, webhook_secret
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

FIXTURES = Path(__file__).parent.parent / "fixtures" / "webhooks"
#: one token per receiver (>= 16 bytes), each in its own Secret as a Flux Receiver's
TOKENS = {name: f"{name}-receiver-token-0123456789" for name in ("hub", "quay", "harbor", "nexus")}


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def body_of(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def triggers(served: Served) -> list[tuple[str, str]]:
    return [
        (str(e["sync"]), str(e.get("reason", "")))
        for e in served.events()
        if e.get("msg") == "sync triggered"
    ]


def wait_triggers(served: Served, count: int) -> list[tuple[str, str]]:
    deadline = time.monotonic() + 10
    while len(found := triggers(served)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def post(served: Served, path: str, body: bytes, headers: dict[str, str]) -> Any:
    import requests

    return requests.post(
        f"http://127.0.0.1:{served.webhook_port}{path}",
        data=body,
        headers={"Content-Type": "application/json", **headers},
        timeout=10,
    )


def test_registry_receivers_trigger_only_the_syncs_of_the_pushed_repository(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns = f"{unique}-run"
    cluster.kubectl("create", "namespace", runner_ns)
    for name, token in TOKENS.items():
        cluster.kubectl("create", "secret", "generic", name, "-n", runner_ns, f"--from-literal=token={token}")
    host = registry.host
    # the payloads' repositories (Docker Hub's is always docker.io; a self-hosted Quay or Harbor
    # names its own host, here the world's registry; Nexus names the image without a host)
    syncs = [
        sync_doc("hub", "oci://docker.io/svendowideit/testhook:latest", runner_ns),
        sync_doc("quay", f"oci://{host}/{unique}/test:latest", runner_ns),
        sync_doc("harbor", f"oci://{host}/{unique}/alpine", runner_ns, semver=">=1.0.0"),
        sync_doc("nexus", f"oci://{host}/{unique}/myimage:1.4.0", runner_ns),
        sync_doc("other", f"oci://{host}/{unique}/other:latest", runner_ns),
    ]
    receivers = [
        {"name": "hub", "type": "dockerhub", "secretRef": {"name": "hub"}},
        {"name": "quay", "type": "quay", "secretRef": {"name": "quay"}},
        {"name": "harbor", "type": "harbor", "secretRef": {"name": "harbor"}},
        # resources narrow it: "other" is never triggered by this receiver, whatever the payload
        {"name": "nexus", "type": "nexus", "secretRef": {"name": "nexus"}, "resources": [{"name": "nexus"}]},
    ]
    served = start_serve(cluster, tmp_path, syncs, runner={"namespace": runner_ns, "receivers": receivers})
    try:
        listed = subprocess.run(
            [
                *LOCKGATE,
                "receivers",
                f"--config={served.config}",
                f"--kubeconfig={cluster.kubeconfig}",
                "-o",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listed.returncode == 0, listed.stderr
        paths = {r["name"]: r["path"] for r in json.loads(listed.stdout)}
        # Flux's derivation: /hook/ + sha256(token + name + namespace)
        for name, token in TOKENS.items():
            digest = hashlib.sha256(f"{token}{name}{runner_ns}".encode()).hexdigest()
            assert paths[name] == f"/hook/{digest}"
        assert not any(TOKENS[name] in listed.stdout for name in TOKENS)

        hub = fixture("dockerhub.json")
        quay = fixture("quay.json")
        quay["docker_url"] = f"{host}/{unique}/test"
        quay["updated_tags"] = ["not-the-sync-tag"]  # a tag outside the sync's: still its repository
        harbor = fixture("harbor.json")
        harbor["event_data"]["resources"][0]["resource_url"] = f"{host}/{unique}/alpine:latest"
        nexus = fixture("nexus.json")
        nexus["component"]["name"] = f"{unique}/myimage"
        harbor_auth = {"Authorization": TOKENS["harbor"]}

        def nexus_signed(body: bytes, key: str) -> dict[str, str]:
            return {
                "X-Nexus-Webhook-Id": "rm:repository:component",
                "X-Nexus-Webhook-Signature": hmac.new(key.encode(), body, hashlib.sha1).hexdigest(),
            }

        # ---- refused: a wrong token (so a path no receiver has), Harbor's header, Nexus's signature
        wrong_path = "/hook/" + hashlib.sha256(f"not-the-token-at-all{'hub'}{runner_ns}".encode()).hexdigest()
        refused = [
            post(served, wrong_path, body_of(hub), {}),
            post(served, paths["harbor"], body_of(harbor), {"Authorization": "not-the-harbor-token"}),
            post(served, paths["harbor"], body_of(harbor), {}),
            post(served, paths["nexus"], body_of(nexus), nexus_signed(body_of(nexus), "not-the-nexus-token")),
            post(served, paths["nexus"], body_of(nexus), {}),
        ]
        assert [r.status_code for r in refused] == [401] * 5, [r.text for r in refused]
        # ---- another repository: answered, nothing triggered
        elsewhere = fixture("dockerhub.json")
        elsewhere["repository"]["repo_name"] = "someone/else"
        quay_elsewhere = dict(quay, docker_url=f"{host}/{unique}/nope")
        nexus_other = fixture("nexus.json")
        nexus_other["component"]["name"] = f"{unique}/other"  # other's repository, not in resources
        ignored = [
            post(served, paths["hub"], body_of(elsewhere), {}),
            post(served, paths["quay"], body_of(quay_elsewhere), {}),
            post(
                served,
                paths["nexus"],
                body_of(nexus_other),
                nexus_signed(body_of(nexus_other), TOKENS["nexus"]),
            ),
        ]
        assert [r.status_code for r in ignored] == [200] * 3, [r.text for r in ignored]
        assert all(r.json()["triggered"] == [] for r in ignored)
        time.sleep(0.5)
        assert triggers(served) == [], served.tail()

        # ---- each registry's push triggers exactly the sync of its repository
        answers = {
            "hub": post(served, paths["hub"], body_of(hub), {}),
            "quay": post(served, paths["quay"], body_of(quay), {}),
            "harbor": post(served, paths["harbor"], body_of(harbor), harbor_auth),
            "nexus": post(
                served, paths["nexus"], body_of(nexus), nexus_signed(body_of(nexus), TOKENS["nexus"])
            ),
        }
        for name, answer in answers.items():
            assert answer.status_code == 200, (name, answer.text)
            assert answer.json()["triggered"] == [name], (name, answer.text)
        found = wait_triggers(served, 4)
        assert sorted(sync for sync, _ in found) == ["harbor", "hub", "nexus", "quay"], found
        reasons = dict(found)
        assert reasons["hub"] == "webhook: dockerhub docker.io/svendowideit/testhook:latest"
        assert reasons["harbor"] == f"webhook: harbor {host}/{unique}/alpine:latest"
        # a pull is no push: Harbor's PULL_ARTIFACT is answered and triggers nothing
        pulled = dict(harbor, type="PULL_ARTIFACT")
        answer = post(served, paths["harbor"], body_of(pulled), harbor_auth)
        assert answer.status_code == 200 and answer.json()["triggered"] == [], answer.text
        time.sleep(0.3)
        assert len(triggers(served)) == 4
    finally:
        served.stop()


def test_forge_webhooks_are_checked_as_github_s_and_pings_answered(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns = f"{unique}-run"
    webhook_secret(cluster, runner_ns)
    served = start_serve(
        cluster,
        tmp_path,
        [sync_doc("a", f"oci://{registry.host}/{unique}/a:latest", runner_ns)],
        runner={"namespace": runner_ns, "webhook": {"secretRef": {"name": "webhook"}}},
    )
    key = TOKEN.encode()

    def hub_sha256(body: bytes, secret: bytes = key) -> str:
        return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()

    def hex_sha256(body: bytes, secret: bytes = key) -> str:
        return hmac.new(secret, body, hashlib.sha256).hexdigest()

    gitlab = (FIXTURES / "gitlab-push.json").read_bytes()
    gitea = (FIXTURES / "gitea-push.json").read_bytes()
    cloud = (FIXTURES / "bitbucket-cloud-push.json").read_bytes()
    server = (FIXTURES / "bitbucket-server-refs-changed.json").read_bytes()
    ping = (FIXTURES / "bitbucket-server-ping.json").read_bytes()
    try:
        # ---- wrong token or signature: 401, nothing triggered (issue 25's bad input: GitLab's wrong token)
        wrong = [
            served.hook(
                "a", gitlab, {"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "not-the-webhook-token"}
            ),
            served.hook("a", gitlab, {"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": ""}),
            served.hook(
                "a", gitea, {"X-Gitea-Event": "push", "X-Gitea-Signature": hex_sha256(gitea, b"nope")}
            ),
            served.hook("a", gitea, {"X-Forgejo-Event": "push", "X-Forgejo-Signature": hex_sha256(gitlab)}),
            served.hook(
                "a", cloud, {"X-Event-Key": "repo:push", "X-Hub-Signature": hub_sha256(cloud, b"nope")}
            ),
            served.hook(
                "a",
                server,
                {"X-Event-Key": "repo:refs_changed", "X-Hub-Signature": "sha1=" + hex_sha256(server)[:40]},
            ),
            served.hook("a", ping, {"X-Event-Key": "diagnostics:ping"}),
        ]
        assert [r.status_code for r in wrong] == [401] * 7, [r.text for r in wrong]
        # ---- pings and events that ask for nothing: 200, nothing triggered
        pong = served.hook(
            "a", ping, {"X-Event-Key": "diagnostics:ping", "X-Hub-Signature": hub_sha256(ping)}
        )
        assert pong.status_code == 200 and "pong" in pong.json()["message"], pong.text
        assert pong.json()["triggered"] is False
        merge = served.hook("a", gitlab, {"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": TOKEN})
        assert merge.status_code == 200 and "ignored" in merge.json()["message"], merge.text
        time.sleep(0.5)
        assert triggers(served) == [], served.tail()

        # ---- each forge's push triggers a pass naming its ref and commit
        json_type = {"Content-Type": "application/json"}
        pushes = [
            served.hook("a", gitlab, {**json_type, "X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": TOKEN}),
            served.hook(
                "a",
                gitea,
                # Gitea sends GitHub's event and signature headers too, for GitHub's receivers
                {
                    **json_type,
                    "X-Gitea-Event": "push",
                    "X-Gitea-Signature": hex_sha256(gitea),
                    "X-GitHub-Event": "push",
                    "X-Hub-Signature-256": hub_sha256(gitea),
                },
            ),
            served.hook(
                "a", gitea, {**json_type, "X-Forgejo-Event": "push", "X-Forgejo-Signature": hex_sha256(gitea)}
            ),
            served.hook(
                "a", cloud, {**json_type, "X-Event-Key": "repo:push", "X-Hub-Signature": hub_sha256(cloud)}
            ),
            served.hook(
                "a",
                server,
                {**json_type, "X-Event-Key": "repo:refs_changed", "X-Hub-Signature": hub_sha256(server)},
            ),
        ]
        assert [r.status_code for r in pushes] == [200] * 5, [r.text for r in pushes]
        assert all(r.json()["triggered"] is True for r in pushes)
        reasons = [reason for _, reason in wait_triggers(served, 5)]
        assert reasons == [
            "webhook: GitLab Push Hook refs/heads/master@da1560886d4f",
            "webhook: Gitea push refs/heads/develop@bffeb7422404",
            "webhook: Forgejo push refs/heads/develop@bffeb7422404",
            "webhook: Bitbucket repo:push main@709d658dc5b6",
            "webhook: Bitbucket repo:refs_changed refs/heads/master@178864a7d521",
        ], served.tail()
    finally:
        served.stop()


def test_a_receiver_token_shorter_than_16_bytes_stops_serve_at_start(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns = f"{unique}-run"
    cluster.kubectl("create", "namespace", runner_ns)
    cluster.kubectl(
        "create", "secret", "generic", "short", "-n", runner_ns, "--from-literal=token=short-quay"
    )
    receivers = [{"name": "quay", "type": "quay", "secretRef": {"name": "short"}}]
    syncs = [sync_doc("a", f"oci://{registry.host}/{unique}/a:latest", runner_ns)]
    served = start_serve(
        cluster, tmp_path, syncs, runner={"namespace": runner_ns, "receivers": receivers}, wait_ready=False
    )
    try:
        code = served.proc.wait(60)
    finally:
        served.stop()
    out = served.log.read_text()
    assert code == 2, out
    assert (
        f"Secret/{runner_ns}/short (spec.receivers[0].secretRef.name): its 'token' entry is 10 bytes long; "
        "the receiver token must be at least 16 bytes"
    ) in out
    assert "short-quay" not in out
