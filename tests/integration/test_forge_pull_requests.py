"""``lockgate images update --pr`` on every forge: one pull/merge request, opened then updated.

Gitea is the real one (``tests/world/gitea.py``): the update branch is pushed to it over
HTTP and the pull request, its body and its labels are read back from its API. GitLab,
Bitbucket Cloud, Bitbucket Server and Azure DevOps cannot run here: each is stood in by a
local HTTP endpoint (``tests/world/forges.py``) implementing its documented pull-request
calls and recording them, while the branch is pushed to the world's real Git remote at a
path of that forge's shape (``group/sub/project``, ``scm/PROJECT/repo``, ``org/project/_git/repo``).
"""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

import pytest

from lockgate.errors import ExitCode
from tests.integration.forge_support import git
from tests.integration.images_support import LOCKGATE, Run, lockgate, native_config, seed_tags
from tests.world.forges import ForgeStandIn
from tests.world.gitea import Gitea
from tests.world.gitremote import GitRemote
from tests.world.registry import Registry

pytestmark = pytest.mark.world

LABELS = ("--label", "images", "--label", "automated")


def _seed(url: str, registry: Registry, image: str, tmp_path: Path) -> None:
    """A native ImageAutomation and one marked file on main of ``url``."""
    work = tmp_path / "seed"
    git(tmp_path, "clone", "--quiet", url, str(work))
    git(work, "checkout", "--quiet", "-B", "main")
    native_config(work, [f"{{name: app, image: '{registry.host}/{image}', semver: '*'}}"])
    (work / "deploy").mkdir()
    (work / "deploy" / "app.yaml").write_text(
        f'image: {registry.host}/{image}:1.0.0 # {{"$imagepolicy": "apps:app"}}\n'
    )
    git(work, "add", ".")
    git(work, "-c", "user.name=seed", "-c", "user.email=seed@example.com", "commit", "--quiet", "-m", "seed")
    git(work, "push", "--quiet", "origin", "HEAD:refs/heads/main")


def _update(url: str, tmp_path: Path, run: str, *flags: str, env: dict[str, str]) -> Run:
    checkout = tmp_path / run
    git(tmp_path, "clone", "--quiet", "--branch", "main", url, str(checkout))
    return lockgate(
        "images", "update", "--path", str(checkout), "--pr", "--branch", "image-updates", *flags, env=env
    )


