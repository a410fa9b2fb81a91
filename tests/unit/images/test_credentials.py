"""Credential rules for scanning: Docker config documents, secretRef files, signing keys, PR slugs."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from action.images import commitsign, credentials, pullrequest
from action.images.model import ImageRepository, NamespacedName
from lockgate.errors import UsageError

KEY = NamespacedName("apps", "app")


def _auth(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


CONFIGS = {
    "auth field": ({"auths": {"reg.example": {"auth": _auth("u", "p")}}}, "reg.example", ("u", "p", False)),
    "username and password": (
        {"auths": {"https://reg.example/v1/": {"username": "u", "password": "p"}}},
        "reg.example",
        ("u", "p", False),
    ),
    "identity token": (
        {"auths": {"reg.example": {"identitytoken": "refresh"}}},
        "reg.example",
        ("<token>", "refresh", True),
    ),
    "docker hub aliases": (
        {"auths": {"https://index.docker.io/v1/": {"auth": _auth("u", "p")}}},
        "registry-1.docker.io",
        ("u", "p", False),
    ),
    "other host is anonymous": ({"auths": {"other.example": {"auth": _auth("u", "p")}}}, "reg.example", None),
}


@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_docker_config_entries(case: str) -> None:
    document, host, expected = CONFIGS[case]
    found = credentials.from_docker_config(document, host, "test")
    got = None if found is None else (found.username, found.secret, found.identity_token)
    assert got == expected


def test_secret_never_in_repr_or_errors() -> None:
    found = credentials.from_docker_config(
        {"auths": {"r": {"auth": _auth("u", "s3cret")}}}, "r", "secretRef regcred"
    )
    assert found is not None and "s3cret" not in repr(found)
    with pytest.raises(credentials.CredentialsError, match="not base64") as caught:
        credentials.from_docker_config({"auths": {"r": {"auth": "s3cret!!"}}}, "r", "secretRef regcred")
    assert "s3cret" not in caught.value.message


def test_secret_ref_prefers_the_mounted_secret_layout(tmp_path: Path) -> None:
    (tmp_path / "regcred").mkdir()
    mounted = tmp_path / "regcred" / ".dockerconfigjson"
    mounted.write_text(json.dumps({"auths": {"r": {"auth": _auth("a", "b")}}}))
    (tmp_path / "regcred.json").write_text(json.dumps({"auths": {}}))
    repo = ImageRepository(KEY, "r/app", secret_ref="regcred")
    access = credentials.for_repository(repo, "r", secrets_dir=tmp_path)
    assert access.credentials is not None and access.credentials.username == "a"
    assert access.origin == f"secretRef regcred ({mounted})" and not access.ambient


def test_secret_ref_without_secrets_dir_is_the_jobs_login() -> None:
    access = credentials.for_repository(
        ImageRepository(KEY, "r/app", secret_ref="regcred"), "r", secrets_dir=None
    )
    assert access.ambient and access.credentials is None


def test_native_credentials_with_unset_variable_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_UNSET", raising=False)
    repo = ImageRepository(KEY, "r/app", credentials_file="$NOPE_UNSET/config.json")
    with pytest.raises(credentials.CredentialsError, match="unset environment variable"):
        credentials.for_repository(repo, "r", secrets_dir=None)


def test_signing_key_kinds(tmp_path: Path) -> None:
    pub = tmp_path / "id.pub"
    pub.write_text("ssh-ed25519 AAAAC3Nza bot\n")
    private = tmp_path / "id"
    private.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nxyz\n")
    assert commitsign.Signing.from_key(str(pub)).format == "ssh"
    assert commitsign.Signing.from_key(str(private)).git_config() == {
        "gpg.format": "ssh",
        "user.signingkey": str(private),
    }
    assert commitsign.Signing.from_key("key::ssh-ed25519 AAAA").format == "ssh"
    assert commitsign.Signing.from_key("0xDEADBEEF").format == "openpgp"
    assert commitsign.Signing().git_config() == {}


SLUGS = {
    "env wins": ({"GITHUB_REPOSITORY": "acme/app"}, "git@github.com:other/x.git", None, "github acme/app"),
    "ssh remote": ({}, "git@github.com:acme/app.git", None, "github acme/app"),
    "https remote": ({}, "https://github.com/acme/app", None, "github acme/app"),
    "gitlab.com nested": ({}, "https://gitlab.com/g/sub/app.git", None, "gitlab g/sub/app"),
    "self-hosted gitlab": ({}, "git@git.example.com:g/app.git", "gitlab", "gitlab g/app"),
    "gitlab CI": (
        {"CI_PROJECT_PATH": "g/app", "CI_SERVER_URL": "https://git.example.com"},
        "https://gitlab-ci-token:t@git.example.com/g/app.git",
        None,
        "gitlab g/app",
    ),
    "gitea": ({}, "https://codeberg.org/acme/app.git", None, "gitea acme/app"),
    "bitbucket": ({}, "git@bitbucket.org:team/app.git", None, "bitbucket team/app"),
    "bitbucket server": ({}, "https://bb.example.com/scm/OPS/app.git", None, "bitbucketserver OPS/app"),
    "azure devops": ({}, "https://acme@dev.azure.com/acme/web/_git/app", None, "azuredevops web/app"),
}


@pytest.mark.parametrize("case", sorted(SLUGS))
def test_pull_request_repository(case: str) -> None:
    env, remote, forge, expected = SLUGS[case]
    found = pullrequest.target(env, remote, forge).repository
    assert f"{found.forge} {found.slug}" == expected


def test_a_remote_of_no_known_forge_names_the_forge_flag() -> None:
    with pytest.raises(UsageError, match="pass --forge") as raised:
        pullrequest.target({}, "https://bob:s3cret@git.example.com/app.git")
    assert "s3cret" not in raised.value.message


def test_missing_token_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="GITHUB_TOKEN"):
        pullrequest.from_environment({"GITHUB_REPOSITORY": "acme/app"})
    with pytest.raises(UsageError, match="GITLAB_TOKEN"):
        pullrequest.from_environment({}, remote_url="https://gitlab.com/g/app")
