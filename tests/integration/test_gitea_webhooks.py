"""Webhooks sent by the real Gitea (``tests/world/gitea.py``) to a running ``lockgate serve``.

No payload here is written by the test: a commit is pushed to a Gitea repository over HTTP,
Gitea's own webhook sender signs and delivers its push event to ``/hook/SYNC``, and what
Gitea recorded of each delivery (the request's headers, the answer's status) is read back
from Gitea. The Runner's webhook token is the hook's secret; a hook with another secret is
answered 401 and triggers nothing. Branch and tag pushes, Gitea's Test Delivery and its
``create`` event each trigger a pass named after the ref and commit Gitea sent.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.forge_support import commit_and_push, git
from tests.integration.serve_support import Served, start_serve, sync_doc
from tests.integration.test_serve import TOKEN, webhook_secret
from tests.world.gitea import Gitea
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


def add_hook(gitea: Gitea, repo: str, url: str, secret: str) -> int:
    """A repository webhook of Gitea's own type, sending push events as JSON; its id."""
    hook = gitea.call(
        "POST",
        f"/repos/{gitea.user}/{repo}/hooks",
        json={
            "type": "gitea",
            "config": {"url": url, "content_type": "json", "secret": secret},
            "events": ["push"],
            "active": True,
        },
    )
    return int(hook["id"])


def wait_deliveries(gitea: Gitea, hook_id: int, count: int, timeout: float = 20) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while len(found := gitea.deliveries(hook_id)) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def triggers(served: Served, count: int, timeout: float = 10) -> list[tuple[str, str]]:
    """The syncs serve triggered and why, once there are ``count`` (or the time is up)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [
            (str(e["sync"]), str(e.get("reason", "")))
            for e in served.events()
            if e.get("msg") == "sync triggered"
        ]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_gitea_s_own_webhooks_trigger_the_sync_they_name_and_a_wrong_secret_nothing(
    cluster: Cluster, registry: Registry, gitea: Gitea, unique: str, tmp_path: Path
) -> None:
    runner_ns = f"{unique}-run"
    webhook_secret(cluster, runner_ns)
    served = start_serve(
        cluster,
        tmp_path / "serve",
        [
            sync_doc("app", f"oci://{registry.host}/{unique}/app:latest", runner_ns),
            sync_doc("other", f"oci://{registry.host}/{unique}/other:latest", runner_ns),
        ],
        runner={"namespace": runner_ns, "webhook": {"secretRef": {"name": "webhook"}}},
    )
    try:
        clone = gitea.create_repo(unique)
        listener = f"http://127.0.0.1:{served.webhook_port}/hook"
        right = add_hook(gitea, unique, f"{listener}/app", TOKEN)
        wrong = add_hook(gitea, unique, f"{listener}/other", "not-the-runner-webhook-token")
        sha = commit_and_push(clone, tmp_path / "src", {"README.md": "app\n"})

        # ---- Gitea's record: the right secret answered 200, the wrong one 401
        delivered = wait_deliveries(gitea, right, 1)
        refused = wait_deliveries(gitea, wrong, 1)
        assert len(delivered) == 1 and len(refused) == 1, (delivered, refused, served.tail())
        assert delivered[0]["event"] == "push"
        assert delivered[0]["response"]["status"] == 200, delivered[0]["response"]
        assert delivered[0]["succeeded"] is True
        assert refused[0]["response"]["status"] == 401, refused[0]["response"]
        assert refused[0]["succeeded"] is False
        # what the real Gitea sent is what runner.serve.forges reads: its event and HEX signature
        sent = delivered[0]["request"]["headers"]
        assert sent["X-Gitea-Event"] == "push" and len(sent["X-Gitea-Signature"]) == 64, sent
        assert delivered[0]["request"]["url"] == f"{listener}/app"

        # ---- serve: app triggered once, named after Gitea's push; other never (serve logs a
        # trigger before it answers, and Gitea records a delivery after the answer)
        pushed = ("app", f"webhook: Gitea push refs/heads/main@{sha[:12]}")
        assert triggers(served, 1) == [pushed], served.tail()

        # ---- Gitea's "Test Delivery" (it has no ping) is a push of the default branch's head
        gitea.call("POST", f"/repos/{gitea.user}/{unique}/hooks/{right}/tests")
        tested = wait_deliveries(gitea, right, 2)
        assert [d["response"]["status"] for d in tested] == [200, 200], tested[-1]["response"]
        assert triggers(served, 2) == [pushed, pushed], served.tail()

        # ---- a tag pushed: Gitea's push (full ref) and, once subscribed, its create (short ref, sha)
        subscribed = {"events": ["push", "create"]}
        gitea.call("PATCH", f"/repos/{gitea.user}/{unique}/hooks/{right}", json=subscribed)
        git(tmp_path / "src", "tag", "v1.0.0")
        git(tmp_path / "src", "push", "--quiet", "origin", "refs/tags/v1.0.0")
        tagged = wait_deliveries(gitea, right, 4)
        assert sorted(d["event"] for d in tagged[2:]) == ["create", "push"], tagged[2:]
        assert [d["response"]["status"] for d in tagged] == [200] * 4, [d["response"] for d in tagged]
        assert sorted(triggers(served, 4)[2:]) == [
            ("app", f"webhook: Gitea create v1.0.0@{sha[:12]}"),
            ("app", f"webhook: Gitea push refs/tags/v1.0.0@{sha[:12]}"),
        ], served.tail()
        refused = wait_deliveries(gitea, wrong, 2)
        assert [d["response"]["status"] for d in refused] == [401, 401], [d["response"] for d in refused]
        assert {sync for sync, _ in triggers(served, 4)} == {"app"}, served.tail()
    finally:
        served.stop()
