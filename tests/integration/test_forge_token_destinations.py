"""A forge token goes only where the provider's own configuration says (issue 30 item 1).

The attack: a tenant signs an artifact whose ``org.opencontainers.image.source`` names a
host of its own (``http://127.0.0.1:PORT/x/y``: a recording endpoint, the attacker) and
has a Sync applied on a runner whose ``notify`` provider holds the platform's forge token.
Before, a provider without ``apiURL`` took its API host from that annotation and sent the
token there, over plain http; a ``github`` provider took the repository from it.

Gitea is the real one (``tests/world/gitea.py``); GitLab, Bitbucket Server, Azure DevOps
and GitHub cannot run here and are stood in by local endpoints implementing their
documented status requests (``tests/world/forges.py``, ``tests/world/recorder.py``).
Everything else is the world: registry, cluster, Secrets, Events, real ``lockgate
reconcile`` passes.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from lockgate.errors import ExitCode
from tests.integration.forge_support import (
    commit_and_push,
    push_built_from,
    runner,
    secret,
    write_config,
)
from tests.integration.reconcile_support import cli, configmap, dump, events_of, namespace
from tests.integration.serve_support import sync_doc
from tests.world.forges import ForgeStandIn
from tests.world.gitea import Gitea
from tests.world.kube import Cluster
from tests.world.recorder import Recorder
from tests.world.registry import Registry

pytestmark = pytest.mark.world

SHA = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"
REFUSED = "CommitStatusRefused"
TOKENS = {
    "gitlab": "glpat-platformToken0123456789",
    "bitbucketserver": "bbs-platform-access-token-0123",
    "azuredevops": "azdo-platform-pat-0123456789abcdef",
    "github": "ghp_platformToken0123456789abcdef",
}


@pytest.fixture
def attacker() -> Iterator[Recorder]:
    """The tenant's own endpoint: it records whatever reaches it (a token would be in a header)."""
    rec = Recorder(status=201)
    yield rec
    rec.stop()


def _files(ns: str) -> dict[str, str]:
    return {"a.yaml": dump(namespace(ns), configmap("app", ns, {}))}


def _readable(value: str) -> str:
    """A header value as an eavesdropper reads it: Basic credentials decoded."""
    if value.startswith("Basic "):
        return value + " " + base64.b64decode(value.removeprefix("Basic ")).decode(errors="replace")
    return value


def _leaked(rec: Recorder, *tokens: str) -> list[str]:
    """What reached the attacker carrying a token (in any header, Basic decoded)."""
    return [
        f"{r.method} {r.path}"
        for r in rec.requests()
        if any(token in _readable(value) for value in r.headers.values() for token in tokens)
    ]


def _refusals(cluster: Cluster, sync: str, runner_ns: str) -> list[str]:
    return [e["message"] for e in events_of(cluster, sync, runner_ns) if e["reason"] == REFUSED]


def test_a_runner_gitea_provider_without_a_configured_host_never_follows_the_annotation(
    cluster: Cluster, registry: Registry, gitea: Gitea, attacker: Recorder, unique: str, tmp_path: Path
) -> None:
    """The real Gitea; a Runner-level provider as docs/notifications.md showed it (no apiURL)."""
    sha = commit_and_push(gitea.create_repo(unique), tmp_path / "src", {"README.md": "app\n"})
    runner_ns = f"{unique}-r"
    secret(cluster, runner_ns, "gitea-token", token=gitea.token)
    platform = push_built_from(
        registry,
        f"{unique}/platform",
        _files(f"{unique}-p"),
        source=f"{gitea.url}/{gitea.user}/{unique}.git",
        sha=sha,
    )
    tenant = push_built_from(
        registry, f"{unique}/tenant", _files(f"{unique}-t"), source=f"{attacker.url}/x/y", sha=SHA
    )
    provider = {"type": "gitea", "secretRef": {"name": "gitea-token"}}
    config = write_config(
        tmp_path / "lockgate.yaml",
        runner("east", notify=[provider]),
        sync_doc("platform", platform, runner_ns),
        sync_doc("tenant", tenant, runner_ns),
    )

    run = cli(cluster, "--config", str(config))

    assert run.code == 0, run.err  # a refused notification never fails a pass
    assert _leaked(attacker, gitea.token) == [], "the platform's Gitea token reached the tenant's host"
    assert attacker.requests() == []
    # without a host of its own the provider sends nowhere, and says what to add
    for sync in ("platform", "tenant"):
        messages = _refusals(cluster, sync, runner_ns)
        assert len(messages) == 1, (sync, events_of(cluster, sync, runner_ns))
        assert "Runner: spec.notify[0]" in messages[0] and "set address" in messages[0], messages
    assert "127.0.0.1" in _refusals(cluster, "tenant", runner_ns)[0]
    logged = [line for line in run.err.splitlines() if "commit status to gitea refused" in line]
    assert len(logged) == 2, run.err[-3000:]
    assert gitea.call("GET", f"/repos/{gitea.user}/{unique}/commits/{sha}/statuses") == []
    assert gitea.token not in run.err + run.out


