"""Commit statuses on every forge, from a real runner (``lockgate reconcile`` and ``serve``).

Gitea is the real one (built from the Go module proxy, ``tests/world/gitea.py``): the
statuses are read back from its API. GitLab, Bitbucket Cloud, Bitbucket Server and Azure
DevOps cannot run here: each is stood in by a local HTTP endpoint (``tests/world/forges.py``)
implementing its documented status request and recording what it receives; the Bitbucket
Server one speaks TLS with a certificate of a private CA, trusted through the provider's
``certSecretRef``. Everything else is the world: registry, cluster, Secrets, the passes.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.integration.forge_support import (
    commit_and_push,
    push_built_from,
    runner,
    secret,
    secret_file,
    write_config,
)
from tests.integration.reconcile_support import cli, configmap, dump, namespace
from tests.integration.serve_support import start_serve, sync_doc
from tests.world.forges import ForgeStandIn
from tests.world.gitea import Gitea
from tests.world.kube import Cluster
from tests.world.pki import CertificateAuthority
from tests.world.registry import Registry

pytestmark = pytest.mark.world

SHA = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"
TOKENS = {
    "gitlab": "glpat-statusToken0123456789",
    "bitbucket": "deploy-bot:app-password-0123",
    "bitbucketserver": "bbs-http-access-token-0123",
    "azuredevops": "azdo-pat-0123456789abcdef",
}


def _web_url(source: str) -> str:
    """A repository's HTTPS URL from the clone URL forms the sources use (the provider's address)."""
    if source.startswith("git@"):
        host, _, path = source.removeprefix("git@").partition(":")
        source = f"https://{host}/{path}"
    return source.removesuffix(".git").replace("https://acme@", "https://")


def _files(ns: str) -> dict[str, str]:
    return {"a.yaml": dump(namespace(ns), configmap("app", ns, {}))}


def test_gitea_shows_pending_then_success_from_a_real_runner(
    cluster: Cluster, registry: Registry, gitea: Gitea, unique: str, tmp_path: Path
) -> None:
    """The real Gitea: its API base is derived from the provider's address (the repository)."""
    sha = commit_and_push(gitea.create_repo(unique), tmp_path / "src", {"README.md": "app\n"})
    runner_ns = f"{unique}-r"
    secret(cluster, runner_ns, "gitea-token", token=gitea.token)
    source = f"{gitea.url}/{gitea.user}/{unique}.git"
    url = push_built_from(registry, f"{unique}/app", _files(unique), source=source, sha=sha)
    provider = {
        "type": "gitea",
        "address": f"{gitea.url}/{gitea.user}/{unique}",
        "secretRef": {"name": "gitea-token"},
        "targetURL": "https://dash.example/web",
    }
    config = write_config(
        tmp_path / "lockgate.yaml", runner("east"), sync_doc("web", url, runner_ns, notify=[provider])
    )

    first = cli(cluster, "--config", str(config))
    assert first.code == 0, first.err
    statuses = gitea.call("GET", f"/repos/{gitea.user}/{unique}/commits/{sha}/statuses")
    oldest_first = sorted(statuses, key=lambda s: int(s["id"]))
    assert [s["status"] for s in oldest_first] == ["pending", "success"], statuses
    assert {s["context"] for s in oldest_first} == {"lockgate/east/web"}
    assert oldest_first[0]["description"].startswith("applying v1@sha256:")
    assert oldest_first[1]["description"].startswith("applied ")
    assert oldest_first[1]["target_url"] == "https://dash.example/web"
    combined = gitea.call("GET", f"/repos/{gitea.user}/{unique}/commits/{sha}/status")
    assert combined["state"] == "success"

    again = cli(cluster, "--config", str(config))  # nothing new: Gitea shows it already
    assert again.code == 0, again.err
    assert len(gitea.call("GET", f"/repos/{gitea.user}/{unique}/commits/{sha}/statuses")) == 2
    assert gitea.token not in first.err + again.err


