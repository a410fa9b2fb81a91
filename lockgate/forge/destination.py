"""Where a forge token may go: the provider's own configuration decides, the artifact only picks the commit.

Pure. A commit status carries the platform's token; the artifact it reports on is written by
whoever signs it (a tenant). So, as in Flux (the Provider's ``address`` names the host and
the repository; the event brings only the commit), the host a token is sent to comes from
the provider's configuration alone (``Pin``, made once when the configuration is loaded):

- ``address``: the repository's URL (Flux's field). Host and repository are pinned: the
  status goes to that repository, and an artifact whose source annotation names another
  repository (or another host) is refused;
- ``apiURL`` alone: the host is pinned, the repository is the annotation's, which must be
  on the same host (``api.github.com`` serves ``github.com``, ``api.bitbucket.org`` serves
  ``bitbucket.org``);
- neither: github and bitbucket (Cloud) have one public API each, so their host is known;
  gitlab, gitea, bitbucketserver and azuredevops may be anywhere, so nothing is sent and
  the refusal says what to add.

A token never travels over plain http except to loopback: a configured ``http://`` address
or ``apiURL`` beyond loopback is refused at load (``PinError``). ``target`` then decides per
artifact: a ``Target`` (repository, commit, API root), a ``Refused`` (why, for the Event and
the log) or None (the annotations name no commit: nothing to report).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from lockgate.forge import remote
from lockgate.forge.remote import ForgeName, Repository

#: the forges with one public API, used when the provider names no host
PUBLIC_API: dict[ForgeName, str] = {
    "github": "https://api.github.com",
    "bitbucket": "https://api.bitbucket.org/2.0",
}
#: an API host -> the host its repositories' URLs name
_SERVES = {"api.github.com": "github.com", "api.bitbucket.org": "bitbucket.org"}


class PinError(ValueError):
    """A provider's ``address`` or ``apiURL`` cannot be where a token goes (the message says why)."""


@dataclass(frozen=True)
class Pin:
    """What a provider's own configuration names: the forge, its repository (``address``)
    and its API root (``apiURL``, else derived from ``address``, else the public API)."""

    forge: ForgeName
    repository: Repository | None = None
    api_root: str | None = None
    #: the configuration field that named the host, for messages: "address", "apiURL", ""
    named_by: str = ""

    @property
    def host(self) -> str:
        """The host a source annotation must name (``github.com`` for ``api.github.com``)."""
        if self.repository is not None:
            return _hostname(self.repository.base_url)
        host = _hostname(self.api_root or "")
        return _SERVES.get(host, host)


@dataclass(frozen=True)
class Target:
    repository: Repository
    sha: str
    api_root: str

    def __str__(self) -> str:
        return f"{self.repository}@{self.sha[:12]}"


@dataclass(frozen=True)
class Refused:
    """No request: ``reason`` says why and what to set (for the Event and the log)."""

    reason: str


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _hostname(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def _plain_http(url: str, field: str) -> None:
    parts = urlsplit(url)
    if parts.scheme.lower() == "http" and not is_loopback((parts.hostname or "").lower()):
        raise PinError(
            f"{field}: {url} is plain http: the forge token would cross the network readable by "
            "anyone on the way; use https (plain http is allowed to loopback only)"
        )


def pin(
    forge: ForgeName, *, address: str | None, api_url: str | None, derive: Callable[[Repository], str]
) -> Pin:
    """The provider's ``Pin`` (``derive``: the forge's API root of a repository, for an
    ``address`` without ``apiURL``); ``PinError`` for an address that is no repository of
    ``forge`` or a plain-http host beyond loopback."""
    repository = None
    if address:
        try:
            repository = remote.repository(address, forge)
        except remote.NotARepository as exc:
            raise PinError(
                f"address: {exc} (the repository the statuses go to, as Flux's Provider)"
            ) from None
        if not address.startswith(("http://", "https://")):
            raise PinError(f"address: {address!r} is not an http(s) URL; give the repository's HTTPS URL")
        _plain_http(address, "address")
    if api_url:
        _plain_http(api_url, "apiURL")
    if api_url:
        return Pin(forge, repository, api_url.rstrip("/"), "apiURL" if repository is None else "address")
    if repository is not None:
        return Pin(forge, repository, derive(repository).rstrip("/"), "address")
    public = PUBLIC_API.get(forge)
    return Pin(forge, None, public, "")


def _same_repository(a: Repository, b: Repository) -> bool:
    """The same repository whatever the URL form (https, ssh, scp-like; ports and case aside).

    A GitLab project pinned by its numeric ID cannot be compared with a path without asking
    GitLab: the host is compared, and the status goes to the pinned project whatever the
    annotation says."""

    def key(r: Repository) -> tuple[str, str, str, str]:
        parts = urlsplit(r.base_url)
        return (
            (parts.hostname or "").lower(),
            parts.path.lower().rstrip("/"),
            r.owner.lower(),
            r.name.lower(),
        )

    if a.by_id or b.by_id:
        return key(a)[:2] == key(b)[:2]
    return key(a) == key(b)


def _shown(repository: Repository) -> str:
    """``host[:port][/sub/path]/owner/name``: no scheme, no userinfo (``remote`` drops it)."""
    parts = urlsplit(repository.base_url)
    return f"{parts.netloc}{parts.path.rstrip('/')}/{repository.slug}"


def target(pinned: Pin, source_url: str, revision: str) -> Target | Refused | None:
    """Where the status of the artifact with these ``source``/``revision`` annotations goes."""
    sha = remote.revision_sha(revision)
    if sha is None:
        return None
    named: Repository | None = None
    unreadable = False
    if source_url.strip():
        try:
            named = remote.repository(source_url, pinned.forge)
        except remote.NotARepository:
            unreadable = True
    if pinned.repository is not None:
        if unreadable or (named is not None and not _same_repository(named, pinned.repository)):
            what = _shown(named) if named is not None else f"no {pinned.forge} repository"
            return Refused(
                f"the artifact's org.opencontainers.image.source names {what}; this provider sends "
                f"its token only for {_shown(pinned.repository)} (its address)"
            )
        return _checked(Target(pinned.repository, sha, pinned.api_root or ""))
    if named is None:
        return None
    if pinned.api_root is None:
        return Refused(
            f"the artifact's org.opencontainers.image.source names {_shown(named)}, and this "
            f"{pinned.forge} provider names no host of its own, and a token never goes where an "
            "artifact says: set address to the repository this provider reports on (its URL, as "
            "Flux's Provider) or apiURL to its forge's API base"
        )
    if _hostname(named.base_url) != pinned.host:
        configured = f"its {pinned.named_by}" if pinned.named_by else f"{pinned.forge}'s public API"
        return Refused(
            f"the artifact's org.opencontainers.image.source names {_shown(named)}; this provider "
            f"sends its token only to {pinned.host} ({configured}); set address to the repository "
            "this provider reports on, or use another provider for that host"
        )
    return _checked(Target(named, sha, pinned.api_root))


def _checked(found: Target) -> Target | Refused:
    parts = urlsplit(found.api_root)
    if parts.scheme.lower() != "https" and not is_loopback((parts.hostname or "").lower()):
        return Refused(f"{found.api_root} is not https: a token goes over plain http to loopback only")
    return found
