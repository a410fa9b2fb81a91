"""The action's inputs: one table (``INPUTS``) and a parser from the step's environment.

``action.yml`` declares exactly these inputs and passes each one as ``LOCKGATE_INPUT_<NAME>``
(upper case, ``-`` as ``_``); ``tests/unit/action/test_github_inputs.py`` keeps the two in
step. Values stay strings until parsed here, once: booleans (``true``/``false``), choices,
and lists (one item a line, or comma-separated, as docker/build-push-action reads them).
Every refusal names the input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from lockgate.errors import UsageError

COMMANDS = ("push", "sign", "verify", "diff", "preview", "images-update", "reconcile", "install")
ENV_PREFIX = "LOCKGATE_INPUT_"


class Kind(Enum):
    TEXT = "text"
    FLAG = "flag"
    LIST = "list"
    CHOICE = "choice"


@dataclass(frozen=True)
class Spec:
    name: str
    description: str
    kind: Kind = Kind.TEXT
    default: str = ""
    choices: tuple[str, ...] = ()
    #: the value is a credential: masked in the log, never echoed
    secret: bool = False

    @property
    def env(self) -> str:
        return env_name(self.name)


def env_name(name: str) -> str:
    return ENV_PREFIX + name.upper().replace("-", "_")


_TEXT, _FLAG, _LIST, _CHOICE = Kind.TEXT, Kind.FLAG, Kind.LIST, Kind.CHOICE

INPUTS: tuple[Spec, ...] = (
    Spec("command", "One of " + ", ".join(COMMANDS) + ".", _CHOICE, choices=COMMANDS),
    Spec(
        "path",
        "Manifests directory or file (push, diff); the repository root for images-update.",
        default=".",
    ),
    Spec("url", "oci://REGISTRY/REPO:TAG (push, diff, verify, reconcile) or @sha256:... (sign)."),
    Spec("tags", "More tags for the pushed artifact, one a line or comma-separated.", _LIST),
    Spec("annotations", "KEY=VALUE manifest annotations, one a line.", _LIST),
    Spec("source", "Source annotation (default: the GitHub server URL and repository, as Flux writes it)."),
    Spec("revision", "Revision annotation (default: <ref_name>@sha1:<sha>, as Flux writes it)."),
    Spec("each", "Push one artifact per directory matching this glob; {name} in url."),
    Spec("render", "Render a kustomization or Helm chart before packing (push, diff).", _FLAG, "false"),
    Spec("values", "Helm values files for render, one a line.", _LIST),
    Spec(
        "allow-dirty",
        "push: push uncommitted changes under path (warned, annotated dev.lockgate.vcs.modified); "
        "refused by default.",
        _FLAG,
        "false",
    ),
    Spec(
        "sign",
        "Sign the pushed digest: keyless, key or none (sign: keyless unless key is set).",
        _CHOICE,
        "none",
        choices=("none", "key", "keyless"),
    ),
    Spec(
        "key",
        "cosign key: the private key to sign with, the public key to verify with; "
        "a file path or the PEM itself (from a secret).",
        secret=True,
    ),
    Spec("password", "Password of the private key (from a secret).", secret=True),
    Spec("trust-config", "Sigstore client trust config of a private Sigstore (keyless signing)."),
    Spec("digest", "sign: the digest to sign when url names no digest (e.g. a push step's output)."),
    Spec("certificate-identity", "Keyless verification: the expected certificate identity, exactly."),
    Spec("certificate-identity-regexp", "Keyless verification: the identity as a full-match regexp."),
    Spec("certificate-oidc-issuer", "Keyless verification: the expected OIDC issuer."),
    Spec(
        "certificate-github-workflow-repository",
        "Keyless verification: the GitHub repository that ran the signing workflow, owner/name "
        "(for a reusable workflow, the caller).",
    ),
    Spec("certificate-github-workflow-ref", "Keyless verification: the ref the signing run was for."),
    Spec("certificate-github-workflow-trigger", "Keyless verification: the event of the signing run (push)."),
    Spec("certificate-github-workflow-sha", "Keyless verification: the commit the signing run was for."),
    Spec("certificate-github-workflow-name", "Keyless verification: the signing workflow's name."),
    Spec(
        "certificate-source-repository-uri",
        "Keyless verification, any CI: the repository of the signing run, as a URL "
        "(https://gitlab.com/group/project).",
    ),
    Spec(
        "certificate-source-repository-ref",
        "Keyless verification, any CI: the ref the signing run was for.",
    ),
    Spec(
        "certificate-source-repository-digest",
        "Keyless verification, any CI: the commit of the signing run.",
    ),
    Spec("certificate-build-trigger", "Keyless verification, any CI: what started the run (push, schedule)."),
    Spec(
        "certificate-build-config-uri",
        "Keyless verification, any CI: the top-level pipeline file, as a URL.",
    ),
    Spec(
        "certificate-runner-environment",
        "Keyless verification, any CI: where the job ran (gitlab-hosted).",
    ),
    Spec("trusted-root", "Keyless verification: a Sigstore trusted_root.json (default: production)."),
    Spec("registry", "Registry host the credentials are for (default: the host of url)."),
    Spec("registry-username", "Registry user name (default for ghcr.io: github.actor)."),
    Spec(
        "registry-password",
        "Registry password or token (default for ghcr.io: the job's GITHUB_TOKEN).",
        secret=True,
    ),
    Spec("insecure", "Plain http to the registry (automatic for localhost and 127.0.0.1).", _FLAG, "false"),
    Spec(
        "provider",
        "Registry credentials from the cloud's workload identity: generic, aws (ECR), gcp "
        "(Artifact Registry) or azure (ACR); see docs/registries.md.",
        _CHOICE,
        "generic",
        choices=("generic", "aws", "gcp", "azure"),
    ),
    Spec("name", "reconcile: the sync name (its inventory is the Secret lockgate-NAME)."),
    Spec("semver", "reconcile: pick the highest tag in this semver range, e.g. >=1.0.0 <2.0.0."),
    Spec("config", "reconcile: a file of Sync documents instead of url and name."),
    Spec("prune", "reconcile: delete objects that left the set.", _FLAG, "false"),
    Spec("wait", "reconcile: wait for the applied objects to become healthy.", _FLAG, "false"),
    Spec("timeout", "reconcile: health wait timeout with wait (30s, 5m).", default="5m"),
    Spec("dry-run", "reconcile, images-update: show what would change, change nothing.", _FLAG, "false"),
    Spec("branch", "images-update: push the update commit to this branch.", default=""),
    Spec("pr", "images-update: open or update a pull request from branch.", _FLAG, "false"),
    Spec(
        "fail-on-change", "diff: fail the step when the manifests differ from the artifact.", _FLAG, "false"
    ),
    Spec(
        "clusters",
        "preview: each cluster's runner configuration file, [NAME=]FILE, one a line.",
        _LIST,
    ),
    Spec(
        "attester-keys", "preview: CLUSTER=FILE, the public key of each cluster's runner attestations.", _LIST
    ),
    Spec("base", "preview: the Git revision the cluster files are compared with (who may sign).", default=""),
    Spec(
        "comment",
        "preview: on pull_request events, keep one comment with the preview "
        "(skipped when the token may not write).",
        _FLAG,
        "true",
    ),
    Spec("summary", "Write a Job Summary.", _FLAG, "true"),
    Spec("python", "The Python (>= 3.11) lockgate is installed with.", default="python3"),
)

BY_NAME: dict[str, Spec] = {spec.name: spec for spec in INPUTS}


def split_list(text: str) -> tuple[str, ...]:
    """One item a line; a line with commas holds several (``a,b`` or ``a, b``). Blanks dropped."""
    items: list[str] = []
    for line in text.splitlines():
        items.extend(part.strip() for part in line.split(","))
    return tuple(item for item in items if item)


def split_lines(text: str) -> tuple[str, ...]:
    """One item a line, commas kept (annotation values and file names may hold them)."""
    return tuple(line.strip() for line in text.splitlines() if line.strip())


#: list inputs whose items may contain commas: one a line only
_LINES_ONLY = frozenset({"annotations", "values", "clusters", "attester-keys"})


@dataclass(frozen=True)
class Inputs:
    """The parsed inputs; ``text``/``flag``/``items`` refuse names that are not in ``INPUTS``."""

    values: Mapping[str, str]

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Inputs:
        values = {spec.name: env.get(spec.env, spec.default) for spec in INPUTS}
        parsed = cls(values)
        for spec in INPUTS:
            raw = parsed.text(spec.name)
            if spec.kind is Kind.FLAG and raw.lower() not in ("true", "false", ""):
                raise UsageError(f"input `{spec.name}` must be true or false, not {raw!r}")
            if spec.kind is Kind.CHOICE and raw and raw not in spec.choices:
                raise UsageError(f"input `{spec.name}` must be one of {', '.join(spec.choices)}, not {raw!r}")
        return parsed

    def text(self, name: str) -> str:
        spec = BY_NAME[name]
        value = self.values.get(name, spec.default)
        # multi-line values keep their inner lines; a key's PEM must not lose its last newline
        return value if spec.secret or spec.kind is Kind.LIST else value.strip()

    def flag(self, name: str) -> bool:
        if BY_NAME[name].kind is not Kind.FLAG:
            raise KeyError(f"{name} is not a flag input")
        return self.text(name).lower() == "true"

    def items(self, name: str) -> tuple[str, ...]:
        if BY_NAME[name].kind is not Kind.LIST:
            raise KeyError(f"{name} is not a list input")
        text = self.text(name)
        return split_lines(text) if name in _LINES_ONLY else split_list(text)

    def require(self, name: str, command: str, why: str = "") -> str:
        value = self.text(name)
        if not value:
            raise UsageError(
                f"input `{name}` is required by command `{command}`" + (f": {why}" if why else "")
            )
        return value

    @property
    def command(self) -> str:
        command = self.text("command")
        if not command:
            raise UsageError(f"input `command` is required: one of {', '.join(COMMANDS)}")
        return command

    def secrets(self) -> list[str]:
        """Every secret input's value, for ``::add-mask::`` (each line of a multi-line one too)."""
        found: list[str] = []
        for spec in INPUTS:
            value = self.values.get(spec.name, "")
            if not spec.secret or not value.strip() or (spec.name == "key" and not is_pem(value)):
                continue
            found.append(value.strip())
            found.extend(
                line.strip()
                for line in value.splitlines()
                if len(line.strip()) > 3 and not line.startswith("-----")
            )
        return list(dict.fromkeys(found))


def is_pem(value: str) -> bool:
    """A key given as its PEM text (from a secret) rather than as a file path."""
    return value.lstrip().startswith("-----BEGIN ")
