"""Which forge and repository a URL names, and the commit of a revision: pure, no world."""

from __future__ import annotations

import pytest

from lockgate.forge import remote

SHA = "6d1e0c3b9f2a4e5d8c7b6a5f4e3d2c1b0a9f8e7d"

#: url, forge -> (base_url, owner, name)
REPOSITORIES = {
    "github https": ("https://github.com/acme/app.git", "github", ("https://github.com", "acme", "app")),
    "github scp": ("git@github.com:acme/app.git", "github", ("https://github.com", "acme", "app")),
    "github enterprise": (
        "https://ghe.example.com/team/svc/",
        "github",
        ("https://ghe.example.com", "team", "svc"),
    ),
    "gitlab nested groups": (
        "https://gitlab.com/acme/platform/team/app.git",
        "gitlab",
        ("https://gitlab.com", "acme/platform/team", "app"),
    ),
    "gitlab ssh port": (
        "ssh://git@gitlab.example.com:2222/acme/app.git",
        "gitlab",
        ("https://gitlab.example.com", "acme", "app"),
    ),
    "gitlab browser url": (
        "https://gitlab.example.com/acme/app/-/tree/main",
        "gitlab",
        ("https://gitlab.example.com", "acme", "app"),
    ),
    "gitea http with port": (
        "http://127.0.0.1:3000/acme/app",
        "gitea",
        ("http://127.0.0.1:3000", "acme", "app"),
    ),
    "gitea sub-path": (
        "https://example.com/git/acme/app.git",
        "gitea",
        ("https://example.com/git", "acme", "app"),
    ),
    "bitbucket https with user": (
        "https://bob@bitbucket.org/team/app.git",
        "bitbucket",
        ("https://bitbucket.org", "team", "app"),
    ),
    "bitbucket server clone": (
        "https://bb.example.com/context/scm/OPS/app.git",
        "bitbucketserver",
        ("https://bb.example.com/context", "OPS", "app"),
    ),
    "bitbucket server browse": (
        "https://bb.example.com/projects/OPS/repos/app/browse",
        "bitbucketserver",
        ("https://bb.example.com", "OPS", "app"),
    ),
    "bitbucket server ssh": (
        "ssh://git@bb.example.com:7999/ops/app.git",
        "bitbucketserver",
        ("https://bb.example.com", "ops", "app"),
    ),
    "azure devops https": (
        "https://acme@dev.azure.com/acme/web/_git/app",
        "azuredevops",
        ("https://dev.azure.com/acme", "web", "app"),
    ),
    "azure devops ssh": (
        "git@ssh.dev.azure.com:v3/acme/web/app",
        "azuredevops",
        ("https://dev.azure.com/acme", "web", "app"),
    ),
    "visualstudio.com": (
        "https://acme.visualstudio.com/DefaultCollection/web/_git/app",
        "azuredevops",
        ("https://acme.visualstudio.com/DefaultCollection", "web", "app"),
    ),
}


@pytest.mark.parametrize("case", sorted(REPOSITORIES))
def test_each_forges_url_forms_name_the_repository(case: str) -> None:
    url, forge, expected = REPOSITORIES[case]
    found = remote.repository(url, remote.forge_name(forge))
    assert (found.base_url, found.owner, found.name) == expected


DETECTED = {
    "https://github.com/acme/app": "github",
    "git@gitlab.com:acme/app.git": "gitlab",
    "https://bitbucket.org/team/app": "bitbucket",
    "https://dev.azure.com/acme/web/_git/app": "azuredevops",
    "https://acme.visualstudio.com/web/_git/app": "azuredevops",
    "https://codeberg.org/acme/app": "gitea",
    "https://bb.example.com/scm/OPS/app.git": "bitbucketserver",
    "https://git.example.com/acme/app.git": None,
    "git://127.0.0.1:9418/app.git": None,
}


@pytest.mark.parametrize("url", sorted(DETECTED))
def test_the_forge_is_told_by_host_or_path_or_not_at_all(url: str) -> None:
    assert remote.detect(url) == DETECTED[url]


@pytest.mark.parametrize(
    ("url", "forge"),
    [
        ("https://github.com/acme", "github"),
        ("https://bitbucket.org/a/b/c", "bitbucket"),
        ("https://bb.example.com/OPS/app.git", "bitbucketserver"),
        ("https://dev.azure.com/web/_git/app", "azuredevops"),
        ("https://gitlab.com/app", "gitlab"),
    ],
)
def test_a_url_of_the_wrong_shape_says_what_shape_was_expected(url: str, forge: str) -> None:
    with pytest.raises(remote.NotARepository, match="URL is https://"):
        remote.repository(url, remote.forge_name(forge))


@pytest.mark.parametrize(
    "revision",
    [f"main@sha1:{SHA}", f"sha1:{SHA}", f"main/{SHA}", SHA, f"refs/heads/main@sha1:{SHA.upper()}"],
)
def test_flux_revision_formats_give_the_commit(revision: str) -> None:
    commit = remote.commit("https://gitlab.com/acme/app", revision, "gitlab")
    assert commit is not None and commit.sha == SHA and commit.repository.slug == "acme/app"


def test_no_commit_without_a_sha_or_a_repository() -> None:
    assert remote.commit("https://gitlab.com/acme/app", "main@sha1:0", "gitlab") is None
    assert remote.commit("", f"main@sha1:{SHA}", "gitlab") is None
    assert remote.commit("https://dev.azure.com/acme/app", f"main@sha1:{SHA}", "azuredevops") is None
