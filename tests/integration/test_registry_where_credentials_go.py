"""Registry credentials go to the registry host and its token realm, nowhere else.

The registry is the real one (Distribution), once with basic auth and once with token auth,
configured as a registry on object storage: upload locations on another host, blob GET/HEAD
redirected to storage on another host. A front on the host clients use pages tag lists with
a ``Link`` onto that other host. The token service, the storage, upload endpoint and page host
are local stand-ins (``registry_front_support``: cloud token services and object storage
cannot run here); each records the ``Authorization`` of every request it gets.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lockgate import registry as lg_registry
from lockgate.errors import AuthError
from tests.integration.artifacts_support import lockgate, write_tree
from tests.integration.registry_front_support import ISSUER, SERVICE, Elsewhere, Front, TokenService
from tests.world.registry import Registry, TokenAuth, start_registry


@dataclass
class Fronted:
    kind: str
    registry: Registry
    front: Front
    elsewhere: Elsewhere
    tokens: TokenService | None
    username: str
    password: str

    @property
    def creds(self) -> lg_registry.Credentials:
        return lg_registry.Credentials(self.username, self.password)

    @property
    def basic(self) -> str:
        return "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()

    def client(self, repo: str) -> lg_registry.RegistryClient:
        ref = lg_registry.parse(f"oci://{self.front.host}/{repo}:v1")
        return lg_registry.RegistryClient.for_reference(ref, credentials=self.creds)


@pytest.fixture(scope="module", params=["basic", "bearer"])
def fronted(request: pytest.FixtureRequest, world_dir: Path) -> Iterator[Fronted]:
    kind: str = request.param
    elsewhere = Elsewhere()
    front = Front(elsewhere)
    tokens = None
    public_url, storage = elsewhere.url, elsewhere.url + "/"
    if kind == "basic":
        reg = start_registry(
            world_dir, auth=True, name="fronted-basic", public_url=public_url, storage_redirect=storage
        )
        assert reg.username and reg.password
        username, password = reg.username, reg.password
        own = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()
        elsewhere.own_auth = lambda repo, actions: own
    else:
        username, password = "lockgate", secrets.token_urlsafe(16)
        tokens = TokenService(world_dir / "fronted-bearer-tokens", username=username, password=password)
        auth = TokenAuth(realm=tokens.realm, service=SERVICE, issuer=ISSUER, certificate=tokens.certificate)
        reg = start_registry(
            world_dir, name="fronted-bearer", token=auth, public_url=public_url, storage_redirect=storage
        )
        minter = tokens
        elsewhere.own_auth = lambda repo, actions: (
            "Bearer " + minter.mint([f"repository:{repo}:{actions}"], "storage")
        )
    elsewhere.registry = front.registry = reg.url
    elsewhere.data = reg.data
    yield Fronted(kind, reg, front, elsewhere, tokens, username, password)
    front.stop()
    elsewhere.stop()
    if tokens is not None:
        tokens.stop()
    reg.stop()


def _isolated(tmp_path: Path) -> dict[str, str]:
    return {"DOCKER_CONFIG": str(tmp_path / "docker")}


def test_push_and_pull_through_storage_on_another_host_send_it_no_credentials(
    fronted: Fronted, unique: str, tmp_path: Path
) -> None:
    ref = f"oci://{fronted.front.host}/{unique}/app:v1"
    creds = ["--creds", f"{fronted.username}:{fronted.password}"]
    pushed = lockgate("push", str(write_tree(tmp_path / "src", unique)), ref, *creds, env=_isolated(tmp_path))
    assert pushed.code == 0, pushed.err
    pulled = lockgate("pull", ref, "-O", str(tmp_path / "out"), *creds, env=_isolated(tmp_path))
    assert pulled.code == 0, pulled.err
    assert (tmp_path / "out" / "ns.yaml").read_text() == (tmp_path / "src" / "ns.yaml").read_text()

    # the uploads and the blob downloads did go to the other host ...
    elsewhere = fronted.elsewhere.requests()
    uploads = [s for s in elsewhere if s.method == "PUT" and f"/v2/{unique}/app/blobs/uploads/" in s.path]
    blobs = [s for s in elsewhere if s.method == "GET" and s.path.startswith("/docker/registry/v2/blobs/")]
    assert len(uploads) >= 2 and blobs, elsewhere
    # ... without credentials of any kind
    assert [s for s in elsewhere if s.authorization is not None] == []

    # the registry host got what it asked for: basic credentials, or a bearer token (only)
    to_registry = [s.authorization for s in fronted.front.requests() if f"/v2/{unique}/" in s.path]
    if fronted.kind == "basic":
        assert fronted.basic in to_registry
    else:
        assert any(a is not None and a.startswith("Bearer ") for a in to_registry)
        assert not any(a is not None and a.startswith("Basic ") for a in to_registry)
        # and the token realm got the basic credentials, and never a bearer token
        assert fronted.tokens is not None
        to_realm = [s.authorization for s in fronted.tokens.requests() if unique in s.path]
        assert to_realm and set(to_realm) == {fronted.basic}


def test_tag_pages_on_another_host_get_no_credentials(fronted: Fronted, unique: str, tmp_path: Path) -> None:
    repo = f"{unique}/tags"
    client = fronted.client(repo)
    pushed = lockgate(
        "push",
        str(write_tree(tmp_path / "src", unique)),
        f"oci://{fronted.front.host}/{repo}:v1",
        "--creds",
        f"{fronted.username}:{fronted.password}",
        env=_isolated(tmp_path),
    )
    assert pushed.code == 0, pushed.err
    manifest = client.get_manifest(repo, "v1")
    for tag in ("v2", "v3", "v4", "v5"):
        client.put_manifest(repo, tag, manifest.content, manifest.media_type)

    assert client.list_tags(repo, page_size=2) == ["v1", "v2", "v3", "v4", "v5"]

    pages = [s for s in fronted.elsewhere.requests() if s.path.startswith(f"/v2/{repo}/tags/list?")]
    assert len(pages) == 2, pages  # v3,v4 and v5 came from the other host
    assert [s.authorization for s in pages] == [None, None]
    first = [s for s in fronted.front.requests() if s.path.startswith(f"/v2/{repo}/tags/list?")]
    assert any(s.authorization is not None for s in first)


def test_a_challenge_from_another_host_is_not_answered(fronted: Fronted, unique: str) -> None:
    """A host the registry names that asks for authentication gets none, and the realm it
    names is never asked for a token with the registry's credentials."""
    client = fronted.client(unique)
    assert client.head_manifest(unique, "nothing-here") is None  # authenticated with the registry
    with pytest.raises(AuthError) as caught:
        client.transport.request(
            "GET", f"{fronted.elsewhere.url}/challenge/{unique}", scope=f"repository:{unique}:pull"
        )
    assert caught.value.message == (
        f"{fronted.elsewhere.host}, where registry {fronted.front.host} sent GET /challenge/{unique}, asks "
        f"for authentication; lockgate sends credentials only to {fronted.front.host} and its token service"
    )
    seen = [s for s in fronted.elsewhere.requests() if unique in s.path or s.path.startswith("/steal")]
    assert [(s.path, s.authorization) for s in seen] == [(f"/challenge/{unique}", None)]
