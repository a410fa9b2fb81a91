"""Where a forge token may go: decided by the provider's configuration, never by the artifact."""

from __future__ import annotations

import pytest

from lockgate import forge
from lockgate.forge import destination
from lockgate.forge.base import Credentials, Status
from lockgate.forge.destination import PinError, Refused, Target
from lockgate.forge.remote import ForgeName

SHA = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"
REVISION = f"main@sha1:{SHA}"


def _pin(kind: ForgeName, address: str | None = None, api_url: str | None = None) -> destination.Pin:
    return forge.pin(kind, address=address, api_url=api_url)


@pytest.mark.parametrize(
    ("kind", "address", "source", "api_root", "slug"),
    [
        (
            "gitea",
            "https://git.example.com/acme/app",
            "git@git.example.com:acme/app.git",
            "https://git.example.com/api/v1",
            "acme/app",
        ),
        (
            "gitlab",
            "https://gitlab.example.com/acme/platform/app",
            "ssh://git@gitlab.example.com:2222/ACME/platform/app.git",
            "https://gitlab.example.com/api/v4",
            "acme/platform/app",
        ),
        (
            "bitbucketserver",
            "https://bb.example.com/scm/OPS/app.git",
            "https://bb.example.com/projects/OPS/repos/app/browse",
            "https://bb.example.com/rest/api/latest",
            "OPS/app",
        ),
        (
            "azuredevops",
            "https://dev.azure.com/acme/web/_git/app",
            "git@ssh.dev.azure.com:v3/acme/web/app",
            "https://dev.azure.com/acme",
            "web/app",
        ),
        (
            "github",
            "https://github.com/acme/app",
            "https://github.com/acme/app.git",
            "https://api.github.com",
            "acme/app",
        ),
    ],
)
def test_an_address_pins_host_and_repository_and_any_url_form_of_it_is_accepted(
    kind: ForgeName, address: str, source: str, api_root: str, slug: str
) -> None:
    found = destination.target(_pin(kind, address), source, REVISION)
    assert isinstance(found, Target), found
    assert (found.api_root, found.repository.slug.lower(), found.sha) == (api_root, slug.lower(), SHA)


def test_a_pinned_provider_needs_no_source_annotation_the_commit_is_enough() -> None:
    found = destination.target(_pin("gitea", "https://git.example.com/acme/app"), "", REVISION)
    assert isinstance(found, Target) and found.repository.slug == "acme/app"


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        ("http://attacker.example/acme/app", "attacker.example/acme/app"),
        ("https://git.example.com/acme/payments", "git.example.com/acme/payments"),
        ("https://git.example.com/sub/acme/app", "git.example.com/sub/acme/app"),
    ],
)
def test_a_pinned_provider_refuses_another_host_or_repository(source: str, shown: str) -> None:
    found = destination.target(_pin("gitea", "https://git.example.com/acme/app"), source, REVISION)
    assert isinstance(found, Refused), found
    assert shown in found.reason and "git.example.com/acme/app (its address)" in found.reason


@pytest.mark.parametrize("kind", ["gitlab", "gitea", "bitbucketserver", "azuredevops"])
def test_a_self_hostable_forge_with_no_host_configured_sends_nothing_and_says_what_to_set(
    kind: ForgeName,
) -> None:
    sources = {
        "gitlab": "http://attacker.example/x/y",
        "gitea": "http://attacker.example/x/y",
        "bitbucketserver": "http://attacker.example/scm/X/y.git",
        "azuredevops": "http://attacker.example/org/x/_git/y",
    }
    found = destination.target(_pin(kind), sources[kind], REVISION)
    assert isinstance(found, Refused), found
    assert "names no host of its own" in found.reason
    assert "set address" in found.reason and "apiURL" in found.reason


