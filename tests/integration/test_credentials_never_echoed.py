"""Credentials never echoed (issue 15, item 6), against the world's auth registry.

Every command that takes a reference is run with the credentials in the URL (refused, exit
2, with a message that names docker login / the Docker config / --creds and repeats no
secret), and a whole session is run with the credentials in the Docker config, with wrong
ones, and with --creds: no stdout, stderr or JSON document of any run holds the password,
its base64 form, or the wrong password tried.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from lockgate.errors import ExitCode
from lockgate.signing import keys
from tests.integration.artifacts_support import Run, lockgate, write_tree
from tests.world.registry import Registry

KEY_PASSWORD = "key-pw-Xk92"
WRONG = "Wr0ng-SuperSecretPW"


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "no-docker"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    for name in ("GITHUB_ACTIONS", "SOURCE_DATE_EPOCH", "LOCKGATE_PASSWORD", "COSIGN_PASSWORD"):
        monkeypatch.delenv(name, raising=False)


def secrets_of(reg: Registry) -> list[str]:
    assert reg.username and reg.password
    pair = f"{reg.username}:{reg.password}"
    return [reg.password, WRONG, base64.b64encode(pair.encode()).decode(), KEY_PASSWORD]


def assert_clean(runs: list[Run], secrets: list[str]) -> None:
    for run in runs:
        for secret in secrets:
            assert secret not in run.out, (secret, run.out)
            assert secret not in run.err, (secret, run.err)


def docker_config(tmp_path: Path, reg: Registry, password: str) -> Path:
    folder = tmp_path / f"docker-{password[:4]}"
    folder.mkdir(exist_ok=True)
    auth = base64.b64encode(f"{reg.username}:{password}".encode()).decode()
    (folder / "config.json").write_text(json.dumps({"auths": {reg.host: {"auth": auth}}}))
    return folder


def test_credentials_in_the_url_are_refused_by_every_command(
    auth_registry: Registry, unique: str, tmp_path: Path
) -> None:
    tree = write_tree(tmp_path / "src", unique)
    pair = keys.generate_key_pair(KEY_PASSWORD.encode())
    (tmp_path / "k.key").write_bytes(pair.private_pem)
    (tmp_path / "k.pub").write_bytes(pair.public_pem)
    host = auth_registry.host
    digest = "sha256:" + "0" * 64
    runs = []
    for password in (auth_registry.password or "", WRONG, "pa/ss@" + WRONG):
        user = f"{auth_registry.username}:{password}"
        tagged = f"oci://{user}@{host}/{unique}:v1"
        for args in (
            ["push", str(tree), tagged, "--output", "json"],
            ["push", str(tree), tagged],
            ["pull", tagged, "-O", str(tmp_path / "out")],
            ["inspect", tagged, "--output", "json"],
            ["list", f"oci://{user}@{host}/{unique}", "--output", "json"],
            ["tag", f"oci://{user}@{host}/{unique}@{digest}", "stable"],
            ["diff", str(tree), tagged, "--output", "json"],
            ["sign", f"oci://{user}@{host}/{unique}@{digest}", "--key", str(tmp_path / "k.key")],
            ["verify", tagged, "--key", str(tmp_path / "k.pub"), "--output", "json"],
            ["reconcile", tagged, "--name", "web", "--insecure-skip-verify", "--output", "json"],
            ["push", str(tree), f"{user}@{host}/{unique}:v1"],  # no scheme
        ):
            run = lockgate(*args, env={"LOCKGATE_PASSWORD": KEY_PASSWORD})
            assert run.code == ExitCode.USAGE, (args, run.out, run.err)
            said = run.out + run.err
            assert "credentials do not go in a reference" in said, said
            assert "docker login" in said and "--creds" in said
            assert f"{auth_registry.username}:***@" in said
            runs.append(run)
    assert_clean(runs, secrets_of(auth_registry))
    # nothing was pushed by any of them
    config = docker_config(tmp_path, auth_registry, auth_registry.password or "")
    listed = lockgate("list", auth_registry.oci(unique), env={"DOCKER_CONFIG": str(config)})
    assert listed.code != 0 or "v1" not in listed.out.split()


def test_a_session_with_docker_config_or_creds_prints_no_secret(
    auth_registry: Registry, unique: str, tmp_path: Path
) -> None:
    pair = keys.generate_key_pair(KEY_PASSWORD.encode())
    (tmp_path / "cosign.key").write_bytes(pair.private_pem)
    (tmp_path / "cosign.pub").write_bytes(pair.public_pem)
    tree = write_tree(tmp_path / "src", unique)
    ref = auth_registry.oci(unique, ":v1")
    good = {"DOCKER_CONFIG": str(docker_config(tmp_path, auth_registry, auth_registry.password or ""))}
    signing = {**good, "LOCKGATE_PASSWORD": KEY_PASSWORD}
    runs = []

    def ok(*args: str, env: dict[str, str] = good) -> Run:
        run = lockgate(*args, env=env)
        assert run.code == 0, (args, run.err)
        runs.append(run)
        return run

    pushed = ok(
        "push",
        str(tree),
        ref,
        "--sign",
        "key",
        "--key",
        str(tmp_path / "cosign.key"),
        "-o",
        "json",
        env=signing,
    )
    digest = json.loads(pushed.out)["digest"]
    by_digest = auth_registry.oci(unique, "@" + digest)
    ok("push", str(tree), ref, "--sign", "key", "--key", str(tmp_path / "cosign.key"), env=signing)
    ok("sign", by_digest, "--key", str(tmp_path / "cosign.key"), "--output", "json", env=signing)
    ok("verify", ref, "--key", str(tmp_path / "cosign.pub"), "--output", "json")
    ok("inspect", ref, "--output", "json")
    ok("inspect", ref)
    ok("list", auth_registry.oci(unique), "--output", "json")
    ok("tag", by_digest, "stable")
    ok("pull", ref, "-O", str(tmp_path / "pulled"))
    ok("diff", str(tree), ref, "--output", "json")
    # an annotation another tool wrote with a token in a URL is shown masked
    noted = auth_registry.oci(unique, ":noted")
    source = f"org.opencontainers.image.source=https://x-access-token:{WRONG}@github.com/o/r"
    ok("push", str(tree), noted, "-a", source, "--output", "json")
    assert "x-access-token:***@github.com" in ok("inspect", noted).out
    shown = json.loads(ok("inspect", noted, "--output", "json").out)["annotations"]
    assert shown["org.opencontainers.image.source"] == "https://x-access-token:***@github.com/o/r"
    creds = ["--creds", f"{auth_registry.username}:{auth_registry.password}"]
    runs.append(lockgate("inspect", ref, *creds, "--output", "json"))
    assert runs[-1].code == 0, runs[-1].err

    wrong = {"DOCKER_CONFIG": str(docker_config(tmp_path, auth_registry, WRONG))}
    for args in (
        ["push", str(tree), ref, "--output", "json"],
        ["inspect", ref, "--output", "json"],
        ["list", auth_registry.oci(unique)],
        ["verify", ref, "--key", str(tmp_path / "cosign.pub"), "--output", "json"],
    ):
        refused = lockgate(*args, env=wrong)
        assert refused.code in (ExitCode.AUTH, ExitCode.VERIFICATION), (args, refused.err)
        assert "refused the credentials" in refused.err, refused.err
        runs.append(refused)
    refused = lockgate("inspect", ref, "--creds", f"{auth_registry.username}:{WRONG}")
    assert refused.code == ExitCode.AUTH and "refused the credentials from --creds" in refused.err
    runs.append(refused)
    assert_clean(runs, secrets_of(auth_registry))
