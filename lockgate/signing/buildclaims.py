"""Any CI's run pinned by Fulcio's source and build extensions (GitLab CI, GitHub Actions...).

Fulcio writes the same DER extensions (OIDs under ``1.3.6.1.4.1.57264.1``) for every CI it
knows, filled from each CI's own token claims; a keyless policy may pin them beside the
identity (the SAN) and the issuer:

==========================  ========  ==================================================
field (Sync, attestations)  OID       GitLab CI claim  /  GitHub Actions claim
==========================  ========  ==================================================
``sourceRepositoryURI``     ``.12``   ``https://<instance>/<project_path>``  /  ``https://github.com/<repository>``
``sourceRepositoryRef``     ``.14``   ``refs/heads/<ref>`` or ``refs/tags/<ref>``  /  ``ref``
``sourceRepositoryDigest``  ``.13``   ``sha``  /  ``sha``
``buildTrigger``            ``.20``   ``pipeline_source`` (push, web, schedule...)  /  ``event_name``
``buildConfigURI``          ``.18``   ``https://<ci_config_ref_uri>``  /  ``https://github.com/<workflow_ref>``
``runnerEnvironment``       ``.11``   ``runner_environment`` (gitlab-hosted, self-hosted)  /  the same
==========================  ========  ==================================================

The names are sigstore-go's (``certificate.Extensions``, as ``sigstore-go verify`` prints
them); cosign has flags for the GitHub claims only (``lockgate.signing.github``, kept as
they are). Each pin is an exact match on the extension's value: a certificate without the
extension (one from an e-mail issuer) never satisfies it. Pure: ``lockgate.signing.policy``
reads the certificates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

_OID = "1.3.6.1.4.1.57264.1."


@dataclass(frozen=True)
class Claim:
    """One pinnable extension: its attribute, document field, flag stem and OID."""

    attribute: str
    field: str
    #: after ``--certificate-`` (``lockgate verify``, the Action's inputs) or ``--verify-`` (reconcile)
    flag: str
    oid: str
    describes: str


CLAIMS = (
    Claim(
        "source_repository_uri", "sourceRepositoryURI", "source-repository-uri", _OID + "12",
        "the repository the run was for, as a URL (https://gitlab.com/group/project, "
        "https://github.com/owner/repo)",
    ),
    Claim(
        "source_repository_ref", "sourceRepositoryRef", "source-repository-ref", _OID + "14",
        "the ref the run was for (refs/heads/main, refs/tags/v1)",
    ),
    Claim(
        "source_repository_digest", "sourceRepositoryDigest", "source-repository-digest", _OID + "13",
        "the commit the run was for (40 hex digits)",
    ),
    Claim(
        "build_trigger", "buildTrigger", "build-trigger", _OID + "20",
        "what started the run (GitLab's pipeline_source: push, web, schedule, merge_request_event; "
        "GitHub's event)",
    ),
    Claim(
        "build_config_uri", "buildConfigURI", "build-config-uri", _OID + "18",
        "the top-level pipeline file the run was defined by, as a URL "
        "(https://gitlab.com/group/project//.gitlab-ci.yml@refs/heads/main)",
    ),
    Claim(
        "runner_environment", "runnerEnvironment", "runner-environment", _OID + "11",
        "where the job ran (gitlab-hosted, github-hosted, self-hosted)",
    ),
)  # fmt: skip


def describe(attribute: str) -> str:
    """A claim's description with where it is read, for a flag's help or a field's reference."""
    claim = next(c for c in CLAIMS if c.attribute == attribute)
    return (
        f"Keyless, any CI (GitLab CI, GitHub Actions): {claim.describes}; matched exactly against "
        f"certificate extension {claim.oid}."
    )


@dataclass(frozen=True)
class BuildClaims:
    """The run's source and build extensions: pinned by a policy, or found in a certificate."""

    source_repository_uri: str | None = None
    source_repository_ref: str | None = None
    source_repository_digest: str | None = None
    build_trigger: str | None = None
    build_config_uri: str | None = None
    runner_environment: str | None = None

    def items(self) -> list[tuple[Claim, str | None]]:
        return [(claim, getattr(self, claim.attribute)) for claim in CLAIMS]

    def any(self) -> bool:
        return any(value is not None for _, value in self.items())

    def mismatches(self, expected: BuildClaims) -> list[str]:
        """Each pinned claim this certificate's differs from, as "field: expected X, found Y"."""
        return [
            f"{claim.field}: expected {want!r}, found {getattr(self, claim.attribute)!r}"
            for claim, want in expected.items()
            if want is not None and getattr(self, claim.attribute) != want
        ]


def names(style: Literal["field", "flag"], prefix: str = "") -> Mapping[str, str]:
    """How each claim is spelled: ``field`` names after ``prefix`` (``spec.verify.``), or
    ``flag`` options after ``prefix`` (``--certificate-``, ``--verify-``)."""
    if style == "field":
        return {c.attribute: prefix + c.field for c in CLAIMS}
    return {c.attribute: prefix + c.flag for c in CLAIMS}