def test_a_pinned_gitea_provider_reports_its_repository_and_refuses_any_other_host(
    cluster: Cluster, registry: Registry, gitea: Gitea, attacker: Recorder, unique: str, tmp_path: Path
) -> None:
    """Flux's shape: ``address`` names the repository; the artifact picks only the commit."""
    sha = commit_and_push(gitea.create_repo(unique), tmp_path / "src", {"README.md": "app\n"})
    runner_ns = f"{unique}-r"
    secret(cluster, runner_ns, "gitea-token", token=gitea.token)
    repository = f"{gitea.url}/{gitea.user}/{unique}"
    platform = push_built_from(
        registry, f"{unique}/platform", _files(f"{unique}-p"), source=f"{repository}.git", sha=sha
    )
    tenant = push_built_from(
        registry, f"{unique}/tenant", _files(f"{unique}-t"), source=f"{attacker.url}/x/y", sha=SHA
    )
    other = push_built_from(  # the same host, another repository: not this provider's either
        registry,
        f"{unique}/other",
        _files(f"{unique}-o"),
        source=f"{gitea.url}/{gitea.user}/elsewhere",
        sha=sha,
    )
    provider = {"type": "gitea", "address": repository, "secretRef": {"name": "gitea-token"}}
    config = write_config(
        tmp_path / "lockgate.yaml",
        runner("east", notify=[provider]),
        sync_doc("platform", platform, runner_ns),
        sync_doc("tenant", tenant, runner_ns),
        sync_doc("other", other, runner_ns),
    )

    run = cli(cluster, "--config", str(config))

    assert run.code == 0, run.err
    assert _leaked(attacker, gitea.token) == [], "the platform's Gitea token reached the tenant's host"
    assert attacker.requests() == []
    statuses = gitea.call("GET", f"/repos/{gitea.user}/{unique}/commits/{sha}/statuses")
    assert sorted(s["context"] for s in statuses) == ["lockgate/east/platform"] * 2, statuses
    assert _refusals(cluster, "platform", runner_ns) == []
    tenant_refused = _refusals(cluster, "tenant", runner_ns)
    assert len(tenant_refused) == 1 and "127.0.0.1" in tenant_refused[0], tenant_refused
    other_refused = _refusals(cluster, "other", runner_ns)
    assert len(other_refused) == 1 and f"{gitea.user}/elsewhere" in other_refused[0], other_refused
    assert gitea.token not in run.err + run.out


@pytest.fixture
def stand_ins() -> Iterator[dict[str, ForgeStandIn]]:
    pat = "Basic " + base64.b64encode(f":{TOKENS['azuredevops']}".encode()).decode()
    forges = {
        "gitlab": ForgeStandIn("gitlab", ("PRIVATE-TOKEN", TOKENS["gitlab"])),
        "bitbucketserver": ForgeStandIn(
            "bitbucketserver", ("Authorization", f"Bearer {TOKENS['bitbucketserver']}")
        ),
        "azuredevops": ForgeStandIn("azuredevops", ("Authorization", pat)),
    }
    with ExitStack() as stack:
        yield {name: stack.enter_context(f.running()) for name, f in forges.items()}


