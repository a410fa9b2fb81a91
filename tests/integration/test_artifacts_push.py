"""lockgate push against the world's registry: format, unchanged re-push, tags, --each, auth, bad input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from action.artifacts import push as push_mod
from lockgate import registry as lg_registry
from lockgate.artifact import manifest
from lockgate.errors import AuthError, RegistryError, RenderError, UsageError
from lockgate.registry.oci import ImageManifest
from tests.integration.artifacts_support import client, creds_flag, lockgate, write_tree
from tests.world.registry import Registry


@pytest.fixture(autouse=True)
def _isolated_docker_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    for name in ("GITHUB_ACTIONS", "SOURCE_DATE_EPOCH"):
        monkeypatch.delenv(name, raising=False)


def test_pushes_flux_format_and_says_unchanged_on_repush(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    tree = write_tree(tmp_path / "src", unique)
    ref = registry.oci(unique, ":v1")
    first = lockgate(
        "push",
        str(tree),
        ref,
        "--source",
        "https://git.example/repo",
        "--revision",
        "main@sha1:" + "a" * 40,
        "-a",
        "team=web",
        "--output",
        "json",
    )
    assert first.code == 0, first.err
    info = json.loads(first.out)
    assert info["status"] == "pushed"
    assert info["repository"] == f"{registry.host}/{unique}" and info["tag"] == "v1"
    assert info["url"] == f"oci://{registry.host}/{unique}@{info['digest']}"

    fetched = client(registry, lg_registry.parse(ref)).get_manifest(unique, "v1")
    assert fetched.digest == info["digest"]
    assert fetched.media_type == "application/vnd.oci.image.manifest.v1+json"
    m = ImageManifest.from_bytes(fetched.content, where=ref)
    assert m.config.media_type == manifest.FLUX_CONFIG
    assert [layer.media_type for layer in m.layers] == [manifest.FLUX_CONTENT]
    assert dict(m.annotations) == {
        "org.opencontainers.image.created": "1970-01-01T00:00:00Z",
        "org.opencontainers.image.source": "https://git.example/repo",
        "org.opencontainers.image.revision": "main@sha1:" + "a" * 40,
        "team": "web",
    }

    again = lockgate(
        "push",
        str(tree),
        ref,
        "--source",
        "https://git.example/repo",
        "--revision",
        "main@sha1:" + "a" * 40,
        "-a",
        "team=web",
    )
    assert again.code == 0, again.err
    assert again.out.strip() == f"unchanged {ref}@{info['digest']}"


def test_unchanged_repush_uploads_nothing_and_extra_tags(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    tree = write_tree(tmp_path / "src", unique)
    ref = lg_registry.parse(registry.oci(unique, ":main"))
    c = client(registry, ref)
    options = push_mod.PushOptions(extra_tags=("v1.0.0",))
    first = push_mod.push(str(tree), ref, c, options)
    assert (first.status, first.uploaded_blobs, first.tags) == (push_mod.Status.PUSHED, 2, ("main", "v1.0.0"))
    assert c.resolve(ref.with_tag("v1.0.0")) == first.digest
    second = push_mod.push(str(tree), ref, c, options)
    assert (second.status, second.uploaded_blobs, second.digest) == (
        push_mod.Status.UNCHANGED,
        0,
        first.digest,
    )
    (tree / "ns.yaml").write_text((tree / "ns.yaml").read_text() + "  labels: {a: b}\n")
    third = push_mod.push(str(tree), ref.with_tag("next"), c)
    assert third.status is push_mod.Status.PUSHED and third.uploaded_blobs == 1  # the config blob is shared
    assert third.digest != first.digest


def test_each_pushes_one_artifact_per_directory(registry: Registry, unique: str, tmp_path: Path) -> None:
    repo = tmp_path / "mono"
    for app in ("backend", "frontend"):
        write_tree(repo / "apps" / app, f"{unique}-{app}")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }

    def git(*args: str) -> None:
        subprocess.run(
            ["git", *args], cwd=repo, check=True, capture_output=True, env={**env, "PATH": "/usr/bin:/bin"}
        )

    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-q", "-m", "one")
    target = registry.oci(f"{unique}/{{name}}", ":main")
    first = lockgate("push", "--each", "apps/*", target, "--output", "json", cwd=repo)
    assert first.code == 0, first.err
    results = {Path(r["path"]).name: r for r in json.loads(first.out)}
    assert set(results) == {"backend", "frontend"}
    assert {r["status"] for r in results.values()} == {"pushed"}
    assert results["backend"]["repository"] == f"{registry.host}/{unique}/backend"

    (repo / "apps" / "backend" / "ns.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: b2\n"
    )
    git("commit", "-q", "-am", "backend only")
    second = lockgate("push", "--each", "apps/*", target, "--output", "json", cwd=repo)
    assert second.code == 0, second.err
    after = {Path(r["path"]).name: r for r in json.loads(second.out)}
    assert after["frontend"]["status"] == "unchanged"
    assert after["frontend"]["digest"] == results["frontend"]["digest"]
    assert after["backend"]["status"] == "pushed"
    assert after["backend"]["digest"] != results["backend"]["digest"]


def test_auth_registry_with_creds_and_docker_config(
    auth_registry: Registry, unique: str, tmp_path: Path
) -> None:
    tree = write_tree(tmp_path / "src", unique)
    ref = auth_registry.oci(unique, ":v1")
    with_flag = lockgate("push", str(tree), ref, *creds_flag(auth_registry))
    assert with_flag.code == 0, with_flag.err
    docker = tmp_path / "docker"
    docker.mkdir()
    (docker / "config.json").write_text(
        json.dumps(
            {
                "auths": {
                    auth_registry.host: {
                        "username": auth_registry.username,
                        "password": auth_registry.password,
                    }
                }
            }
        )
    )
    via_config = lockgate("push", str(tree), ref, env={"DOCKER_CONFIG": str(docker)})
    assert via_config.code == 0, via_config.err
    assert via_config.out.startswith("unchanged ")


def test_wrong_credentials_are_refused_and_never_printed(
    auth_registry: Registry, unique: str, tmp_path: Path
) -> None:
    tree = write_tree(tmp_path / "src", unique)
    ref = auth_registry.oci(unique, ":v1")
    secret = "wrong-Pa55word-xyz"
    run = lockgate("push", str(tree), ref, "--creds", f"{auth_registry.username}:{secret}")
    assert run.code == 3
    assert "refused the credentials from --creds" in run.err
    assert secret not in run.err + run.out
    anonymous = lockgate("push", str(tree), ref)
    assert anonymous.code == 3 and "requires authentication" in anonymous.err
    with pytest.raises(AuthError):
        push_mod.push(
            str(tree),
            lg_registry.parse(ref),
            lg_registry.RegistryClient.for_reference(lg_registry.parse(ref)),
        )


def test_unreachable_registry(tmp_path: Path, unique: str) -> None:
    tree = write_tree(tmp_path / "src", unique)
    ref = lg_registry.parse(f"oci://127.0.0.1:9/{unique}:v1")
    c = lg_registry.RegistryClient.for_reference(ref, retry=lg_registry.RetryPolicy(attempts=2, backoff=0.05))
    with pytest.raises(RegistryError, match=r"cannot reach registry 127\.0\.0\.1:9 .*connection refused"):
        push_mod.push(str(tree), ref, c)


def test_stdin_is_packed_as_one_file(registry: Registry, unique: str) -> None:
    ref = registry.oci(unique, ":stdin")
    run = lockgate("push", "-", ref, stdin=f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {unique}\n")
    assert run.code == 0, run.err
    listed = lockgate("inspect", ref, "--output", "json")
    assert [f["name"] for f in json.loads(listed.out)["files"]] == ["manifests.yaml"]


@pytest.mark.parametrize(
    ("setup", "error", "says"),
    [
        (lambda p: p / "missing", UsageError, "missing: no such file or directory"),
        (lambda p: _only(p, "README.md", "hello"), UsageError, "no YAML files to pack"),
        (lambda p: _only(p, "bad.yaml", "a: b\n  c: [d\n"), RenderError, r"bad\.yaml:2:4: invalid YAML"),
    ],
    ids=["missing-path", "no-yaml", "invalid-yaml"],
)
def test_bad_input_fails_before_the_registry(
    registry: Registry, unique: str, tmp_path: Path, setup: object, error: type[Exception], says: str
) -> None:
    path = setup(tmp_path)  # type: ignore[operator]
    ref = lg_registry.parse(registry.oci(unique, ":v1"))
    with pytest.raises(error, match=says):
        push_mod.push(str(path), ref, client(registry, ref))
    assert client(registry, ref).head_manifest(unique, "v1") is None


def _only(root: Path, name: str, text: str) -> Path:
    (root / "d").mkdir()
    (root / "d" / name).write_text(text)
    return root / "d"


def test_push_needs_a_tag(registry: Registry, unique: str, tmp_path: Path) -> None:
    run = lockgate(
        "push", str(write_tree(tmp_path / "s", unique)), registry.oci(unique, "@sha256:" + "a" * 64)
    )
    assert run.code == 2 and "push needs a tag" in run.err