def test_gitea_gets_one_pull_request_opened_then_updated_with_its_labels(
    gitea: Gitea, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """The real Gitea: pull request and labels read back from its API."""
    url = gitea.create_repo(unique)
    _seed(url, registry, unique, tmp_path)
    seed_tags(registry.host, unique, ["1.0.0", "1.1.0"])
    env = {"GITEA_TOKEN": gitea.token}
    repo = f"/repos/{gitea.user}/{unique}"

    first = _update(url, tmp_path, "first", "--forge", "gitea", *LABELS, env=env)
    assert first.code == 0, first.err
    [pull] = gitea.call("GET", f"{repo}/pulls", params={"state": "open"})
    assert (pull["head"]["ref"], pull["base"]["ref"]) == ("image-updates", "main")
    assert pull["title"] == "Update from image update automation"
    assert f"{registry.host}/{unique}:1.1.0" in pull["body"]
    assert "Opened and kept up to date by `lockgate images update --pr`." in pull["body"]
    assert sorted(label["name"] for label in pull["labels"]) == ["automated", "images"]
    assert f"pull request #{pull['number']} opened: {pull['html_url']}" in first.out

    seed_tags(registry.host, unique, ["1.2.0"])
    second = _update(url, tmp_path, "second", "--forge", "gitea", *LABELS, env=env)
    assert second.code == 0, second.err
    assert f"pull request #{pull['number']} updated" in second.out
    [again] = gitea.call("GET", f"{repo}/pulls", params={"state": "open"})
    assert again["number"] == pull["number"]
    assert f"{registry.host}/{unique}:1.2.0" in again["body"]
    assert sorted(label["name"] for label in again["labels"]) == ["automated", "images"]
    assert len(gitea.call("GET", f"{repo}/labels")) == 2  # created once, reused

    third = _update(url, tmp_path, "third", "--forge", "gitea", *LABELS, env=env)
    assert third.code == 0, third.err
    assert f"pull request #{pull['number']} unchanged" in third.out
    for run in (first, second, third):
        assert gitea.token not in run.out + run.err


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


#: forge -> (repository path on the git remote, flags, API root path, credential header, env)
CASES: dict[str, tuple[str, tuple[str, ...], str, tuple[str, str], dict[str, str]]] = {
    "gitlab": (
        "acme/platform/app",
        ("--forge", "gitlab"),
        "/api/v4",
        ("PRIVATE-TOKEN", "glpat-mr-token-0123"),
        {"GITLAB_TOKEN": "glpat-mr-token-0123"},
    ),
    "bitbucket": (
        "app",  # the workspace is the test's unique name
        ("--forge", "bitbucket"),
        "/2.0",
        ("Authorization", _basic("bot", "app-pass-0123")),
        {"BITBUCKET_TOKEN": "bot:app-pass-0123"},
    ),
    # told from the remote URL's path: /scm/ and /_git/
    "bitbucketserver": (
        "scm/OPS/app",
        (),
        "/rest/api/latest",
        ("Authorization", "Bearer bbs-token-0123"),
        {"BITBUCKET_TOKEN": "bbs-token-0123"},
    ),
    "azuredevops": (
        "acme/web/_git/app",
        (),
        "/acme",
        ("Authorization", _basic("", "azdo-pat-0123")),
        {"AZURE_DEVOPS_TOKEN": "azdo-pat-0123"},
    ),
}


@pytest.mark.parametrize("forge", sorted(CASES))
def test_one_merge_request_is_opened_then_updated_on_the_stand_in(
    forge: str, git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """GitLab, Bitbucket Cloud/Server and Azure DevOps are stand-ins (tests/world/forges.py)."""
    path, flags, root, auth, env = CASES[forge]
    url = git_remote.create(f"{unique}/{path}")
    _seed(url, registry, unique, tmp_path)
    seed_tags(registry.host, unique, ["1.0.0", "1.1.0"])
    with ForgeStandIn(forge, auth).running() as stand_in:
        env = {**env, "LOCKGATE_FORGE_API_URL": stand_in.url + root}
        first = _update(url, tmp_path, "first", *flags, *LABELS, env=env)
        assert first.code == 0, first.err
        assert "pull request #1 opened" in first.out
        seed_tags(registry.host, unique, ["1.2.0"])
        second = _update(url, tmp_path, "second", *flags, *LABELS, env=env)
        assert second.code == 0, second.err
        assert "pull request #1 updated" in second.out

    assert len(stand_in.pulls) == 1
    pull = stand_in.pulls[1]
    assert all(call.header(auth[0]) == auth[1] for call in stand_in.calls)
    methods = [call.method for call in stand_in.calls]
    image = f"{registry.host}/{unique}"
    if forge == "gitlab":
        project = "/api/v4/projects/" + f"{unique}/acme/platform/app".replace("/", "%2F")
        assert {call.path.split("/merge_requests")[0] for call in stand_in.calls} == {project}
        assert methods == ["GET", "POST", "GET", "PUT"]
        assert (pull["source_branch"], pull["target_branch"]) == ("image-updates", "main")
        assert pull["labels"] == "images,automated"
        body = pull["description"]
    elif forge == "bitbucket":
        assert methods == ["GET", "POST", "GET", "PUT"]
        assert stand_in.calls[0].path == f"/2.0/repositories/{unique}/app/pullrequests"
        assert stand_in.calls[0].query["q"] == 'source.branch.name="image-updates" AND state="OPEN"'
        assert pull["source"] == {"branch": {"name": "image-updates"}}
        assert pull["destination"] == {"branch": {"name": "main"}}
        body = pull["description"]
        assert body.endswith("Labels: images, automated")
    elif forge == "bitbucketserver":
        assert {c.path for c in stand_in.calls} >= {"/rest/api/latest/projects/OPS/repos/app/pull-requests"}
        assert methods == ["GET", "POST", "GET", "PUT"]
        assert (pull["fromRef"], pull["toRef"]) == (
            {"id": "refs/heads/image-updates"},
            {"id": "refs/heads/main"},
        )
        assert pull["version"] == 1  # the PUT carried the version it read
        body = pull["description"]
        assert body.endswith("Labels: images, automated")
    else:
        assert {c.path.split("/pullrequests")[0] for c in stand_in.calls} == {
            "/acme/web/_apis/git/repositories/app"
        }
        assert methods == ["GET", "POST", "GET", "PATCH", "POST", "POST"]
        assert (pull["sourceRefName"], pull["targetRefName"]) == (
            "refs/heads/image-updates",
            "refs/heads/main",
        )
        assert [label["name"] for label in pull["labels"]][:2] == ["images", "automated"]
        body = pull["description"]
    assert pull["title"] == "Update from image update automation"
    assert f"`{image}:1.1.0` -> `{image}:1.2.0`" in body  # the second run's text replaced the first's
    for run in (first, second):
        for secret in (auth[1], *CASES[forge][4].values()):
            assert secret not in run.out + run.err


def test_a_remote_of_no_known_forge_stops_before_committing_naming_forge(
    git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path
) -> None:
    url = git_remote.create(unique)
    _seed(url, registry, unique, tmp_path)
    seed_tags(registry.host, unique, ["1.0.0", "1.1.0"])
    checkout = tmp_path / "a"
    git(tmp_path, "clone", "--quiet", "--branch", "main", url, str(checkout))
    head = git(checkout, "rev-parse", "HEAD")
    # outside any CI: nothing in the environment tells the forge either
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_REPOSITORY", "CI_PROJECT_PATH")}
    proc = subprocess.run(
        [*LOCKGATE, "images", "update", "--path", str(checkout), "--pr", "--branch", "image-updates"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert "cannot tell which forge the remote" in proc.stderr and "pass --forge" in proc.stderr
    assert git(checkout, "rev-parse", "HEAD") == head
    assert not git(checkout, "ls-remote", "origin", "refs/heads/image-updates")


def test_a_token_the_forge_refuses_exits_3_naming_the_forge_and_its_variable_never_the_token(
    git_remote: GitRemote, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """GitLab is a stand-in (tests/world/forges.py) that answers 401 to any other token, as GitLab does."""
    url = git_remote.create(f"{unique}/acme/app")
    _seed(url, registry, unique, tmp_path)
    seed_tags(registry.host, unique, ["1.0.0", "1.1.0"])
    wrong = "glpat-revoked-token-0123"
    with ForgeStandIn("gitlab", ("PRIVATE-TOKEN", "glpat-the-right-one")).running() as gitlab:
        env = {"GITLAB_TOKEN": wrong, "LOCKGATE_FORGE_API_URL": f"{gitlab.url}/api/v4"}
        run = _update(url, tmp_path, "first", "--forge", "gitlab", env=env)
    assert run.code == ExitCode.AUTH, run.err
    assert "gitlab API GET" in run.err and "HTTP 401" in run.err
    assert "check that GITLAB_TOKEN may write pull requests" in run.err
    assert wrong not in run.out + run.err
    assert not gitlab.pulls
