"""Replies are bounded everywhere (issue 30 item 3): a peer answering without end costs nothing.

Before, every client read a reply whole: a notification endpoint answering 1 GiB made
``reconcile`` peak at 2.1 GiB, and a larger one killed the shared ``serve``. Here a real
local HTTP peer (``tests/world/endless.py``) answers each client class with a body that
never ends, three ways (no length, a terabyte ``Content-Length``, chunked without a last
chunk), and the real CLI or ``serve`` runs as a child under an address-space cap, its peak
resident set read from ``wait4`` (or ``/proc``'s ``VmHWM`` while ``serve`` runs): it stays
under 150 MiB, and an error names the endpoint, never a token.

Client classes: notification delivery (forge statuses and events, ``runner/serve/notify``),
the forge API client (``lockgate images update --pr``, ``lockgate/forge/base.py``), the
cloud token services (``lockgate/registry/cloud/http.py``: AWS STS here; GCP and Azure go
through the same call), a registry's token service and its error bodies
(``lockgate/registry``). Everything else is the world (cluster, registry, git remote).
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate.errors import ExitCode
from tests.integration import bombs_support as bombs
from tests.integration.forge_support import push_built_from, runner, secret, write_config
from tests.integration.images_support import native_config, seed_tags
from tests.integration.reconcile_support import configmap, dump, namespace
from tests.integration.serve_support import start_serve, sync_doc
from tests.world.endless import MODES, EndlessPeer
from tests.world.gitremote import GitRemote
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

#: the issue's bound on the peak resident set of the process that reads the reply
PEAK_MIB = 150
SHA = "3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a09"
FORGE_TOKEN = "gitea-statusToken-0123456789abcdef"
HMAC_KEY = "generic-hmac-key-0123456789"


@pytest.fixture(params=MODES)
def peer(request: pytest.FixtureRequest) -> Iterator[EndlessPeer]:
    with EndlessPeer(request.param).running() as running:
        yield running


def _notifying_config(
    cluster: Cluster, registry: Registry, peer: EndlessPeer, unique: str, path: Path
) -> tuple[Path, str]:
    """A sync whose commit status (gitea, its repository on the peer) and events (generic)
    both go to the endless peer."""
    runner_ns = f"{unique}-r"
    secret(cluster, runner_ns, "forge-token", token=FORGE_TOKEN)
    secret(cluster, runner_ns, "hmac", token=HMAC_KEY)
    repository = f"{peer.url}/acme/app"
    files = {"a.yaml": dump(namespace(unique), configmap("app", unique, {}))}
    url = push_built_from(registry, f"{unique}/app", files, source=repository, sha=SHA)
    providers = [
        {"type": "gitea", "address": repository, "secretRef": {"name": "forge-token"}},
        {"type": "generic", "address": f"{peer.url}/events", "secretRef": {"name": "hmac"}},
    ]
    return write_config(path, runner("east"), sync_doc("web", url, runner_ns, notify=providers)), runner_ns


def test_reconcile_never_reads_a_notification_reply_it_does_not_need(
    cluster: Cluster,
    registry: Registry,
    peer: EndlessPeer,
    unique: str,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    config, _ = _notifying_config(cluster, registry, peer, unique, tmp_path / "lockgate.yaml")

    run = bombs.lockgate(
        "reconcile", "--config", str(config), f"--kubeconfig={cluster.kubeconfig}", timeout=240
    )

    record_property("peak_mib", round(run.peak_mib))
    assert run.code == 0, run.err[-3000:]
    assert run.peak_mib < PEAK_MIB, f"peak {run.peak_mib:.0f} MiB ({peer.mode}); {peer.sent:,} bytes sent"
    statuses = peer.requests(f"/api/v1/repos/acme/app/statuses/{SHA}")
    assert [a.method for a in statuses] == ["POST", "POST"], peer.asked  # pending, then success
    assert peer.requests("/events"), peer.asked
    assert "notification to gitea for sync web failed" not in run.err  # a 200 is what counts
    assert FORGE_TOKEN not in run.err + run.out and HMAC_KEY not in run.err + run.out


def _notified(provider: str, event: dict[str, Any]) -> bool:
    return event.get("provider") == provider and str(event.get("msg", "")).startswith("notified")


def test_serve_stays_small_and_ready_while_a_provider_answers_without_end(
    cluster: Cluster,
    registry: Registry,
    peer: EndlessPeer,
    unique: str,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    config, _ = _notifying_config(cluster, registry, peer, unique, tmp_path / "docs.yaml")
    docs = [d for d in yaml.safe_load_all(config.read_text()) if d]
    syncs = [d for d in docs if d["kind"] == "Sync"]
    served = start_serve(
        cluster, tmp_path / "serve", syncs, runner={"clusterName": "east"}, preexec_fn=bombs.cap_memory
    )
    try:
        served.wait_sync_ready("web")
        delivered: list[str] = []
        for provider in ("gitea", "generic"):
            try:
                served.wait_event(
                    functools.partial(_notified, provider),
                    what=f"the {provider} notification delivered",
                    timeout=60,
                )
                delivered.append(provider)
            except AssertionError:
                pass
        peak = bombs.peak_mib(served.proc.pid)
        record_property("peak_mib", round(peak))
        assert peak < PEAK_MIB, f"serve peaked at {peak:.0f} MiB ({peer.mode}); {peer.sent:,} bytes sent"
        assert delivered == ["gitea", "generic"], served.tail()
        assert served.readyz().status_code == 200
        assert FORGE_TOKEN not in served.log.read_text()
        assert served.stop() == 0, served.tail()
    finally:
        served.stop()


def _automation(git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path) -> Path:
    """A checkout holding a native ImageAutomation whose one marked image has a newer tag."""

    def git(cwd: Path, *args: str) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

    url = git_remote.create(unique)
    work = tmp_path / "seed"
    git(tmp_path, "clone", "--quiet", url, str(work))
    native_config(work, [f"{{name: app, image: '{registry.host}/{unique}', semver: '*'}}"])
    (work / "deploy").mkdir()
    (work / "deploy" / "app.yaml").write_text(
        f'image: {registry.host}/{unique}:1.0.0 # {{"$imagepolicy": "apps:app"}}\n'
    )
    git(work, "add", ".")
    git(work, "-c", "user.name=seed", "-c", "user.email=seed@example.com", "commit", "--quiet", "-m", "seed")
    git(work, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    seed_tags(registry.host, unique, ["1.0.0", "1.1.0"])
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "--quiet", "--branch", "main", url, str(checkout))
    return checkout


def test_images_update_pr_refuses_an_endless_forge_reply_naming_the_api(
    git_remote: GitRemote,
    registry: Registry,
    peer: EndlessPeer,
    unique: str,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    """The forge API (GitHub's, stood in by the endless peer) answers the pull-request lookup."""
    checkout = _automation(git_remote, registry, unique, tmp_path)
    token = "ghs_pullRequestToken-0123456789"
    env = {"GITHUB_TOKEN": token, "GITHUB_API_URL": peer.url, "GITHUB_REPOSITORY": "acme/app"}

    run = bombs.lockgate(
        "images", "update", "--path", str(checkout), "--pr", "--branch", "image-updates", env=env, timeout=240
    )

    record_property("peak_mib", round(run.peak_mib))
    assert run.peak_mib < PEAK_MIB, f"peak {run.peak_mib:.0f} MiB ({peer.mode}); {peer.sent:,} bytes sent"
    assert run.code == ExitCode.FAILURE, (run.code, run.err[-3000:])
    assert "github API GET /repos/acme/app/pulls" in run.err and peer.url in run.err, run.err[-3000:]
    assert "1 MiB" in run.err, run.err[-3000:]
    assert token not in run.err + run.out


def test_a_cloud_token_service_answering_without_end_is_refused_naming_it(
    peer: EndlessPeer, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    """AWS STS (a SaaS: the endless peer stands at its documented endpoint variable)."""
    web_identity = "eyJhbGciOiJSUzI1NiJ9.web-identity-token.signature"
    (tmp_path / "web-identity").write_text(web_identity)
    env = {
        "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/puller",
        "AWS_WEB_IDENTITY_TOKEN_FILE": str(tmp_path / "web-identity"),
        "AWS_ENDPOINT_URL_STS": f"{peer.url}/sts",
        "AWS_ENDPOINT_URL_ECR": f"{peer.url}/ecr",
    }
    reference = f"oci://123456789012.dkr.ecr.eu-west-1.amazonaws.com/app@sha256:{'0' * 64}"

    run = bombs.lockgate("pull", reference, "--provider", "aws", "-O", str(tmp_path / "out"), env=env)

    record_property("peak_mib", round(run.peak_mib))
    assert run.peak_mib < PEAK_MIB, f"peak {run.peak_mib:.0f} MiB ({peer.mode}); {peer.sent:,} bytes sent"
    assert run.code == ExitCode.AUTH, (run.code, run.err[-3000:])
    assert "STS AssumeRoleWithWebIdentity" in run.err and peer.url in run.err, run.err[-3000:]
    assert "1 MiB" in run.err, run.err[-3000:]
    assert web_identity not in run.err + run.out
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("repo", ["app", "plain/app"], ids=["token-service", "error-body"])
def test_a_registry_answering_without_end_is_refused_naming_it(
    peer: EndlessPeer, tmp_path: Path, repo: str, record_property: Callable[[str, object], None]
) -> None:
    """The registry is the endless peer itself: its token realm (after a Bearer challenge)
    or its error body never ends. A registry anyone can name is a peer like any other."""
    host = peer.url.removeprefix("http://")
    password = "registry-password-0123456789"
    reference = f"oci://{host}/{repo}@sha256:{'0' * 64}"

    run = bombs.lockgate(
        "pull", reference, "--insecure", "--creds", f"puller:{password}", "-O", str(tmp_path / "out")
    )

    record_property("peak_mib", round(run.peak_mib))
    assert run.peak_mib < PEAK_MIB, f"peak {run.peak_mib:.0f} MiB ({peer.mode}); {peer.sent:,} bytes sent"
    assert run.code == ExitCode.REGISTRY, (run.code, run.err[-3000:])
    assert host in run.err, run.err[-3000:]
    if repo == "app":
        assert "token service" in run.err and "1 MiB" in run.err, run.err[-3000:]
    else:
        assert "HTTP 400" in run.err, run.err[-3000:]
    assert password not in run.err + run.out
