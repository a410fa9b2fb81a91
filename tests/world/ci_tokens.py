"""ID token claims shaped as a CI system's, for the world's OIDC issuers (``sigstore.OIDCIssuer.mint``).

``github_actions`` follows GitHub's documented token (docs: "OpenID Connect reference",
claims and the ``sub`` formats): the job's repository, ref, sha, event and workflow, and
``job_workflow_ref``, which names the *called* workflow when the job is a reusable
workflow's (``jobs.<id>.uses``) while ``repository``, ``ref``, ``sha`` and ``workflow_ref``
stay the caller's. Fulcio's ``github-workflow`` issuer type reads 16 of these claims and
refuses a token that lacks any. Numeric ids are derived from the names, so the same
repository always gets the same id.
"""

from __future__ import annotations

import hashlib
from typing import Any


def _number(text: str) -> str:
    return str(int(hashlib.sha256(text.encode()).hexdigest()[:8], 16))


def _sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()  # a made-up commit id, as git's


def github_actions(
    repository: str,
    *,
    workflow_file: str = "release.yml",
    workflow: str = "release",
    uses: str | None = None,
    ref: str = "refs/heads/main",
    sha: str | None = None,
    event_name: str = "push",
    environment: str | None = None,
    run_id: str = "4242",
    run_attempt: str = "1",
) -> dict[str, Any]:
    """The claims of a job of ``repository``'s ``.github/workflows/<workflow_file>`` (named
    ``workflow``) run for ``ref``; ``uses`` (``owner/repo/.github/workflows/f.yml@ref``) makes
    it a job calling that reusable workflow."""
    owner = repository.split("/", 1)[0]
    sha = sha or _sha(f"{repository}@{ref}")
    workflow_ref = f"{repository}/.github/workflows/{workflow_file}@{ref}"
    job_workflow_ref = uses or workflow_ref
    if environment is not None:
        subject = f"repo:{repository}:environment:{environment}"
    elif event_name == "pull_request":
        subject = f"repo:{repository}:pull_request"
    else:
        subject = f"repo:{repository}:ref:{ref}"
    claims: dict[str, Any] = {
        "jti": _sha(f"{job_workflow_ref} {run_id} {run_attempt}"),
        "sub": subject,
        "ref": ref,
        "ref_type": "tag" if ref.startswith("refs/tags/") else "branch",
        "ref_protected": "false",
        "sha": sha,
        "repository": repository,
        "repository_id": _number(repository),
        "repository_owner": owner,
        "repository_owner_id": _number(owner),
        "repository_visibility": "public",
        "actor": "octocat",
        "actor_id": "583231",
        "run_id": run_id,
        "run_number": "7",
        "run_attempt": run_attempt,
        "runner_environment": "github-hosted",
        "workflow": workflow,
        "workflow_ref": workflow_ref,
        "workflow_sha": sha,
        "job_workflow_ref": job_workflow_ref,
        "job_workflow_sha": sha if uses is None else _sha(uses),
        "event_name": event_name,
        "head_ref": "",
        "base_ref": "",
    }
    if environment is not None:
        claims["environment"] = environment
    return claims
