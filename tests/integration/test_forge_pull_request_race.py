"""Two image-update runs racing to open the one pull request: the loser keeps the winner's.

Between one run's list of open pull requests and its create, another run opens the pull
request; the forge then refuses the second create (409 on Gitea, GitLab, Bitbucket Server
and Azure DevOps, 422 on GitHub), and ``ensure`` must find the winner's pull request and
update it rather than fail or open a second one. The race's timing is made by letting the
loser's first list see nothing; the forge's answers are its own. Gitea is the real one
(``tests/world/gitea.py``); GitHub, GitLab, Bitbucket Server and Azure DevOps cannot run
here and are stood in by local HTTP endpoints implementing their documented calls,
duplicate refusal included (``tests/world/forges.py``, ``images_support.GitHubStandIn``).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from lockgate.forge import pull_requests
from lockgate.forge.base import Action, Credentials, OnePullRequest, Proposal, Proposer
from lockgate.forge.remote import repository
from tests.integration.forge_support import git
from tests.integration.images_support import GitHubStandIn
from tests.world.forges import ForgeStandIn
from tests.world.gitea import Gitea

pytestmark = pytest.mark.world

FIRST = Proposal("image-updates", "main", "Update from image update automation", "first run", ("images",))
SECOND = Proposal("image-updates", "main", "Update from image update automation", "second run", ("images",))


def _losing_the_race(proposer: Proposer, monkeypatch: pytest.MonkeyPatch) -> list[Proposal]:
    """``proposer``'s first list of open pull requests sees none: the winner opened its
    pull request just after it. The lists it makes after that reach the forge."""
    assert isinstance(proposer, OnePullRequest)
    listed = proposer.find_open
    seen: list[Proposal] = []

    def find_open(proposal: Proposal) -> dict[str, Any] | None:
        seen.append(proposal)
        return None if len(seen) == 1 else listed(proposal)

    monkeypatch.setattr(proposer, "find_open", find_open)
    return seen


def test_the_loser_of_the_race_updates_the_pull_request_gitea_opened_for_the_winner(
    gitea: Gitea, unique: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = gitea.create_repo(unique)
    work = tmp_path / "work"
    git(tmp_path, "clone", "--quiet", url, str(work))
    ident = ("-c", "user.name=bot", "-c", "user.email=bot@example.com")
    git(work, "checkout", "--quiet", "-B", "main")
    (work / "app.yaml").write_text("image: app:1.0.0\n")
    git(work, "add", ".")
    git(work, *ident, "commit", "--quiet", "-m", "seed")
    git(work, "push", "--quiet", "origin", "main")
    git(work, "checkout", "--quiet", "-b", "image-updates")
    (work / "app.yaml").write_text("image: app:1.1.0\n")
    git(work, *ident, "commit", "--quiet", "-am", "update")
    git(work, "push", "--quiet", "origin", "image-updates")
    repo = repository(gitea.clone_url(unique, with_token=False), "gitea")
    token = Credentials(token=gitea.token)

    winner = pull_requests(repo, token).ensure(FIRST, refresh=True)
    loser = pull_requests(repo, token)
    seen = _losing_the_race(loser, monkeypatch)
    kept = loser.ensure(SECOND, refresh=True)

    assert winner.action is Action.OPENED
    assert (kept.number, kept.url, kept.action) == (winner.number, winner.url, Action.UPDATED)
    assert len(seen) == 2  # listed again after Gitea refused the second create
    [pull] = gitea.call("GET", f"/repos/{gitea.user}/{unique}/pulls", params={"state": "open"})
    assert (pull["number"], pull["body"]) == (winner.number, "second run")
    assert [label["name"] for label in pull["labels"]] == ["images"]


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


#: forge -> (the repository's remote URL, the API root's path on the stand-in, credential header, token)
STAND_INS: dict[str, tuple[str, str, tuple[str, str], str]] = {
    "gitlab": (
        "https://gitlab.example.com/acme/platform/app.git",
        "/api/v4",
        ("PRIVATE-TOKEN", "glpat-race-token-0123"),
        "glpat-race-token-0123",
    ),
    "bitbucketserver": (
        "https://bitbucket.example.com/scm/OPS/app.git",
        "/rest/api/latest",
        ("Authorization", "Bearer bbs-race-token-0123"),
        "bbs-race-token-0123",
    ),
    "azuredevops": (
        "https://dev.azure.com/acme/web/_git/app",
        "/acme",
        ("Authorization", _basic("", "azdo-race-pat-0123")),
        "azdo-race-pat-0123",
    ),
}


@pytest.mark.parametrize("forge", sorted(STAND_INS))
def test_the_loser_of_the_race_updates_the_winners_merge_request_on_the_stand_in(
    forge: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GitLab, Bitbucket Server and Azure DevOps are stand-ins (tests/world/forges.py)."""
    remote, root, auth, token = STAND_INS[forge]
    repo = repository(remote, forge)  # type: ignore[arg-type]
    with ForgeStandIn(forge, auth).running() as stand_in:
        api = stand_in.url + root
        winner = pull_requests(repo, Credentials(token=token), api_url=api).ensure(FIRST, refresh=True)
        before = len(stand_in.calls)
        loser = pull_requests(repo, Credentials(token=token), api_url=api)
        _losing_the_race(loser, monkeypatch)
        kept = loser.ensure(SECOND, refresh=True)

    assert winner.action is Action.OPENED
    assert (kept.number, kept.action) == (winner.number, Action.UPDATED)
    assert len(stand_in.pulls) == 1
    answers = [(call.method, call.path.rsplit("/", 1)[-1]) for call in stand_in.calls[before:]]
    assert answers[0][0] == "POST"  # refused: the winner's is open
    assert answers[1][0] == "GET"  # found again
    assert answers[2][0] in ("PUT", "PATCH")
    assert str(stand_in.pulls[winner.number]["description"]).startswith("second run")


def test_the_loser_of_the_race_updates_the_winners_pull_request_on_the_github_stand_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GitHub is a stand-in (images_support.GitHubStandIn) that answers 422 to a second pull request."""
    repo = repository("https://github.com/acme/app.git", "github")
    unlabelled = [Proposal(p.branch, p.base, p.title, p.body) for p in (FIRST, SECOND)]
    with GitHubStandIn().running() as stand_in:
        winner = pull_requests(repo, Credentials(token="ghs-race"), api_url=stand_in.url).ensure(
            unlabelled[0], refresh=True
        )
        loser = pull_requests(repo, Credentials(token="ghs-race"), api_url=stand_in.url)
        _losing_the_race(loser, monkeypatch)
        kept = loser.ensure(unlabelled[1], refresh=True)

    assert (kept.number, kept.action) == (winner.number, Action.UPDATED)
    assert [(call["method"], call["path"]) for call in stand_in.calls[-3:]] == [
        ("POST", "/repos/acme/app/pulls"),
        ("GET", "/repos/acme/app/pulls"),
        ("PATCH", f"/repos/acme/app/pulls/{winner.number}"),
    ]
    assert len(stand_in.pulls) == 1
    assert stand_in.pulls[winner.number]["body"] == "second run"