def test_gitlab_bitbucket_server_and_azure_devops_tokens_stay_on_their_configured_hosts(
    cluster: Cluster,
    registry: Registry,
    stand_ins: dict[str, ForgeStandIn],
    attacker: Recorder,
    unique: str,
    tmp_path: Path,
) -> None:
    """Stand-ins for GitLab, Bitbucket Server and Azure DevOps (they cannot run here)."""
    runner_ns = f"{unique}-r"
    for name, token in TOKENS.items():
        secret(cluster, runner_ns, f"{name}-token", token=token)
    # what the platform's own artifacts name, and what a tenant's names instead
    forges: dict[str, tuple[str, str, str]] = {
        "gitlab": (
            "https://gitlab.example.com/acme/platform/app.git",
            f"{attacker.url}/acme/platform/app",
            "/api/v4",
        ),
        "bitbucketserver": (
            "https://bitbucket.example.com/scm/OPS/app.git",
            f"{attacker.url}/scm/OPS/app.git",
            "/rest/api/latest",
        ),
        "azuredevops": (
            "https://dev.azure.com/acme/web/_git/app",
            f"{attacker.url}/acme/web/_git/app",
            "/acme",
        ),
    }
    providers: list[dict[str, Any]] = []
    syncs: list[dict[str, Any]] = []
    for index, (name, (_, hostile, _)) in enumerate(forges.items()):
        # as before: no apiURL, so the host came from the artifact
        providers.append({"type": name, "secretRef": {"name": f"{name}-token"}})
        url = push_built_from(
            registry, f"{unique}/{name}", _files(f"{unique}-t{index}"), source=hostile, sha=SHA
        )
        syncs.append(sync_doc(f"tenant-{name}", url, runner_ns))
    config = write_config(tmp_path / "unpinned.yaml", runner("east", notify=providers), *syncs)

    run = cli(cluster, "--config", str(config))

    assert run.code == 0, run.err
    leaked = _leaked(attacker, *TOKENS.values())
    assert leaked == [], f"platform tokens reached the tenant's host: {leaked}"
    assert attacker.requests() == []
    for name in forges:
        refused = _refusals(cluster, f"tenant-{name}", runner_ns)
        # each of the three providers refuses each tenant artifact: one Event per provider
        assert any(f"commit status to {name} refused" in m for m in refused), (name, refused)

    # pinned (address: the repository; apiURL: where its API is): the platform's artifacts get
    # their statuses, the tenant's same-named repository on its own host is refused
    pinned = [
        {
            "type": name,
            "address": own.removesuffix(".git"),
            "apiURL": stand_ins[name].url + root,
            "secretRef": {"name": f"{name}-token"},
        }
        for name, (own, _, root) in forges.items()
    ]
    platform_syncs = []
    for index, (name, (own, _, _)) in enumerate(forges.items()):
        url = push_built_from(
            registry, f"{unique}/p-{name}", _files(f"{unique}-p{index}"), source=own, sha=SHA
        )
        platform_syncs.append(sync_doc(f"platform-{name}", url, runner_ns, notify=[pinned[index]]))
        hostile = push_built_from(
            registry, f"{unique}/h-{name}", _files(f"{unique}-h{index}"), source=forges[name][1], sha=SHA
        )
        platform_syncs.append(sync_doc(f"hostile-{name}", hostile, runner_ns, notify=[pinned[index]]))
    config = write_config(tmp_path / "pinned.yaml", runner("east"), *platform_syncs)

    run = cli(cluster, "--config", str(config))

    assert run.code == 0, run.err
    assert _leaked(attacker, *TOKENS.values()) == []
    assert attacker.requests() == []
    for name, forge in stand_ins.items():
        assert [c.body is not None for c in forge.statuses()] == [True, True], (name, forge.calls)
        assert len(_refusals(cluster, f"hostile-{name}", runner_ns)) == 1
        assert _refusals(cluster, f"platform-{name}", runner_ns) == []
    for token in TOKENS.values():
        assert token not in run.err + run.out


def test_a_github_provider_posts_only_on_the_repository_its_address_names(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """GitHub's API is stood in by a recording endpoint (tests/world/recorder.py)."""
    github = Recorder(status=201)
    try:
        runner_ns = f"{unique}-r"
        secret(cluster, runner_ns, "github-token", token=TOKENS["github"])
        own = push_built_from(
            registry, f"{unique}/own", _files(f"{unique}-p"), source="https://github.com/acme/app", sha=SHA
        )
        victim = push_built_from(  # a tenant's artifact naming another repository the token may write
            registry,
            f"{unique}/victim",
            _files(f"{unique}-t"),
            source="https://github.com/acme/payments",
            sha=SHA,
        )
        provider = {
            "type": "github",
            "address": "https://github.com/acme/app",
            "apiURL": github.url,
            "secretRef": {"name": "github-token"},
        }
        config = write_config(
            tmp_path / "lockgate.yaml",
            runner("east", notify=[provider]),
            sync_doc("own", own, runner_ns),
            sync_doc("tenant", victim, runner_ns),
        )

        run = cli(cluster, "--config", str(config))

        assert run.code == 0, run.err
        assert github.requests(f"/repos/acme/payments/statuses/{SHA}") == [], (
            "posted on a repository not pinned"
        )
        assert [r.json()["state"] for r in github.requests(f"/repos/acme/app/statuses/{SHA}")] == [
            "pending",
            "success",
        ]
        refused = _refusals(cluster, "tenant", runner_ns)
        assert len(refused) == 1 and "acme/payments" in refused[0] and "acme/app" in refused[0], refused
    finally:
        github.stop()


@pytest.mark.parametrize("field", ["apiURL", "address"])
def test_a_forge_provider_naming_plain_http_beyond_loopback_is_refused_at_load(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path, field: str
) -> None:
    """A token over plain http is readable on every hop: only loopback may be http."""
    runner_ns = f"{unique}-r"
    url = push_built_from(
        registry, f"{unique}/app", _files(unique), source="https://gitlab.example.com/acme/app", sha=SHA
    )
    value = "http://gitlab.example.com/api/v4" if field == "apiURL" else "http://gitlab.example.com/acme/app"
    provider = {"type": "gitlab", field: value, "secretRef": {"name": "gitlab-token"}}
    config = write_config(
        tmp_path / "lockgate.yaml", runner("east"), sync_doc("web", url, runner_ns, notify=[provider])
    )

    run = cli(cluster, "--config", str(config))

    assert run.code == ExitCode.USAGE, (run.code, run.err)
    assert "lockgate.yaml:" in run.err and f"spec.notify[0]: {field}" in run.err, run.err
    assert "https" in run.err and "loopback" in run.err, run.err
