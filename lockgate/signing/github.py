"""GitHub workflow identity pinning: cosign's ``--certificate-github-workflow-*`` checks.

A keyless policy names a certificate identity (the SAN) and an OIDC issuer. For a GitHub
Actions certificate the SAN is the workflow that ran the job, and when that is a reusable
workflow (``jobs.<id>.uses``) it is the *called* workflow: every repository that calls it
signs with the same identity. Only the workflow-run claims Fulcio copies into the
certificate tell the callers apart, so a policy pins them too:

============================  ==========================================  ===============
field (Sync, attestations)    what it holds                               extension read
============================  ==========================================  ===============
``githubRepository``          the caller's repository, ``owner/name``     ``.1.5``, else ``.1.12``
``githubRef``                 the ref the run was for (``refs/heads/x``)  ``.1.6``, else ``.1.14``
``githubWorkflowTrigger``     the event (``push``, ``workflow_dispatch``) ``.1.2``, else ``.1.20``
``githubWorkflowSha``         the commit the run was for                  ``.1.3``, else ``.1.13``
``githubWorkflowName``        the run's workflow ``name:``              ``.1.4``
============================  ==========================================  ===============

(OIDs under ``1.3.6.1.4.1.57264.1``.) The semantics are cosign's: an exact string match
on the raw value of the deprecated extension (``.1.2``-``.1.6``), which Fulcio still writes
for every GitHub certificate. Only when that extension is absent is the newer DER one read,
and only from a github.com certificate (its Source Repository URI, ``.1.12``, starts with
``https://github.com/``; the repository is that URI without the base), so a GitLab or any
other CI's certificate never satisfies a ``github*`` pin, as with cosign.

``audit`` is the load-time check every surface runs when it builds a policy: an identity
that is one of lockgate's own reusable workflows without ``githubRepository`` is refused
(anyone who can push to the registry could call the workflow from their own repository and
move your tag), any other GitHub workflow identity without it loads with a warning.
Pure and cheap to import: ``lockgate.signing.policy`` reads the certificates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from lockgate.errors import UsageError

if TYPE_CHECKING:
    from lockgate.signing.policy import Match

#: the issuer of GitHub Actions' OIDC tokens
ACTIONS_ISSUER = "https://token.actions.githubusercontent.com"
#: the base Fulcio puts before GitHub repository and workflow paths
GITHUB_BASE = "https://github.com/"
#: lockgate's reusable workflows (``workflows/*.yml``; a unit test keeps this in step)
OWN_WORKFLOWS = ("fleet-page.yml", "image-updates.yml", "pr-diff.yml", "publish.yml")
_OID = "1.3.6.1.4.1.57264.1."
#: Source Repository URI: a github.com certificate's starts with ``GITHUB_BASE``
SOURCE_REPOSITORY_URI = _OID + "12"


@dataclass(frozen=True)
class Claim:
    """One pinnable claim: its attribute, document field, cosign flag and extensions."""

    attribute: str
    field: str
    cosign_flag: str
    #: the raw (deprecated) extension cosign matches
    oid: str
    #: the DER extension read when the raw one is absent (github.com certificates only)
    fallback_oid: str | None
    #: what the value is, for flag help and the config reference
    describes: str


_COSIGN = "--certificate-github-workflow-"
CLAIMS = (
    Claim(
        "repository", "githubRepository", _COSIGN + "repository", _OID + "5", _OID + "12",
        "the repository whose workflow run signed, owner/name (for a reusable workflow, the caller; "
        "required with lockgate's own workflows, warned about without it for any other)",
    ),
    Claim(
        "ref", "githubRef", _COSIGN + "ref", _OID + "6", _OID + "14",
        "the ref the run was for (refs/heads/main, refs/tags/v1)",
    ),
    Claim(
        "workflow_trigger", "githubWorkflowTrigger", _COSIGN + "trigger", _OID + "2", _OID + "20",
        "the event that started the run (push, workflow_dispatch)",
    ),
    Claim(
        "workflow_sha", "githubWorkflowSha", _COSIGN + "sha", _OID + "3", _OID + "13",
        "the commit the run was for (40 hex digits)",
    ),
    Claim(
        "workflow_name", "githubWorkflowName", _COSIGN + "name", _OID + "4", None,
        "the name: of the workflow the run started",
    ),
)  # fmt: skip


def describe(attribute: str) -> str:
    """A claim's description with where it is read, for a flag's help or a field's reference."""
    claim = next(c for c in CLAIMS if c.attribute == attribute)
    return (
        f"Keyless, GitHub Actions: {claim.describes}; matched exactly against certificate "
        f"extension {claim.oid}, as cosign's {claim.cosign_flag}."
    )


