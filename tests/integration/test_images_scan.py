"""`images scan` and `images update` against a real registry holding real tags.

Pagination, page-size caps and 429 backoff go through ``CappingProxy`` (see
images_support.py), a reverse proxy in front of the world's registry, because
Distribution 2.8 returns every tag in one page whatever ``n`` asks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from action.images import cli, run
from action.images.model import NamespacedName
from lockgate.errors import ExitCode
from tests.integration.images_support import (
    CappingProxy,
    docker_config,
    flux_config,
    lockgate,
    native_config,
    seed_tags,
)
from tests.world.registry import Registry

APP = NamespacedName("apps", "app")
MANY = [f"1.0.{i}" for i in range(1050)] + ["2.0.0", "1.1.0-rc.1", "sha256-abc.sig"]


@pytest.fixture(scope="module")
def many_tags(registry: Registry) -> Iterator[str]:
    """One repository with 1,053 tags, seeded once for the module."""
    seed_tags(registry.host, "images-scan/many", MANY)
    yield "images-scan/many"


def test_scan_elects_by_policy_and_reflects_digest(registry: Registry, unique: str, tmp_path: Path) -> None:
    digests = seed_tags(registry.host, unique, ["1.0.0", "1.2.0", "v1.3.0", "2.0.0", "1.4.0-rc.1", "x.sig"])
    native_config(
        tmp_path, [f"{{name: app, image: '{registry.host}/{unique}', semver: '^1.0', digest: Always}}"]
    )
    report = run.run_scan(tmp_path)
    result = report.results[APP]
    assert result.latest is not None and result.latest.tag == "v1.3.0"
    assert result.latest.digest == digests["v1.3.0"]
    assert len(set(digests.values())) == 6  # distinct manifests, so the right one was resolved
    assert report.listings[APP].listed == 6
    assert len(report.listings[APP].tags) == 5  # the .sig is excluded


def test_repository_with_more_than_1000_tags_is_listed_whole(
    registry: Registry, many_tags: str, tmp_path: Path
) -> None:
    native_config(tmp_path, [f"{{name: app, image: '{registry.host}/{many_tags}', semver: '~1.0'}}"])
    (row,) = run.run_scan(tmp_path).to_json()
    assert row["tags"] == 1053 and row["excluded"] == 1
    assert row["latest"] == f"{registry.host}/{many_tags}:1.0.1049"
    assert row["candidates"] == 1050  # the range ~1.0 admits 1.0.x, not 2.0.0 nor the prerelease


def test_page_size_capped_registry_is_paginated_through_link(
    registry: Registry, many_tags: str, tmp_path: Path
) -> None:
    with CappingProxy(registry.host, cap=100).running() as proxy:
        native_config(tmp_path, [f"{{name: app, image: '{proxy.host}/{many_tags}', alphabetical: asc}}"])
        result = lockgate("images", "scan", "--path", str(tmp_path), "--output", "json")
    assert result.code == 0, result.err
    (row,) = json.loads(result.out)
    assert row["tags"] == 1053 and row["latest"] == f"{proxy.host}/{many_tags}:2.0.0"
    pages = proxy.tag_pages()
    assert len(pages) == 11  # ceil(1053 / 100): the asked n=1000 was capped, Link was followed
    assert pages[0].query["n"] == "1000" and all(p.query.get("n") == "100" for p in pages[1:])


def test_429_with_retry_after_is_waited_out(registry: Registry, many_tags: str, tmp_path: Path) -> None:
    with CappingProxy(registry.host, cap=500, throttle=1, retry_after="1").running() as proxy:
        native_config(tmp_path, [f"{{name: app, image: '{proxy.host}/{many_tags}', semver: '>=2'}}"])
        report = run.run_scan(tmp_path)
    latest = report.results[APP].latest
    assert latest is not None and latest.tag == "2.0.0"
    first, second = proxy.tag_pages()[:2]
    assert (first.status, second.status) == (429, 200)
    assert second.at - first.at >= 0.9  # Retry-After: 1 was honoured
    assert report.listings[APP].listed == 1053


def test_one_failing_repository_does_not_stop_the_others(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    seed_tags(registry.host, unique, ["1.0.0", "1.1.0"])
    native_config(
        tmp_path,
        [
            f"{{name: app, image: '{registry.host}/{unique}', semver: '*'}}",
            f"{{name: gone, image: '{registry.host}/{unique}-missing', semver: '*'}}",
        ],
    )
    (tmp_path / "deploy").mkdir()
    app = tmp_path / "deploy" / "app.yaml"
    gone = tmp_path / "deploy" / "gone.yaml"
    app.write_text(f'image: {registry.host}/{unique}:1.0.0 # {{"$imagepolicy": "apps:app"}}\n')
    gone.write_text('image: example/gone:1.0.0 # {"$imagepolicy": "apps:gone"}\n')
    before = gone.read_bytes()
    result = lockgate("images", "update", "--path", str(tmp_path))
    assert result.code == ExitCode.PARTIAL, result.err
    assert app.read_text() == f'image: {registry.host}/{unique}:1.1.0 # {{"$imagepolicy": "apps:app"}}\n'
    assert gone.read_bytes() == before
    assert "apps:gone" in result.err and "not found" in result.err
    assert "1 of 2 policies failed" in result.err


def test_every_repository_missing_exits_with_the_resolve_code(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    native_config(tmp_path, [f"{{name: app, image: '{registry.host}/{unique}', semver: '*'}}"])
    result = CliRunner().invoke(cli.images, ["scan", "--path", str(tmp_path)], standalone_mode=False)
    assert isinstance(result.exception, run.ScanFailedError)
    assert result.exception.exit_code == ExitCode.RESOLVE
    assert "not found" in result.output


def test_secret_ref_resolves_to_a_file_under_secrets_dir(
    auth_registry: Registry, unique: str, tmp_path: Path
) -> None:
    assert auth_registry.username and auth_registry.password
    from lockgate import registry as reg

    creds = reg.Credentials(auth_registry.username, auth_registry.password)
    seed_tags(auth_registry.host, unique, ["0.1.0", "0.2.0"], credentials=creds)
    repo = tmp_path / "repo"
    repo.mkdir()
    flux_config(repo, "app", f"{auth_registry.host}/{unique}", secret="regcred")
    secrets = tmp_path / "secrets"
    docker_config(
        secrets / "regcred" / ".dockerconfigjson",
        auth_registry.host,
        auth_registry.username,
        auth_registry.password,
    )
    result = lockgate(
        "images", "scan", "--path", str(repo), "--secrets-dir", str(secrets), "--output", "json"
    )
    assert result.code == 0, result.err
    (row,) = json.loads(result.out)
    assert row["latest"].endswith(":0.2.0")
    assert row["credentials"] == f"secretRef regcred ({secrets / 'regcred' / '.dockerconfigjson'})"
    assert auth_registry.password not in result.out + result.err


def test_native_credentials_file_with_environment_variable(
    auth_registry: Registry, unique: str, tmp_path: Path
) -> None:
    assert auth_registry.username and auth_registry.password
    from lockgate import registry as reg

    creds = reg.Credentials(auth_registry.username, auth_registry.password)
    seed_tags(auth_registry.host, unique, ["3.0.0"], credentials=creds)
    docker_config(tmp_path / "ci" / "regcred.json", auth_registry.host, creds.username, creds.secret)
    repo = tmp_path / "repo"
    repo.mkdir()
    native_config(
        repo,
        [
            f"{{name: app, image: '{auth_registry.host}/{unique}', semver: '*', "
            "credentials: '$CI_TMP/regcred.json'}"
        ],
    )
    result = lockgate("images", "scan", "--path", str(repo), env={"CI_TMP": str(tmp_path / "ci")})
    assert result.code == 0, result.err
    assert f"{auth_registry.host}/{unique}:3.0.0" in result.out


def test_wrong_credentials_are_an_auth_error_and_never_printed(
    auth_registry: Registry, unique: str, tmp_path: Path
) -> None:
    assert auth_registry.username
    wrong = "not-the-password-4f1c"
    repo = tmp_path / "repo"
    repo.mkdir()
    flux_config(repo, "app", f"{auth_registry.host}/{unique}", secret="regcred")
    docker_config(tmp_path / "secrets" / "regcred.json", auth_registry.host, auth_registry.username, wrong)
    for output in ("table", "json"):
        result = lockgate(
            "images",
            "scan",
            "--path",
            str(repo),
            "--secrets-dir",
            str(tmp_path / "secrets"),
            "--output",
            output,
        )
        assert result.code == ExitCode.AUTH, result.err
        assert "refused the credentials" in result.out + result.err
        assert wrong not in result.out + result.err


def test_secret_ref_without_a_file_names_the_field_and_the_paths(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    flux_config(repo, "app", f"{registry.host}/{unique}", secret="regcred")
    (tmp_path / "secrets").mkdir()
    result = lockgate("images", "scan", "--path", str(repo), "--secrets-dir", str(tmp_path / "secrets"))
    assert result.code == ExitCode.USAGE
    assert "spec.secretRef.name 'regcred'" in result.out
    assert str(tmp_path / "secrets" / "regcred.json") in result.out


def test_secret_ref_without_secrets_dir_uses_the_jobs_docker_login(
    auth_registry: Registry, unique: str, tmp_path: Path
) -> None:
    assert auth_registry.username and auth_registry.password
    from lockgate import registry as reg

    seed_tags(
        auth_registry.host,
        unique,
        ["1.0.0"],
        credentials=reg.Credentials(auth_registry.username, auth_registry.password),
    )
    docker_config(
        tmp_path / "docker" / "config.json",
        auth_registry.host,
        auth_registry.username,
        auth_registry.password,
    )
    repo = tmp_path / "repo"
    repo.mkdir()
    flux_config(repo, "app", f"{auth_registry.host}/{unique}", secret="regcred")
    result = lockgate("images", "scan", "--path", str(repo), env={"DOCKER_CONFIG": str(tmp_path / "docker")})
    assert result.code == 0, result.err
    assert "1.0.0" in result.out


def test_update_cli_rewrites_markers_and_reports_why_in_json(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    digests = seed_tags(registry.host, unique, ["1.0.0", "1.1.0", "2.0.0"])
    native_config(
        tmp_path, [f"{{name: app, image: '{registry.host}/{unique}', semver: '^1.0', digest: Always}}"]
    )
    (tmp_path / "deploy").mkdir()
    original = f'image: {registry.host}/{unique}:1.0.0 # {{"$imagepolicy": "apps:app"}}\n'
    (tmp_path / "deploy" / "app.yaml").write_text(original)
    result = CliRunner().invoke(cli.images, ["update", "--path", str(tmp_path), "--output", "json"])
    assert result.exit_code == 0, result.output
    expected = f"{registry.host}/{unique}:1.1.0@{digests['1.1.0']}"
    assert (tmp_path / "deploy" / "app.yaml").read_text() == original.replace(
        f"{registry.host}/{unique}:1.0.0", expected
    )
    (change,) = json.loads(result.output)["automations"][0]["changes"]
    assert change["new"] == expected and change["file"] == "deploy/app.yaml" and change["line"] == 1
    assert change["why"] == {
        "policy": "semver ^1.0",
        "tags": 3,
        "excluded": 0,
        "candidates": 2,  # 1.0.0 and 1.1.0: 2.0.0 is outside the range
        "latest": expected,
    }


def test_scan_table_shows_current_value_latest_and_tag_count(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    seed_tags(registry.host, unique, ["1.0.0", "1.1.0"])
    native_config(tmp_path, [f"{{name: app, image: '{registry.host}/{unique}', semver: '*'}}"])
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "app.yaml").write_text('tag: 1.0.0 # {"$imagepolicy": "apps:app:tag"}\n')
    result = lockgate("images", "scan", "--path", str(tmp_path))
    assert result.code == 0, result.err
    header, row = result.out.splitlines()
    assert header.split() == ["POLICY", "CURRENT", "LATEST", "TAGS", "WHY", "/", "ERROR"]
    assert row.split()[:4] == ["apps:app", "1.0.0", f"{registry.host}/{unique}:1.1.0", "2"]
    assert (tmp_path / "deploy" / "app.yaml").read_text().startswith("tag: 1.0.0")  # scan never writes
