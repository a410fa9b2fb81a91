"""Which forge a Git URL belongs to, which repository it names, and the commit of a revision.

Pure functions, no I/O: ``detect`` tells the forge from a remote URL's host (github.com,
gitlab.com, bitbucket.org, dev.azure.com and ``*.visualstudio.com``, codeberg.org) or its
path (``/_git/`` is Azure DevOps, ``/scm/`` Bitbucket Server); a self-hosted GitLab or Gitea
has neither, so ``--forge`` (or a provider's ``type``) names it. ``repository`` reads each
forge's URL forms (HTTPS, ``ssh://``, scp-like ``git@host:path``, ``git://``) into the parts
its REST API addresses: owner and name (GitLab: the group path, nested groups included, or
a project's numeric ID alone, as Flux's Provider address may give it;
Bitbucket Server: the project key; Azure DevOps: the project, the organisation being part
of ``base_url``). ``commit`` parses Flux's revision formats (``main@sha1:<sha>``,
``sha1:<sha>``, the older ``main/<sha>``, a bare SHA) as ``source``/``revision``
annotations carry them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, get_args
from urllib.parse import urlsplit

ForgeName = Literal["github", "gitlab", "gitea", "bitbucket", "bitbucketserver", "azuredevops"]
FORGES: tuple[ForgeName, ...] = get_args(ForgeName)

_SCP = re.compile(r"^(?P<user>[^@/:]+@)?(?P<host>[^/:]+):(?P<path>(?!//).+)$")
_SHA = re.compile(r"(?:^|[@/:])(?:sha1:|sha256:)?(?P<sha>[0-9a-f]{40}|[0-9a-f]{64})$")
_HOSTS: dict[str, ForgeName] = {
    "github.com": "github",
    "gitlab.com": "gitlab",
    "bitbucket.org": "bitbucket",
    "dev.azure.com": "azuredevops",
    "ssh.dev.azure.com": "azuredevops",
    "codeberg.org": "gitea",
}


class NotARepository(ValueError):
    """The URL does not have the shape of a repository on that forge (the message says why)."""


@dataclass(frozen=True)
class Repository:
    forge: ForgeName
    #: the web root: ``scheme://host[:port][/sub/path]`` (Azure DevOps: with the organisation)
    base_url: str
    owner: str
    name: str

    @property
    def slug(self) -> str:
        return f"{self.owner}/{self.name}" if self.owner else self.name

    @property
    def by_id(self) -> bool:
        """A GitLab project named by its numeric ID (``https://gitlab.com/1234``), not its path."""
        return self.forge == "gitlab" and not self.owner and self.name.isdigit()

    def __str__(self) -> str:
        return self.slug


@dataclass(frozen=True)
class Commit:
    repository: Repository
    sha: str

    def __str__(self) -> str:
        return f"{self.repository}@{self.sha[:12]}"


def forge_name(value: str) -> ForgeName:
    for name in FORGES:
        if value == name:
            return name
    raise ValueError(f"unknown forge {value!r}; one of {', '.join(FORGES)}")


def _split(url: str) -> tuple[str, str, list[str]]:
    """``(scheme, host[:port], path segments)``; ssh and scp-like URLs become https."""
    url = url.strip()
    scp = _SCP.match(url) if "://" not in url else None
    if scp is not None:
        scheme, netloc, path = "https", scp["host"], scp["path"]
    else:
        parts = urlsplit(url)
        if not parts.hostname:
            raise NotARepository(f"{url!r} is not a URL with a host")
        scheme = parts.scheme if parts.scheme in ("http", "https") else "https"
        # an ssh or git port is not the web server's
        port = f":{parts.port}" if parts.port and parts.scheme in ("http", "https") else ""
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname  # IPv6
        netloc, path = host + port, parts.path
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    return scheme, netloc.lower(), [s for s in path.split("/") if s]


def detect(url: str) -> ForgeName | None:
    """The forge a remote URL names by its host or path, or None (a self-hosted GitLab or Gitea)."""
    try:
        _, netloc, segments = _split(url)
    except NotARepository:
        return None
    host = netloc.split(":", 1)[0]
    if host in _HOSTS:
        return _HOSTS[host]
    if host.endswith(".visualstudio.com") or "_git" in segments:
        return "azuredevops"
    if "scm" in segments[:-2]:
        return "bitbucketserver"
    return None


def repository(url: str, forge: ForgeName) -> Repository:
    """The repository ``url`` names on ``forge``; ``NotARepository`` says what shape was expected."""
    scheme, netloc, segments = _split(url)
    root = f"{scheme}://{netloc}"
    if forge == "gitlab":
        if "-" in segments:  # a browser URL: group/project/-/tree/main
            segments = segments[: segments.index("-")]
        if len(segments) == 1 and segments[0].isdigit():  # a project ID, as Flux's address allows
            return Repository(forge, root, "", segments[0])
        if len(segments) < 2:
            raise NotARepository(f"{url!r}: a GitLab project URL is https://HOST/GROUP[/SUBGROUP...]/PROJECT")
        return Repository(forge, root, "/".join(segments[:-1]), segments[-1])
    if forge == "bitbucketserver":
        return _bitbucket_server(url, root, netloc, segments)
    if forge == "azuredevops":
        return _azure_devops(url, netloc, segments)
    if len(segments) < 2:
        raise NotARepository(f"{url!r}: a {forge} repository URL is https://HOST/OWNER/REPO")
    if forge == "gitea":  # Gitea may be served under a sub-path: https://host/git/owner/repo
        return Repository(forge, "/".join([root, *segments[:-2]]), segments[-2], segments[-1])
    if len(segments) != 2:
        raise NotARepository(f"{url!r}: a {forge} repository URL is https://HOST/OWNER/REPO")
    return Repository(forge, root, segments[0], segments[1])


def _bitbucket_server(url: str, root: str, netloc: str, segments: list[str]) -> Repository:
    # https://host[/context]/scm/PROJECT/repo.git (clone), .../projects/P/repos/r/browse (web),
    # ssh://git@host:7999/project/repo.git (the web server then is https://host)
    if "scm" in segments:
        at = len(segments) - 1 - segments[::-1].index("scm")
        rest = segments[at + 1 :]
        if len(rest) == 2:
            return Repository("bitbucketserver", "/".join([root, *segments[:at]]), rest[0], rest[1])
    if "projects" in segments and "repos" in segments:
        at = segments.index("projects")
        rest = segments[at + 1 :]
        if len(rest) >= 3 and rest[1] == "repos":
            return Repository("bitbucketserver", "/".join([root, *segments[:at]]), rest[0], rest[2])
    if len(segments) == 2 and not url.startswith(("http://", "https://")):
        host = netloc.split(":", 1)[0]
        return Repository("bitbucketserver", f"https://{host}", segments[0], segments[1])
    raise NotARepository(
        f"{url!r}: a Bitbucket Server repository URL is https://HOST[/CONTEXT]/scm/PROJECT/REPO.git"
    )


def _azure_devops(url: str, netloc: str, segments: list[str]) -> Repository:
    host = netloc.split(":", 1)[0]
    if host == "ssh.dev.azure.com" and len(segments) == 4 and segments[0] == "v3":
        # git@ssh.dev.azure.com:v3/ORG/PROJECT/REPO
        return Repository("azuredevops", f"https://dev.azure.com/{segments[1]}", segments[2], segments[3])
    if "_git" in segments:
        at = segments.index("_git")
        if at >= 1 and len(segments) == at + 2:
            scheme = "http" if url.startswith("http://") else "https"
            base = "/".join([f"{scheme}://{netloc}", *segments[: at - 1]])
            if host == "dev.azure.com" and at < 2:
                raise NotARepository(
                    f"{url!r}: no organisation; an Azure DevOps repository URL is https://dev.azure.com/ORG/PROJECT/_git/REPO"
                )
            return Repository("azuredevops", base, segments[at - 1], segments[at + 1])
    raise NotARepository(
        f"{url!r}: an Azure DevOps repository URL is https://dev.azure.com/ORG/PROJECT/_git/REPO"
    )


def revision_sha(revision: str) -> str | None:
    """The commit SHA of a Flux revision (``main@sha1:<sha>``, ``main/<sha>``, ``<sha>``), or None."""
    found = _SHA.search(revision.strip().lower())
    return found["sha"] if found else None


def commit(source_url: str, revision: str, forge: ForgeName) -> Commit | None:
    """The commit an artifact was built from, or None when its annotations do not say."""
    sha = revision_sha(revision)
    if sha is None or not source_url.strip():
        return None
    try:
        return Commit(repository(source_url, forge), sha)
    except NotARepository:
        return None