@pytest.fixture
def stand_ins(tmp_path: Path) -> Iterator[tuple[dict[str, ForgeStandIn], Path]]:
    (tmp_path / "pki").mkdir()
    ca = CertificateAuthority.create(tmp_path / "pki")
    server = ca.issue(tmp_path / "pki" / "bbs", "bitbucket-server", server=True, hosts=("127.0.0.1",))
    basic = "Basic " + base64.b64encode(TOKENS["bitbucket"].encode()).decode()
    pat = "Basic " + base64.b64encode(f":{TOKENS['azuredevops']}".encode()).decode()
    forges = {
        "gitlab": ForgeStandIn("gitlab", ("PRIVATE-TOKEN", TOKENS["gitlab"])),
        "bitbucket": ForgeStandIn("bitbucket", ("Authorization", basic)),
        "bitbucketserver": ForgeStandIn(
            "bitbucketserver", ("Authorization", f"Bearer {TOKENS['bitbucketserver']}"), tls=server
        ),
        "azuredevops": ForgeStandIn("azuredevops", ("Authorization", pat)),
    }
    with ExitStack() as stack:
        yield {name: stack.enter_context(f.running()) for name, f in forges.items()}, ca.pair.cert


def test_gitlab_bitbucket_bitbucket_server_and_azure_devops_get_their_own_status_requests(
    cluster: Cluster,
    registry: Registry,
    stand_ins: tuple[dict[str, ForgeStandIn], Path],
    unique: str,
    tmp_path: Path,
) -> None:
    """GitLab, Bitbucket Cloud/Server and Azure DevOps are stand-ins (tests/world/forges.py)."""
    forges, ca = stand_ins
    runner_ns = f"{unique}-r"
    for name, token in TOKENS.items():
        secret(cluster, runner_ns, f"{name}-token", token=token)
    secret_file(cluster, runner_ns, "bbs-ca", "ca.crt", ca)
    sources = {
        "gitlab": ("https://gitlab.example.com/acme/platform/app.git", "/api/v4"),
        "bitbucket": ("git@bitbucket.org:acme/app.git", "/2.0"),
        "bitbucketserver": ("https://bitbucket.example.com/scm/OPS/app.git", "/rest/api/latest"),
        "azuredevops": ("https://acme@dev.azure.com/acme/web/_git/app", "/acme"),
    }
    syncs: list[dict[str, Any]] = []
    for index, (name, (source, root)) in enumerate(sources.items()):
        url = push_built_from(
            registry, f"{unique}/{name}", _files(f"{unique}-{index}"), source=source, sha=SHA
        )
        provider: dict[str, Any] = {
            "type": name,
            "address": _web_url(source),  # the repository, pinned; its API is the stand-in
            "secretRef": {"name": f"{name}-token"},
            "apiURL": forges[name].url + root,
        }
        if name == "bitbucketserver":
            provider["certSecretRef"] = {"name": "bbs-ca"}
            untrusted = {k: v for k, v in provider.items() if k != "certSecretRef"}
            other = push_built_from(
                registry, f"{unique}/untrusted", _files(f"{unique}-u"), source=source, sha=SHA
            )
            syncs.append(sync_doc("untrusted", other, runner_ns, notify=[untrusted]))
        syncs.append(sync_doc(name, url, runner_ns, notify=[provider]))
    config = write_config(tmp_path / "lockgate.yaml", runner("east"), *syncs)

    run = cli(cluster, "--config", str(config))
    assert run.code == 0, run.err

    gitlab = [(c.path, c.body) for c in forges["gitlab"].statuses()]
    assert [p for p, _ in gitlab] == [f"/api/v4/projects/acme%2Fplatform%2Fapp/statuses/{SHA}"] * 2
    assert [b["state"] for _, b in gitlab] == ["running", "success"]
    assert {b["name"] for _, b in gitlab} == {"lockgate/east/gitlab"}

    bitbucket = forges["bitbucket"].statuses()
    assert {c.path for c in bitbucket} == {f"/2.0/repositories/acme/app/commit/{SHA}/statuses/build"}
    assert [c.body["state"] for c in bitbucket] == ["INPROGRESS", "SUCCESSFUL"]
    key = hashlib.sha1(b"lockgate/east/bitbucket").hexdigest()
    assert {(c.body["key"], c.body["name"], c.body["url"]) for c in bitbucket} == {
        (key, "lockgate/east/bitbucket", "https://bitbucket.org")
    }

    server = forges["bitbucketserver"].statuses()  # over TLS, trusted through certSecretRef
    assert {c.path for c in server} == {f"/rest/api/latest/projects/OPS/repos/app/commits/{SHA}/builds"}
    assert [c.body["state"] for c in server] == ["INPROGRESS", "SUCCESSFUL"]
    assert all(c.body["name"] == f"lockgate/east/bitbucketserver [{c.body['description']}]" for c in server)
    assert len(server[0].body["key"]) == 40
    assert all(c.header("X-Atlassian-Token") == "no-check" for c in server)

    azure = forges["azuredevops"].statuses()
    assert {(c.path, c.query["api-version"]) for c in azure} == {
        (f"/acme/web/_apis/git/repositories/app/commits/{SHA}/statuses", "7.1")
    }
    assert [c.body["state"] for c in azure] == ["pending", "succeeded"]
    assert {(c.body["context"]["genre"], c.body["context"]["name"]) for c in azure} == {
        ("lockgate", "lockgate/east/azuredevops")
    }

    # without certSecretRef the private CA is not trusted: nothing reaches the server, the
    # failure is logged once per status naming the provider (the pass itself succeeded)
    assert all("untrusted" not in c.body.get("name", "") for c in server)
    given_up = [
        line
        for line in run.err.splitlines()
        if "notification to bitbucketserver for sync untrusted failed: TLS verification failed" in line
    ]
    assert len(given_up) == 2, run.err[-3000:]
    assert all(line.endswith("(not retried)") or "(not retried)" in line for line in given_up)
    assert "for sync untrusted failed, retrying" not in run.err
    for token in TOKENS.values():
        assert token not in run.err + run.out