@dataclass(frozen=True)
class GitHubClaims:
    """The five GitHub workflow-run claims: pinned by a policy, or found in a certificate."""

    repository: str | None = None
    ref: str | None = None
    workflow_trigger: str | None = None
    workflow_sha: str | None = None
    workflow_name: str | None = None

    def items(self) -> list[tuple[Claim, str | None]]:
        return [(claim, getattr(self, claim.attribute)) for claim in CLAIMS]

    def any(self) -> bool:
        return any(value is not None for _, value in self.items())

    def mismatches(self, expected: GitHubClaims) -> list[str]:
        """Each pinned claim this certificate's differs from, as "field: expected X, found Y"."""
        return [
            f"{claim.field}: expected {want!r}, found {getattr(self, claim.attribute)!r}"
            for claim, want in expected.items()
            if want is not None and getattr(self, claim.attribute) != want
        ]


def names(style: Literal["cosign", "field", "flag"], prefix: str = "") -> Mapping[str, str]:
    """How each claim is spelled: ``cosign`` flags, ``field`` names after ``prefix``
    (``spec.verify.``), or ``flag`` options after ``prefix`` (``--verify-``)."""
    if style == "cosign":
        return {c.attribute: c.cosign_flag for c in CLAIMS}
    if style == "field":
        return {c.attribute: prefix + c.field for c in CLAIMS}
    return {c.attribute: prefix + re.sub(r"(?<!^)([A-Z])", r"-\1", c.field).lower() for c in CLAIMS}


def audit(
    identity: Match,
    issuer: Match,
    github: GitHubClaims,
    *,
    identity_name: str,
    repository_name: str,
) -> str | None:
    """Refuse (``UsageError``) lockgate's own reusable workflow without ``githubRepository``;
    return a warning for any other GitHub workflow identity without it; else None.

    ``identity_name`` and ``repository_name`` spell the identity and the repository pin
    where the user wrote them (``spec.verify.identity``, ``--verify-github-repository``)."""
    if github.repository is not None:
        return None
    flag = repository_name.startswith("-")
    setting = f"{repository_name} OWNER/NAME" if flag else f"{repository_name}: OWNER/NAME"
    shown = f"{identity_name} '{identity.value}'"
    if is_own_workflow(identity):
        raise UsageError(
            f"{shown} is one of lockgate's reusable workflows, which signs for every repository "
            "that calls it: anyone who can push to the registry could call it from their own "
            f"repository and have their artifact accepted; add {setting} (the repository whose "
            "workflow calls it) so that only its signatures are accepted"
        )
    if is_workflow_identity(identity, issuer):
        return (
            f"{shown} is a GitHub Actions workflow identity and {repository_name} is not set: a "
            "reusable workflow signs for every repository that calls it, so a signature made from "
            f"another repository would be accepted; set {setting}"
        )
    return None


def _literal(match: Match) -> str:
    """The text an identity names: the value, or a regexp with its escapes taken out."""
    return re.sub(r"\\(.)", r"\1", match.value) if match.regexp else match.value


def is_workflow_identity(identity: Match, issuer: Match) -> bool:
    """The identity names a GitHub workflow file, or the issuer admits GitHub Actions' tokens."""
    return "/.github/workflows/" in _literal(identity).lower() or issuer.matches(ACTIONS_ISSUER)


def is_own_workflow(identity: Match) -> bool:
    """The identity is a workflow of a repository named ``lockgate`` (lockgate's or a fork's).

    GitHub runs a reusable workflow only from ``.github/workflows/``, where lockgate keeps
    ``OWN_WORKFLOWS`` and nothing else, so any file there counts; a regexp counts too when
    what follows ``/lockgate/`` could be that directory (``.*``, ``[^@]+``, ``(...)``)."""
    raw = identity.value
    for found in re.finditer(r"/lockgate(?=/)", raw, flags=re.IGNORECASE):
        rest = raw[found.end() + 1 :]
        if not identity.regexp:
            if rest.lower().startswith(".github/workflows/"):
                return True
        elif rest[:1] in (".", "[", "(") and not rest.lower().startswith(".github"):
            return True  # a wildcard where the directory would be
        elif re.sub(r"\\(.)", r"\1", rest).lower().startswith(".github/workflows/"):
            return True
    return False
