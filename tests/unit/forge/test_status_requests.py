"""Each forge's commit status request, built without I/O: URL, body, credential header."""

from __future__ import annotations

import base64
import dataclasses
import hashlib

from lockgate import forge
from lockgate.forge import remote
from lockgate.forge.base import Credentials, Request, Status

SHA = "6d1e0c3b9f2a4e5d8c7b6a5f4e3d2c1b0a9f8e7d"
STATUS = Status("failure", "health check failed: Deployment/web", "lockgate/east/web", "https://dash/web")


def _request(url: str, name: str, credentials: Credentials, api_url: str | None = None) -> Request:
    repository = remote.repository(url, remote.forge_name(name))
    return forge.status_request(repository, SHA, STATUS, credentials, api_url=api_url)


def test_github_enterprise_derives_its_api_and_takes_a_bearer_token() -> None:
    request = _request("https://ghe.example.com/acme/app", "github", Credentials(token="t"))
    assert request.url == f"https://ghe.example.com/api/v3/repos/acme/app/statuses/{SHA}"
    assert request.body["state"] == "failure" and request.headers["Authorization"] == "Bearer t"


def test_gitlab_names_the_project_by_its_encoded_path_and_says_failed() -> None:
    request = _request("git@gitlab.example.com:acme/platform/app.git", "gitlab", Credentials(token="t"))
    assert request.url == f"https://gitlab.example.com/api/v4/projects/acme%2Fplatform%2Fapp/statuses/{SHA}"
    assert request.body == {
        "state": "failed",
        "name": "lockgate/east/web",
        "description": STATUS.description,
        "target_url": "https://dash/web",
    }
    assert request.headers == {"PRIVATE-TOKEN": "t"}


def test_gitea_takes_a_token_header_under_its_api_v1() -> None:
    request = _request("http://127.0.0.1:3000/acme/app.git", "gitea", Credentials(token="t"))
    assert request.url == f"http://127.0.0.1:3000/api/v1/repos/acme/app/statuses/{SHA}"
    assert request.headers == {"Authorization": "token t"} and request.body["context"] == "lockgate/east/web"


def test_bitbucket_keys_the_status_by_the_contexts_sha1_and_uses_basic_auth() -> None:
    request = _request("git@bitbucket.org:team/app.git", "bitbucket", Credentials(token="bob:pw"))
    assert request.url == f"https://api.bitbucket.org/2.0/repositories/team/app/commit/{SHA}/statuses/build"
    assert request.body["key"] == hashlib.sha1(b"lockgate/east/web").hexdigest()
    assert (request.body["state"], request.body["url"]) == ("FAILED", "https://dash/web")
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(b"bob:pw").decode()


def test_bitbucket_server_takes_username_and_password_and_shows_the_description_in_the_name() -> None:
    creds = Credentials(username="bob", password="pw")
    request = _request("https://bb.example.com/ctx/scm/OPS/app.git", "bitbucketserver", creds)
    assert (
        request.url
        == f"https://bb.example.com/ctx/rest/api/latest/projects/OPS/repos/app/commits/{SHA}/builds"
    )
    assert request.body["name"] == f"lockgate/east/web [{STATUS.description}]"
    assert request.headers["X-Atlassian-Token"] == "no-check"
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(b"bob:pw").decode()


def test_azure_devops_posts_under_the_organisation_with_a_pat_as_basic() -> None:
    request = _request("https://dev.azure.com/acme/web/_git/app", "azuredevops", Credentials(token="pat"))
    assert request.url == (
        f"https://dev.azure.com/acme/web/_apis/git/repositories/app/commits/{SHA}/statuses?api-version=7.1"
    )
    assert request.body["state"] == "error" and request.body["context"] == {
        "genre": "lockgate",
        "name": "lockgate/east/web",
    }
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(b":pat").decode()
    flux = dataclasses.replace(STATUS, genre="fluxcd", context="kustomization/web/8d2a9f3c")
    repository = remote.repository(
        "https://dev.azure.com/acme/web/_git/app", remote.forge_name("azuredevops")
    )
    kept = forge.status_request(repository, SHA, flux, Credentials(token="pat"))
    assert kept.body["context"] == {"genre": "fluxcd", "name": "kustomization/web/8d2a9f3c"}


def test_an_api_url_overrides_the_derived_one() -> None:
    request = _request(
        "https://gitlab.com/acme/app", "gitlab", Credentials(token="t"), "http://127.0.0.1:1/api/v4/"
    )
    assert request.url.startswith("http://127.0.0.1:1/api/v4/projects/acme%2Fapp/")


def test_credentials_never_show_in_their_repr() -> None:
    assert "s3cret" not in repr(Credentials(token="s3cret", password="s3cret"))
