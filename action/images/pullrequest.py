"""``--pr``: open or update one pull/merge request per update branch (IAC #524), on any forge.

This module picks the forge and the repository from the job's environment and the remote
URL; ``lockgate.forge`` makes the calls (GitHub, GitLab, Gitea/Forgejo, Bitbucket Cloud and
Server, Azure DevOps). After the update branch is pushed, the forge's ``ensure`` looks for
the open request from that branch; it updates its title, body and labels when a new commit
was pushed, or opens one. So a scheduled job keeps exactly one request current instead of
opening one per run.

The forge: ``--forge``, else the remote URL's host or path (``lockgate.forge.remote``), else
the CI the job runs in (``GITHUB_REPOSITORY``: GitHub Actions; ``CI_PROJECT_PATH``: GitLab
CI). The repository: ``GITHUB_REPOSITORY`` or ``CI_SERVER_URL`` + ``CI_PROJECT_PATH`` when
set, else the remote URL. The API: ``LOCKGATE_FORGE_API_URL``, ``GITHUB_API_URL`` (GitHub
Enterprise) or ``CI_API_V4_URL`` (GitLab CI), else derived from the repository's host. The
token: ``LOCKGATE_FORGE_TOKEN`` or the forge's own variable (``forge.base.TOKEN_HINT``); it
is sent only in a header and never appears in a message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from lockgate import forge
from lockgate.errors import UsageError
from lockgate.forge import remote
from lockgate.forge.base import Action, Credentials, OnePullRequest, Proposal, PullRequest, PullRequestError
from lockgate.redact import scrub

__all__ = ["Action", "Proposal", "PullRequest", "PullRequestError", "Target", "from_environment", "target"]

#: the variables each forge's token may come from, first set wins (after LOCKGATE_FORGE_TOKEN)
TOKEN_VARIABLES: dict[remote.ForgeName, tuple[str, ...]] = {
    "github": ("GITHUB_TOKEN",),
    "gitlab": ("GITLAB_TOKEN",),
    "gitea": ("GITEA_TOKEN", "FORGEJO_TOKEN"),
    "bitbucket": ("BITBUCKET_TOKEN",),
    "bitbucketserver": ("BITBUCKET_TOKEN",),
    "azuredevops": ("AZURE_DEVOPS_TOKEN", "SYSTEM_ACCESSTOKEN"),
}
_HOW = {
    "github": "(a token allowed to write pull requests and contents); in GitHub Actions pass "
    "`env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}`",
    "gitlab": "(a project or personal access token with the api scope, as a masked CI/CD variable)",
    "gitea": "(a token with the write:repository scope)",
    "bitbucket": "(user:app-password, or a repository access token, allowed to write pull requests)",
    "bitbucketserver": "(an HTTP access token with Repository write permission)",
    "azuredevops": "(a personal access token with Code (Read & Write); in Azure Pipelines "
    "pass `env: SYSTEM_ACCESSTOKEN: $(System.AccessToken)`)",
}


@dataclass(frozen=True)
class Target:
    repository: remote.Repository
    api_url: str | None


def _forge_of(env: Mapping[str, str], remote_url: str, chosen: str | None) -> remote.ForgeName:
    if chosen:
        try:
            return remote.forge_name(chosen)
        except ValueError as exc:
            raise UsageError(f"--forge: {exc}") from None
    found = remote.detect(remote_url)
    if found is not None:
        return found
    if _slug(env.get("GITHUB_REPOSITORY", "")):
        return "github"
    if env.get("CI_PROJECT_PATH"):
        return "gitlab"
    raise UsageError(
        f"--pr: cannot tell which forge the remote {scrub(remote_url)!r} is on (its host is none of "
        "github.com, gitlab.com, bitbucket.org, dev.azure.com); pass --forge "
        f"({', '.join(remote.FORGES)}), e.g. --forge gitlab for a self-hosted GitLab"
    )


def _slug(value: str) -> str:
    return value if value.count("/") == 1 and all(value.split("/")) else ""


def target(env: Mapping[str, str], remote_url: str, chosen: str | None = None) -> Target:
    """The repository ``--pr`` writes to and the API it is reached at."""
    name = _forge_of(env, remote_url, chosen)
    api_url = env.get("LOCKGATE_FORGE_API_URL") or None
    slug = _slug(env.get("GITHUB_REPOSITORY", "")) if name == "github" else ""
    if name == "github":
        api_url = api_url or env.get("GITHUB_API_URL") or None
    if name == "gitlab":
        api_url = api_url or env.get("CI_API_V4_URL") or None
    try:
        if slug:
            owner, repo = slug.split("/")
            return Target(remote.Repository("github", "https://github.com", owner, repo), api_url)
        if name == "gitlab" and env.get("CI_PROJECT_PATH") and env.get("CI_SERVER_URL"):
            url = f"{env['CI_SERVER_URL'].rstrip('/')}/{env['CI_PROJECT_PATH']}"
            return Target(remote.repository(url, "gitlab"), api_url)
        return Target(remote.repository(remote_url, name), api_url)
    except remote.NotARepository as exc:
        hint = "; set GITHUB_REPOSITORY=owner/name" if name == "github" else ""
        raise UsageError(f"--pr: cannot tell the {name} repository: {scrub(str(exc))}{hint}") from None


def from_environment(
    env: Mapping[str, str] | None = None, *, remote_url: str = "", chosen: str | None = None
) -> OnePullRequest:
    """The forge's pull requests for the repository of ``remote_url``, with the job's token."""
    env = os.environ if env is None else env
    name = _forge_of(env, remote_url, chosen)
    variables = ("LOCKGATE_FORGE_TOKEN", *TOKEN_VARIABLES[name])
    token = next((env[v] for v in variables if env.get(v)), "")
    if not token:
        raise UsageError(
            f"--pr needs {TOKEN_VARIABLES[name][0]} {_HOW[name]} (or LOCKGATE_FORGE_TOKEN) to write "
            f"the {name} pull request"
        )
    where = target(env, remote_url, chosen)
    return forge.pull_requests(where.repository, Credentials(token=token), api_url=where.api_url)
