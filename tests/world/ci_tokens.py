"""ID token claims shaped as a CI system's, for the world's OIDC issuers (``sigstore.OIDCIssuer.mint``).

``github_actions`` follows GitHub's documented token (docs: "OpenID Connect reference",
claims and the ``sub`` formats): the job's repository, ref, sha, event and workflow, and
``job_workflow_ref``, which names the *called* workflow when the job is a reusable
workflow's (``jobs.<id>.uses``) while ``repository``, ``ref``, ``sha`` and ``workflow_ref``
stay the caller's. Fulcio's ``github-workflow`` issuer type reads 16 of these claims and
refuses a token that lacks any. Numeric ids are derived from the names, so the same
repository always gets the same id.

``gitlab_ci`` follows GitLab's documented CI/CD job token (docs: "OpenID Connect (OIDC)
Authentication Using ID Tokens", token payload): ``project_path``, ``namespace_path``,
``ref`` (a bare branch or tag name, with ``ref_type`` and ``ref_path``), ``pipeline_source``,
``sha``, ``ci_config_ref_uri`` (the project's *top-level* pipeline file, without a scheme:
``gitlab.example.com/group/project//.gitlab-ci.yml@refs/heads/main``), ``ci_config_sha``,
``runner_id`` (a number) and ``runner_environment``. Fulcio's ``gitlab-pipeline`` CI provider
builds the SAN ``https://<ci_config_ref_uri>`` and the source repository extensions from them.
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


def gitlab_ci(
    project_path: str,
    *,
    instance: str = "gitlab.example.com",
    ref: str = "main",
    ref_type: str = "branch",
    pipeline_source: str = "push",
    sha: str | None = None,
    config_path: str = ".gitlab-ci.yml",
    environment: str | None = None,
    user_login: str = "alice",
    job_id: str = "4242",
    runner_environment: str = "gitlab-hosted",
) -> dict[str, Any]:
    """The claims of a job of ``instance``'s project ``project_path`` (``group/project``, or
    ``group/subgroup/project``) run for the branch or tag ``ref`` from ``config_path``."""
    namespace = project_path.rsplit("/", 1)[0]
    ref_path = f"refs/{'heads' if ref_type == 'branch' else 'tags'}/{ref}"
    sha = sha or _sha(f"{instance}/{project_path}@{ref_path}")
    claims: dict[str, Any] = {
        "jti": _sha(f"{project_path} {job_id}"),
        "sub": f"project_path:{project_path}:ref_type:{ref_type}:ref:{ref}",
        "namespace_id": _number(namespace),
        "namespace_path": namespace,
        "project_id": _number(project_path),
        "project_path": project_path,
        "project_visibility": "private",
        "user_id": _number(user_login),
        "user_login": user_login,
        "user_email": f"{user_login}@example.com",
        "user_access_level": "maintainer",
        "pipeline_id": _number(f"{project_path} pipeline {job_id}"),
        "pipeline_source": pipeline_source,
        "job_id": job_id,
        "ref": ref,
        "ref_type": ref_type,
        "ref_path": ref_path,
        "ref_protected": "true",
        "runner_id": int(_number(runner_environment)) % 10000 + 1,
        "runner_environment": runner_environment,
        "sha": sha,
        "ci_config_ref_uri": f"{instance}/{project_path}//{config_path}@{ref_path}",
        "ci_config_sha": sha,
    }
    if environment is not None:
        claims |= {"environment": environment, "environment_protected": "true"}
    return claims


def fulcio_gitlab_provider(instance: str = "gitlab.example.com") -> dict[str, Any]:
    """Fulcio's ``CIIssuerMetadata`` for its ``gitlab-pipeline`` CI provider, as upstream's
    config/identity/config.yaml declares it for gitlab.com (fulcio v1.8.8), with the default
    ``url`` of a self-hosted ``instance``: the SAN is ``https://{{ .ci_config_ref_uri }}``."""
    url = "{{ .url }}"
    return {
        "DefaultTemplateValues": {"url": f"https://{instance}", "environment": ""},
        "ExtensionTemplates": {
            "BuildSignerURI": "https://{{ .ci_config_ref_uri }}",
            "BuildSignerDigest": "ci_config_sha",
            "RunnerEnvironment": "runner_environment",
            "SourceRepositoryURI": f"{url}/{{{{ .project_path }}}}",
            "SourceRepositoryDigest": "sha",
            "SourceRepositoryRef": 'refs/{{if eq .ref_type "branch"}}heads/{{ else }}tags/{{end}}{{ .ref }}',
            "SourceRepositoryIdentifier": "project_id",
            "SourceRepositoryOwnerURI": f"{url}/{{{{ .namespace_path }}}}",
            "SourceRepositoryOwnerIdentifier": "namespace_id",
            "BuildConfigURI": "https://{{ .ci_config_ref_uri }}",
            "BuildConfigDigest": "ci_config_sha",
            "BuildTrigger": "pipeline_source",
            "RunInvocationURI": f"{url}/{{{{ .project_path }}}}/-/jobs/{{{{ .job_id }}}}",
            "SourceRepositoryVisibilityAtSigning": "project_visibility",
            "DeploymentEnvironment": "environment",
        },
        "SubjectAlternativeNameTemplate": "https://{{ .ci_config_ref_uri }}",
    }