def test_an_api_url_pins_the_host_and_the_repository_must_be_on_it() -> None:
    pinned = _pin("gitlab", api_url="https://gitlab.example.com/api/v4/")
    ok = destination.target(pinned, "git@gitlab.example.com:acme/app.git", REVISION)
    assert isinstance(ok, Target) and ok.api_root == "https://gitlab.example.com/api/v4"
    refused = destination.target(pinned, "http://attacker.example/acme/app", REVISION)
    assert isinstance(refused, Refused)
    assert "sends its token only to gitlab.example.com (its apiURL)" in refused.reason


def test_github_and_bitbucket_keep_their_public_api_and_refuse_sources_elsewhere() -> None:
    github = _pin("github")
    ok = destination.target(github, "https://github.com/acme/app", REVISION)
    assert isinstance(ok, Target) and ok.api_root == "https://api.github.com"
    # before, a GitHub Enterprise-looking source chose https://HOST/api/v3 for the token
    refused = destination.target(github, "https://attacker.example/acme/app", REVISION)
    assert isinstance(refused, Refused) and "github.com (github's public API)" in refused.reason
    bitbucket = _pin("bitbucket")
    assert isinstance(destination.target(bitbucket, "git@bitbucket.org:acme/app.git", REVISION), Target)
    assert isinstance(destination.target(bitbucket, "https://bitbucket.example/acme/app", REVISION), Refused)


def test_github_enterprise_by_api_url_takes_repositories_of_its_own_host() -> None:
    pinned = _pin("github", api_url="https://ghe.example.com/api/v3")
    ok = destination.target(pinned, "https://ghe.example.com/acme/app", REVISION)
    assert isinstance(ok, Target) and ok.api_root == "https://ghe.example.com/api/v3"
    assert isinstance(destination.target(pinned, "https://github.com/acme/app", REVISION), Refused)


def test_no_commit_in_the_annotations_is_nothing_to_report() -> None:
    assert destination.target(_pin("gitea", "https://git.example.com/acme/app"), "", "main") is None
    assert destination.target(_pin("gitea", api_url="https://git.example.com/api/v1"), "", REVISION) is None


@pytest.mark.parametrize(
    ("address", "api_url", "field"),
    [
        ("http://git.example.com/acme/app", None, "address"),
        (None, "http://git.example.com/api/v1", "apiURL"),
        ("https://git.example.com/acme/app", "http://10.0.0.7/api/v1", "apiURL"),
    ],
)
def test_plain_http_beyond_loopback_is_refused_at_load(
    address: str | None, api_url: str | None, field: str
) -> None:
    with pytest.raises(PinError, match=rf"^{field}: .* is plain http: .*loopback only"):
        _pin("gitea", address, api_url)


@pytest.mark.parametrize("host", ["127.0.0.1:3000", "localhost", "[::1]:8080"])
def test_plain_http_to_loopback_is_allowed(host: str) -> None:
    found = destination.target(_pin("gitea", f"http://{host}/acme/app"), "", REVISION)
    assert isinstance(found, Target) and found.api_root == f"http://{host}/api/v1"


def test_an_address_that_is_no_repository_of_the_forge_is_refused_at_load() -> None:
    with pytest.raises(PinError, match=r"^address: .*GitLab project URL"):
        _pin("gitlab", "https://gitlab.example.com/just-a-group")
    with pytest.raises(PinError, match=r"^address: .*not an http"):
        _pin("gitea", "git@git.example.com:acme/app.git")


def test_a_gitlab_project_pinned_by_its_id_as_flux_allows_takes_any_path_on_its_host() -> None:
    pinned = _pin("gitlab", "https://gitlab.example.com/1234")
    assert pinned.api_root == "https://gitlab.example.com/api/v4"
    found = destination.target(pinned, "https://gitlab.example.com/acme/app.git", REVISION)
    assert isinstance(found, Target) and found.repository.slug == "1234"
    request = forge.status_request(
        found.repository, SHA, Status("success", "ok", "c"), Credentials(token="t"), api_url=found.api_root
    )
    assert request.url == f"https://gitlab.example.com/api/v4/projects/1234/statuses/{SHA}"
    assert isinstance(destination.target(pinned, "https://attacker.example/acme/app", REVISION), Refused)
