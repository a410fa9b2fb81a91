"""Credential discovery from --creds, Docker config files, credential helpers and GITHUB_TOKEN."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from lockgate.errors import AuthError, UsageError
from lockgate.registry import credentials


def _config(tmp_path: Path, value: dict[str, object]) -> dict[str, str]:
    (tmp_path / "config.json").write_text(json.dumps(value))
    return {"DOCKER_CONFIG": str(tmp_path), "PATH": os.environ.get("PATH", "")}


def test_flag_needs_user_and_password() -> None:
    creds = credentials.Credentials.from_flag("bot:s3cret:with:colons")
    assert (creds.username, creds.secret) == ("bot", "s3cret:with:colons")
    assert "s3cret" not in repr(creds)
    with pytest.raises(UsageError):
        credentials.Credentials.from_flag("bot")


def test_auths_entry_by_host_with_scheme(tmp_path: Path) -> None:
    auth = base64.b64encode(b"me:pw").decode()
    env = _config(tmp_path, {"auths": {"https://reg.example.com/v1/": {"auth": auth}}})
    found = credentials.find("reg.example.com", env=env)
    assert found is not None and (found.username, found.secret) == ("me", "pw")
    assert credentials.find("other.example.com", env=env) is None


def test_explicit_wins(tmp_path: Path) -> None:
    env = _config(tmp_path, {"auths": {"r.io": {"username": "a", "password": "b"}}})
    explicit = credentials.Credentials("x", "y")
    assert credentials.find("r.io", explicit=explicit, env=env) is explicit


def test_invalid_config_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(UsageError, match=r"config.json is not valid JSON \(line 1\)"):
        credentials.find("r.io", env={"DOCKER_CONFIG": str(tmp_path)})


def _helper(bin_dir: Path, name: str, script: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / f"docker-credential-{name}"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


def test_credential_helper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _helper(
        tmp_path / "bin", "fake", 'read host\necho "{\\"Username\\":\\"u-$host\\",\\"Secret\\":\\"tok\\"}"\n'
    )
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    env = _config(tmp_path, {"credHelpers": {"r.io": "fake"}})
    found = credentials.find("r.io", env=env)
    assert found is not None and (found.username, found.secret) == ("u-r.io", "tok")


def test_creds_store_not_found_means_anonymous(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _helper(tmp_path / "bin", "empty", "echo 'credentials not found in native keychain'\nexit 1\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    assert credentials.find("r.io", env=_config(tmp_path, {"credsStore": "empty"})) is None


def test_missing_helper_is_an_auth_error(tmp_path: Path) -> None:
    with pytest.raises(AuthError, match=r"docker-credential-nope is configured for r\.io but not found"):
        credentials.find("r.io", env=_config(tmp_path, {"credHelpers": {"r.io": "nope"}}))


def test_github_token_only_for_ghcr_in_actions(tmp_path: Path) -> None:
    env = {
        "DOCKER_CONFIG": str(tmp_path),
        "GITHUB_ACTIONS": "true",
        "GITHUB_TOKEN": "ght",
        "GITHUB_ACTOR": "me",
    }
    found = credentials.find("ghcr.io", env=env)
    assert found is not None and (found.username, found.secret, found.origin) == ("me", "ght", "GITHUB_TOKEN")
    assert credentials.find("docker.io", env=env) is None
    assert credentials.find("ghcr.io", env={**env, "GITHUB_ACTIONS": ""}) is None


def test_docker_config_in_memory_matches_hosts_as_find_does() -> None:
    auth = base64.b64encode(b"me:pw").decode()
    data = json.dumps(
        {
            "auths": {
                "https://reg.example.com/v2/": {"auth": auth},
                "other.io": {"username": "u", "password": "p"},
            }
        }
    ).encode()
    found = credentials.from_docker_config(data, "reg.example.com", origin="Secret/ns/pull")
    assert found is not None and (found.username, found.secret, found.origin) == (
        "me",
        "pw",
        "Secret/ns/pull auths['https://reg.example.com/v2/']",
    )
    other = credentials.from_docker_config(data, "other.io", origin="s")
    assert other is not None and (other.username, other.secret) == ("u", "p")
    assert credentials.from_docker_config(data, "third.io", origin="s") is None
    assert credentials.auth_hosts(data) == ["other.io", "reg.example.com"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "Secret/ns/pull is not valid JSON (line 1)"),
        (b'{"credHelpers": {}}', "Secret/ns/pull has no 'auths' mapping"),
        (
            b'{"auths": {"r.io": {"auth": "%%%s3cret"}}}',
            "Secret/ns/pull auths['r.io']: the 'auth' field is not base64",
        ),
    ],
)
def test_docker_config_in_memory_errors_never_show_values(data: bytes, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        credentials.from_docker_config(data, "r.io", origin="Secret/ns/pull")
    assert caught.value.message.startswith(message)
    assert "s3cret" not in caught.value.message


def test_environment_credentials_are_for_their_host_only(tmp_path: Path) -> None:
    env = _config(tmp_path, {"auths": {"r.io": {"username": "docker", "password": "config"}}})
    env |= {
        "LOCKGATE_REGISTRY_HOST": "r.io",
        "LOCKGATE_REGISTRY_USERNAME": "u",
        "LOCKGATE_REGISTRY_PASSWORD": "p",
    }
    found = credentials.find("r.io", env=env)
    assert found is not None and (found.username, found.secret) == ("u", "p")
    assert "LOCKGATE_REGISTRY_USERNAME" in found.origin
    # another registry never gets them (the image scanner talks to many)
    assert credentials.find("other.io", env=env) is None
    # --creds still wins
    explicit = credentials.Credentials("x", "y")
    assert credentials.find("r.io", explicit=explicit, env=env) is explicit


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LOCKGATE_REGISTRY_USERNAME": "u"}, "set both"),
        (
            {"LOCKGATE_REGISTRY_USERNAME": "u", "LOCKGATE_REGISTRY_PASSWORD": "p"},
            "need LOCKGATE_REGISTRY_HOST",
        ),
    ],
)
def test_half_environment_credentials_are_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        credentials.find("r.io", env=env)
