"""The forges lockgate talks to: commit statuses and pull/merge requests, one module per forge.

``remote`` tells the forge and the repository from a URL (pure); ``base`` holds the shared
values and the HTTP client; ``github``, ``gitlab``, ``gitea`` (also Forgejo), ``bitbucket``
(Cloud), ``bitbucketserver`` and ``azuredevops`` each build the documented requests with
Flux notification-controller's provider names. The runner's notifications send the status
requests (``runner.serve.notify``); ``lockgate images update --pr`` keeps one pull request
current (``action.images.pullrequest``). ``api_root`` is the API base a self-hosted forge
is reached at: derived from the repository's URL unless set (``apiURL``). Where a token may
go is ``destination``'s: ``pin`` reads a provider's configuration once, ``target`` decides per
artifact, from that configuration only.
"""

from __future__ import annotations

from types import ModuleType

from lockgate.forge import azuredevops, bitbucket, bitbucketserver, destination, gitea, github, gitlab
from lockgate.forge.base import Client, Credentials, OnePullRequest, Request, Status
from lockgate.forge.destination import Pin
from lockgate.forge.remote import FORGES, ForgeName, Repository

__all__ = ["FORGES", "ForgeName", "api_root", "module", "pin", "pull_requests", "status_request"]

_MODULES: dict[ForgeName, ModuleType] = {
    "github": github,
    "gitlab": gitlab,
    "gitea": gitea,
    "bitbucket": bitbucket,
    "bitbucketserver": bitbucketserver,
    "azuredevops": azuredevops,
}


def module(forge: ForgeName) -> ModuleType:
    return _MODULES[forge]


def api_root(repository: Repository, api_url: str | None = None) -> str:
    root = api_url or module(repository.forge).api_root(repository)
    return str(root).rstrip("/")


def pin(forge: ForgeName, *, address: str | None, api_url: str | None) -> Pin:
    """Where a provider's token may go, from its ``address`` and ``apiURL`` only
    (``destination.pin``; ``destination.PinError`` when it may go nowhere)."""
    return destination.pin(forge, address=address, api_url=api_url, derive=api_root)


def status_request(
    repository: Repository, sha: str, status: Status, credentials: Credentials, *, api_url: str | None = None
) -> Request:
    """The one POST that sets ``status`` on ``sha``, with the credential's header."""
    forge = module(repository.forge)
    request: Request = forge.status_request(repository, sha, status, root=api_root(repository, api_url))
    return Request(
        request.method, request.url, request.body, {**forge.headers(credentials), **request.headers}
    )


def pull_requests(
    repository: Repository,
    credentials: Credentials,
    *,
    api_url: str | None = None,
    ca: bytes | None = None,
) -> OnePullRequest:
    """The forge's ``PullRequests`` for one repository."""
    forge = module(repository.forge)
    client = Client(
        repository.forge, repository, api_root(repository, api_url), forge.headers(credentials), ca=ca
    )
    proposer: OnePullRequest = forge.PullRequests(client)
    return proposer
