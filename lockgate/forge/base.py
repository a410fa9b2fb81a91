"""What every forge module shares: a commit status, credentials, a pull request, one HTTP client.

A forge module (``github``, ``gitlab``, ``gitea``, ``bitbucket``, ``bitbucketserver``,
``azuredevops``) turns a ``Status`` into one documented REST request (pure: the runner's
notification queue sends it) and keeps one pull/merge request current as a
``OnePullRequest`` (find, open, rewrite; a lost race to open it is recovered here, once for
all forges) through ``Client``, the only place a forge's answer is read: streamed and capped
(``lockgate.replies``), its JSON within the parsing bounds. ``Client`` sends the credential
only in a header, trusts an extra CA when given one (in memory, through ``lockgate.tls``),
and its errors name the forge, the call, the endpoint and the HTTP status, never the token.
"""

from __future__ import annotations

import base64
import ssl
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

import requests

from lockgate import __version__, boundedjson, replies, tls
from lockgate.errors import AuthError, LockgateError, ReplyTooLarge, UsageError
from lockgate.forge.remote import ForgeName, Repository

State = Literal["pending", "success", "failure"]
USER_AGENT = f"lockgate/{__version__}"


@dataclass(frozen=True)
class Status:
    """A commit status as lockgate decides it; each forge maps ``state`` to its own words."""

    state: State
    description: str
    context: str
    target_url: str | None = None


@dataclass(frozen=True)
class Credentials:
    """A Secret's ``token`` (or Bitbucket Server's ``username`` + ``password``)."""

    token: str = ""
    username: str = ""
    password: str = ""

    def __repr__(self) -> str:
        return "Credentials(<redacted>)"

    def basic(self) -> str:
        """``Basic base64(user:password)``; a token ``user:app-password`` (Bitbucket) splits at ':'."""
        pair = f"{self.username}:{self.password}" if self.password else self.token
        user, _, password = pair.partition(":")
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@dataclass(frozen=True)
class Request:
    """One REST call, built without I/O: what the notification queue sends."""

    method: str
    url: str
    body: dict[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)


class PullRequestError(LockgateError):
    """The forge refused or failed a pull-request call; the pushed branch is kept."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class Action(Enum):
    """What ``ensure`` did to the pull request; the values are the report's words."""

    OPENED = "opened"
    UPDATED = "updated"  #: a new commit was pushed: title, body and labels rewritten
    UNCHANGED = "unchanged"  #: nothing new was pushed: left as it was


@dataclass(frozen=True)
class PullRequest:
    number: int
    url: str
    action: Action


@dataclass(frozen=True)
class Proposal:
    """The one pull request ``ensure`` keeps current: from ``branch`` into ``base``."""

    branch: str
    base: str
    title: str
    body: str
    labels: tuple[str, ...] = ()


class OnePullRequest(ABC):
    """How every forge keeps one pull request per branch: find the open one, else open it,
    then rewrite its text only when ``refresh`` (a new commit was pushed).

    Two runs may race to open it: the loser's forge answers one of ``conflict`` (409 on
    most forges, 422 on GitHub), and the one the winner opened is found again and kept.
    Each forge module says only how to find, open, name and rewrite one.
    """

    #: the HTTP statuses a forge answers when a pull request for the branch already exists
    conflict: tuple[int, ...] = (409,)

    def __init__(self, client: Client) -> None:
        self.client = client

    @abstractmethod
    def find_open(self, proposal: Proposal) -> dict[str, Any] | None:
        """The open pull request from ``proposal.branch`` into ``proposal.base``, if any."""

    @abstractmethod
    def create(self, proposal: Proposal) -> dict[str, Any]:
        """Open one (labels included) and return it as the forge answered; a refusal raises
        ``PullRequestError`` with the forge's status."""

    @abstractmethod
    def identify(self, pull: dict[str, Any]) -> tuple[int, str]:
        """The number and web URL of a pull request as ``find_open`` or ``create`` returned it."""

    @abstractmethod
    def rewrite(self, number: int, pull: dict[str, Any], proposal: Proposal) -> None:
        """Set the title, body and labels of an open pull request to ``proposal``'s."""

    def ensure(self, proposal: Proposal, *, refresh: bool) -> PullRequest:
        existing = self.find_open(proposal)
        if existing is None:
            try:
                return PullRequest(*self.identify(self.create(proposal)), Action.OPENED)
            except PullRequestError as exc:
                existing = self.find_open(proposal) if exc.status in self.conflict else None
                if existing is None:
                    raise
        number, url = self.identify(existing)
        if not refresh:
            return PullRequest(number, url, Action.UNCHANGED)
        self.rewrite(number, existing, proposal)
        return PullRequest(number, url, Action.UPDATED)


