"""Inputs -> one ``lockgate`` invocation: the argv, the extra environment, the files to write.

Pure: it reads the parsed inputs and the job's environment and decides everything before
anything runs, so a missing input or a keyless step without an OIDC token fails before a
byte is pushed. Values are list items of the argv, never text for a shell. Credentials go
into the environment of the one process that needs them (``LOCKGATE_PASSWORD``,
``LOCKGATE_REGISTRY_*`` scoped to one host), never into the argv or a Docker config.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from action.github.inputs import Inputs, is_pem
from lockgate import registry
from lockgate.errors import AuthError, UsageError
from lockgate.registry import credentials
from lockgate.signing import buildclaims

KEYLESS_PERMISSION = (
    "keyless signing needs the job's OIDC token, and this job cannot request one "
    "(ACTIONS_ID_TOKEN_REQUEST_URL is not set): add `permissions: id-token: write` to the job "
    "(or the workflow) that runs this step"
)
GHCR = "ghcr.io"
#: where the action's run step finds the job's token (``${{ github.token }}``)
TOKEN_ENV = "LOCKGATE_GITHUB_TOKEN"


@dataclass(frozen=True)
class Invocation:
    command: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    #: files to create (mode 0600) before the run and delete after it: a key given as PEM
    files: Mapping[Path, str] = field(default_factory=dict)
    #: exit codes that are results, not failures (diff's 1: "differences found")
    ok_codes: frozenset[int] = frozenset({0})


def _key_file(inputs: Inputs, workdir: Path, name: str, files: dict[Path, str]) -> str:
    key = inputs.text("key")
    if not is_pem(key):
        return key.strip()
    path = workdir / name
    files[path] = key if key.endswith("\n") else key + "\n"
    return str(path)


def _registry_env(inputs: Inputs, env: Mapping[str, str]) -> dict[str, str]:
    host = inputs.text("registry")
    url = inputs.text("url")
    if not host and url and "{name}" not in url:
        host = registry.parse(url).host
    elif not host and url:
        host = registry.parse(url.replace("{name}", "x")).host
    username, password = inputs.text("registry-username"), inputs.text("registry-password").strip()
    if host == GHCR and not password and env.get(TOKEN_ENV):
        username, password = username or env.get("GITHUB_ACTOR", "github-actions"), env[TOKEN_ENV]
    if not username and not password:
        return {}
    if not username or not password:
        missing = "registry-password" if username else "registry-username"
        raise UsageError(f"input `{missing}` is required when the other registry credential is given")
    if not host:
        raise UsageError("input `registry` is required with registry credentials when there is no url")
    return {
        credentials.ENV_HOST: host,
        credentials.ENV_USERNAME: username,
        credentials.ENV_PASSWORD: password,
    }


def _check_keyless(env: Mapping[str, str]) -> None:
    if env.get("SIGSTORE_ID_TOKEN"):
        return
    if env.get("ACTIONS_ID_TOKEN_REQUEST_URL") and env.get("ACTIONS_ID_TOKEN_REQUEST_TOKEN"):
        return
    raise AuthError(KEYLESS_PERMISSION)


def _build_flags(inputs: Inputs) -> list[str]:
    argv = ["--render"] if inputs.flag("render") else []
    for values in inputs.items("values"):
        argv += ["--values", values]
    return argv


def _common(inputs: Inputs) -> list[str]:
    provider = inputs.text("provider")
    cloud = ["--provider", provider] if provider and provider != "generic" else []
    return (["--insecure"] if inputs.flag("insecure") else []) + cloud + ["--output", "json"]


def _push(inputs: Inputs, env: Mapping[str, str], workdir: Path, files: dict[Path, str]) -> list[str]:
    url = inputs.require("url", "push")
    each = inputs.text("each")
    argv = ["push", "--each", each, url] if each else ["push", inputs.require("path", "push"), url]
    for tag in inputs.items("tags"):
        argv += ["--tag", tag]
    for annotation in inputs.items("annotations"):
        argv += ["--annotation", annotation]
    for name in ("source", "revision"):
        if inputs.text(name):
            argv += [f"--{name}", inputs.text(name)]
    argv += _build_flags(inputs)
    if not inputs.flag("allow-dirty"):
        # what CI publishes is what was committed: a step that changed the tree is refused
        argv.append("--refuse-dirty")
    mode = inputs.text("sign")
    if mode == "key":
        inputs.require("key", "push", "sign: key signs with it")
        argv += ["--sign", "key", "--key", _key_file(inputs, workdir, "cosign.key", files)]
    elif mode == "keyless":
        _check_keyless(env)
        argv += ["--sign", "keyless"]
        if inputs.text("trust-config"):
            argv += ["--trust-config", inputs.text("trust-config")]
    return argv + _common(inputs)


def _sign(inputs: Inputs, env: Mapping[str, str], workdir: Path, files: dict[Path, str]) -> list[str]:
    ref = registry.parse(inputs.require("url", "sign"))
    digest = inputs.text("digest")
    if digest:
        ref = registry.Reference(ref.host, ref.repository).with_digest(digest)
    elif ref.digest is None:
        raise UsageError(
            "input `digest` is required by command `sign` when url names no digest "
            "(a tag can move): pass the push step's `digest` output"
        )
    mode = inputs.text("sign")
    if mode == "none":
        mode = "key" if inputs.text("key") else "keyless"
    argv = ["sign", str(ref)]
    if mode == "key":
        inputs.require("key", "sign", "sign: key signs with it")
        argv += ["--key", _key_file(inputs, workdir, "cosign.key", files)]
    else:
        _check_keyless(env)
        argv += ["--keyless"]
        if inputs.text("trust-config"):
            argv += ["--trust-config", inputs.text("trust-config")]
    return argv + _common(inputs)


def _policy(inputs: Inputs, workdir: Path, files: dict[Path, str], *, prefix: str, command: str) -> list[str]:
    """The verification policy flags: ``--key`` (``--verify-key``) or the keyless identity."""
    argv: list[str] = []
    if inputs.text("key"):
        argv += [f"--{prefix}key", _key_file(inputs, workdir, "cosign.pub", files)]
    names = {
        "certificate-identity": "identity" if prefix else "certificate-identity",
        "certificate-identity-regexp": "identity-regexp" if prefix else "certificate-identity-regexp",
        "certificate-oidc-issuer": "issuer" if prefix else "certificate-oidc-issuer",
        "trusted-root": "trusted-root",
    }
    # the inputs have cosign's names, as verify's flags; reconcile's are the Sync fields'
    for part, reconcile_flag in (
        ("repository", "github-repository"),
        ("ref", "github-ref"),
        ("trigger", "github-workflow-trigger"),
        ("sha", "github-workflow-sha"),
        ("name", "github-workflow-name"),
    ):
        cosign = f"certificate-github-workflow-{part}"
        names[cosign] = reconcile_flag if prefix else cosign
    for claim in buildclaims.CLAIMS:  # any CI's: verify's --certificate-X, reconcile's --verify-X
        names[f"certificate-{claim.flag}"] = claim.flag if prefix else f"certificate-{claim.flag}"
    for name, flag in names.items():
        if inputs.text(name):
            argv += [f"--{prefix}{flag}", inputs.text(name)]
    if not argv:
        # named as inputs here: the CLI would name its flags, which the workflow never wrote
        raise UsageError(
            "input `key` (a public key) or `certificate-identity`/`certificate-identity-regexp` "
            f"with `certificate-oidc-issuer` is required by command `{command}`"
            + (" (or give `config`)" if command == "reconcile" else "")
        )
    return argv


def _verify(inputs: Inputs, env: Mapping[str, str], workdir: Path, files: dict[Path, str]) -> list[str]:
    url = inputs.require("url", "verify")
    return ["verify", url, *_policy(inputs, workdir, files, prefix="", command="verify"), *_common(inputs)]


def _diff(inputs: Inputs, env: Mapping[str, str], workdir: Path, files: dict[Path, str]) -> list[str]:
    path, url = inputs.require("path", "diff"), inputs.require("url", "diff")
    return ["diff", path, url, *_build_flags(inputs), *_common(inputs)]


def _preview(inputs: Inputs, env: Mapping[str, str], workdir: Path, files: dict[Path, str]) -> list[str]:
    clusters = inputs.items("clusters")
    if not clusters:
        raise UsageError(
            "input `clusters` is required by command `preview`: each cluster's runner configuration"
        )
    argv = ["preview", inputs.require("path", "preview")]
    for cluster in clusters:
        argv += ["--cluster", cluster]
    if inputs.text("url"):
        argv += ["--url", inputs.text("url")]
    for key in inputs.items("attester-keys"):
        argv += ["--attester-key", key]
    if inputs.text("base"):
        argv += ["--base", inputs.text("base")]
    # a comment needs a pull request: another event (a dispatch, a push) previews into the summary
    if inputs.flag("comment") and env.get("GITHUB_EVENT_NAME", "").startswith("pull_request"):
        argv.append("--comment")
    return argv + (["--insecure"] if inputs.flag("insecure") else []) + ["--output", "json"]


def _images_update(
    inputs: Inputs, env: Mapping[str, str], workdir: Path, files: dict[Path, str]
) -> list[str]:
    argv = ["images", "update", "--path", inputs.require("path", "images-update"), "--output", "json"]
    if inputs.flag("dry-run"):
        return [*argv, "--dry-run"]
    argv += ["--commit", "--push"]
    if inputs.text("branch"):
        argv += ["--branch", inputs.text("branch")]
    if inputs.flag("pr"):
        inputs.require("branch", "images-update", "pr: true opens the pull request from that branch")
        argv += ["--pr"]
    return argv


def _reconcile(inputs: Inputs, env: Mapping[str, str], workdir: Path, files: dict[Path, str]) -> list[str]:
    if inputs.text("config"):
        argv = ["reconcile", "--config", inputs.text("config")]
    else:
        url = inputs.require("url", "reconcile", "or give `config`")
        argv = ["reconcile", url, "--name", inputs.require("name", "reconcile", "or give `config`")]
        if inputs.text("semver"):
            argv += ["--semver", inputs.text("semver")]
        argv += _policy(inputs, workdir, files, prefix="verify-", command="reconcile")
    for flag in ("prune", "wait", "dry-run"):
        if inputs.flag(flag):
            argv.append(f"--{flag}")
    if inputs.flag("wait") and inputs.text("timeout"):
        argv += ["--timeout", inputs.text("timeout")]
    return [*argv, "--output", "json"]


_Builder = Callable[[Inputs, Mapping[str, str], Path, dict[Path, str]], list[str]]
BUILDERS: dict[str, _Builder] = {
    "push": _push,
    "sign": _sign,
    "verify": _verify,
    "diff": _diff,
    "preview": _preview,
    "images-update": _images_update,
    "reconcile": _reconcile,
}


def plan(inputs: Inputs, env: Mapping[str, str], workdir: Path) -> Invocation:
    """The invocation for the inputs; ``workdir`` is a private directory for key files."""
    command = inputs.command
    if command == "install":
        return Invocation(command, ())
    files: dict[Path, str] = {}
    argv = BUILDERS[command](inputs, env, workdir, files)
    extra = _registry_env(inputs, env)
    if inputs.text("password"):
        extra["LOCKGATE_PASSWORD"] = inputs.text("password")
    wants_token = (command == "images-update" and inputs.flag("pr")) or (
        command == "preview" and "--comment" in argv
    )
    if wants_token and not env.get("GITHUB_TOKEN") and env.get(TOKEN_ENV):
        extra["GITHUB_TOKEN"] = env[TOKEN_ENV]
    differs = command == "preview" or (command == "diff" and not inputs.flag("fail-on-change"))
    ok = frozenset({0, 1}) if differs else frozenset({0})
    return Invocation(command, tuple(argv), extra, files, ok)