def _failures(metrics: str, provider: str, sync: str) -> float:
    for line in metrics.splitlines():
        if line.startswith(f'lockgate_notification_failures_total{{provider="{provider}",sync="{sync}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_a_token_gitea_refuses_is_counted_and_logged_naming_the_provider_never_the_token(
    cluster: Cluster, registry: Registry, gitea: Gitea, unique: str, tmp_path: Path
) -> None:
    """The real Gitea answers 401 to a token it never issued."""
    sha = commit_and_push(gitea.create_repo(unique), tmp_path / "src", {"README.md": "app\n"})
    runner_ns = f"{unique}-r"
    wrong = "0123456789abcdef0123456789abcdef01234567"
    secret(cluster, runner_ns, "gitea-token", token=wrong)
    source = f"{gitea.url}/{gitea.user}/{unique}"
    url = push_built_from(registry, f"{unique}/app", _files(unique), source=source, sha=sha)
    provider = {"type": "gitea", "address": source, "secretRef": {"name": "gitea-token"}}
    served = start_serve(
        cluster,
        tmp_path / "serve",
        [sync_doc("web", url, runner_ns, notify=[provider])],
        runner={"clusterName": "east"},
    )
    try:
        served.wait_sync_ready("web")
        served.wait_event(
            lambda e: (
                e.get("provider") == "gitea" and "HTTP 401" in e.get("msg", "") and "failed:" in e["msg"]
            ),
            what="the refused status given up",
        )
        refused = [
            e for e in served.events() if e.get("provider") == "gitea" and "HTTP 401" in e.get("msg", "")
        ]
        assert refused and all(
            e["msg"].startswith("notification to gitea for sync web failed:") for e in refused
        )
        assert all("retrying" not in e["msg"] for e in refused)  # a 401 is not retried
        metrics = served.metrics()
        assert _failures(metrics, "gitea", "web") == len(refused), metrics
        assert wrong not in served.log.read_text()
        assert gitea.call("GET", f"/repos/{gitea.user}/{unique}/commits/{sha}/statuses") == []
        assert served.stop() == 0, served.tail()
    finally:
        served.stop()