#: how each forge names its token in messages (the environment variable ``--pr`` reads)
TOKEN_HINT: dict[ForgeName, str] = {
    "github": "GITHUB_TOKEN",
    "gitlab": "GITLAB_TOKEN",
    "gitea": "GITEA_TOKEN",
    "bitbucket": "BITBUCKET_TOKEN",
    "bitbucketserver": "BITBUCKET_TOKEN",
    "azuredevops": "AZURE_DEVOPS_TOKEN",
}


class Client:
    """JSON calls to one forge's API root with the credential in ``headers``."""

    def __init__(
        self,
        forge: ForgeName,
        repository: Repository,
        api_root: str,
        headers: Mapping[str, str],
        *,
        ca: bytes | None = None,
    ) -> None:
        self.forge, self.repository, self.api_root = forge, repository, api_root.rstrip("/")
        self.session = session_trusting(ca)
        self.session.headers.update({"User-Agent": USER_AGENT, "Accept": "application/json", **headers})

    def call(
        self,
        method: str,
        path: str,
        *,
        ok: tuple[int, ...] = (200,),
        json: Any = None,
        params: Mapping[str, str] | None = None,
    ) -> Any:
        url = f"{self.api_root}{path}"
        what = f"{self.forge} API {method} {path}"
        status = 0
        try:
            response = self.session.request(
                method, url, json=json, params=params, timeout=30, allow_redirects=False, stream=True
            )
            status = response.status_code
            content = replies.read(response)
        except ReplyTooLarge as exc:
            if status in ok:
                raise PullRequestError(f"{what}: {exc.message}", status=status) from None
            content = b""  # an error's body too large to read: its status says enough
        except requests.RequestException as exc:
            reason = type(exc).__name__
            raise PullRequestError(
                f"cannot reach the {self.forge} API at {self.api_root}: {reason}"
            ) from None
        if status in ok:
            try:
                return _json(content, what) if content else {}
            except ValueError:
                raise PullRequestError(
                    f"{what} answered HTTP {status} without JSON (is {self.api_root} the API base?)",
                    status=status,
                ) from None
        detail = _detail(content, what)
        what += f" answered HTTP {status}"
        what += f": {detail}" if detail else ""
        if status in (401, 403):
            raise AuthError(
                f"{what}; check that {TOKEN_HINT[self.forge]} may write pull requests in {self.repository}"
            )
        raise PullRequestError(what, status=status)


def _json(content: bytes, what: str) -> Any:
    """A forge's JSON answer within the parsing bounds (depth); malformed is a ``ValueError``."""
    try:
        return boundedjson.json_value(content, what, max_bytes=replies.MAX_REPLY_BYTES)
    except boundedjson.LimitExceeded as exc:
        raise ValueError(exc.message) from None


def _detail(content: bytes, what: str) -> str:
    try:
        data = _json(content, what)
    except ValueError:
        return ""
    if isinstance(data, dict):
        for key in ("message", "error", "errors"):
            value = data.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if value:
                return str(value)[:300]
    return ""


def session_trusting(ca: bytes | None) -> requests.Session:
    """A session trusting the system's roots plus ``ca`` (Flux adds ``ca.crt`` to the system
    pool), the CA held in memory: one ``ssl.SSLContext`` through ``lockgate.tls.TLSAdapter``.
    Every reply it reads is capped (``lockgate.replies``)."""
    session = replies.session()
    if ca:
        try:
            context = ssl.create_default_context(cadata=ca.decode("ascii"))
        except (ssl.SSLError, UnicodeDecodeError, ValueError):
            raise UsageError("certSecretRef: the ca.crt entry is not a PEM CA certificate") from None
        session.mount("https://", tls.TLSAdapter(context))
    return session
