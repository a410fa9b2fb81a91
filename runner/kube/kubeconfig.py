"""Where the runner's Kubernetes credentials come from: kubeconfig files or the in-cluster service account.

The first step of every pass that talks to the API server. This module only reads
configuration and returns a ``Credentials`` value; ``runner.kube.auth`` turns that value
into a TLS context and a per-request ``Authorization`` header. It reads the files itself
rather than through the ``kubernetes`` package, whose import alone costs most of a second
of start-up (the whole of a no-op pass), and it merges ``$KUBECONFIG`` as kubectl does:

* the files in order, empty entries and missing files skipped (``--kubeconfig`` names
  one file, which must exist);
* for clusters, users and contexts the first file that defines a name wins, as a whole
  entry; ``current-context`` comes from the first file that sets it;
* relative paths (certificate files, ``tokenFile``, an exec ``command`` with a slash)
  are resolved against the file that holds them.

Inline ``*-data`` fields are decoded into bytes and stay in memory: nothing is written
anywhere. Secrets (keys, tokens, passwords, plugin environment) are left out of every
``repr`` and message.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockgate import bounded
from lockgate.errors import UsageError

SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_EXTENSION = "client.authentication.k8s.io/exec"
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")

#: PEM material: the bytes themselves (inline ``*-data``) or the file that holds them
Pem = bytes | Path


@dataclass(frozen=True)
class Cluster:
    server: str
    ca: Pem | None = None
    insecure: bool = False
    tls_server_name: str = ""
    #: ``extensions[client.authentication.k8s.io/exec]``, handed to exec plugins that ask for it
    exec_extension: Any = None


@dataclass(frozen=True)
class ExecConfig:
    command: str
    api_version: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    install_hint: str = ""
    provide_cluster_info: bool = False
    interactive_mode: str = "IfAvailable"


@dataclass(frozen=True)
class Credentials:
    """Everything needed to reach one API server as one identity; ``origin`` names it in messages."""

    cluster: Cluster
    origin: str
    client_cert: Pem | None = field(default=None, repr=False)
    client_key: Pem | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    token_file: Path | None = None
    basic: tuple[str, str] | None = field(default=None, repr=False)
    exec: ExecConfig | None = None

    @property
    def server(self) -> str:
        return self.cluster.server


@dataclass(frozen=True)
class _Entry:
    """One named cluster, user or context, with the directory its relative paths start from."""

    body: dict[str, Any]
    base: Path
    source: Path


@dataclass
class Merged:
    files: list[Path]
    clusters: dict[str, _Entry] = field(default_factory=dict)
    users: dict[str, _Entry] = field(default_factory=dict)
    contexts: dict[str, _Entry] = field(default_factory=dict)
    current_context: str = ""

    @property
    def where(self) -> str:
        return "kubeconfig " + os.pathsep.join(str(f) for f in self.files)


def files(path: Path | None, environ: Mapping[str, str]) -> list[Path]:
    """The files to merge, in precedence order: ``path`` alone, else ``$KUBECONFIG``, else the default."""
    if path is not None:
        return [path]
    listed = environ.get("KUBECONFIG", "")
    if listed:
        unique: list[Path] = []
        for entry in listed.split(os.pathsep):
            if entry and Path(entry) not in unique:
                unique.append(Path(entry))
        return unique
    home = environ.get("HOME")
    return [(Path(home) if home else Path.home()) / ".kube" / "config"]


def _read(path: Path) -> dict[str, Any]:
    try:
        docs = bounded.yaml_documents(path.read_text(), f"kubeconfig {path}", error=UsageError)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read kubeconfig {path} ({type(exc).__name__}): check the path") from None
    except bounded.LimitExceeded:
        raise
    except UsageError:
        raise UsageError(f"kubeconfig {path} is not valid YAML: fix or regenerate it") from None
    doc = docs[0][1] if docs else None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise UsageError(f"kubeconfig {path} is not a mapping: fix or regenerate it")
    return doc


def merge(docs: Sequence[tuple[Path, dict[str, Any]]]) -> Merged:
    """Merge parsed kubeconfigs in precedence order: the first definition of each name wins."""
    merged = Merged(files=[path for path, _ in docs])
    for path, doc in docs:
        base = path.parent
        for key, what, into in (
            ("clusters", "cluster", merged.clusters),
            ("users", "user", merged.users),
            ("contexts", "context", merged.contexts),
        ):
            for item in doc.get(key) or []:
                if isinstance(item, dict) and item.get("name") and item["name"] not in into:
                    body = item.get(what) or {}
                    if not isinstance(body, dict):
                        raise UsageError(f"kubeconfig {path}: {key} entry {item['name']!r} is not a mapping")
                    into[str(item["name"])] = _Entry(body, base, path)
        if not merged.current_context and doc.get("current-context"):
            merged.current_context = str(doc["current-context"])
    return merged


def _decoded(entry: _Entry, key: str, what: str) -> bytes:
    try:
        return base64.b64decode(str(entry.body[key]), validate=True)
    except (binascii.Error, ValueError):
        raise UsageError(
            f"kubeconfig {entry.source}: {key} of {what} is not valid base64: regenerate the kubeconfig"
        ) from None


def _pem(entry: _Entry, key: str, what: str) -> Pem | None:
    """Inline data wins over a file, as in kubectl; a relative file is relative to its kubeconfig."""
    if entry.body.get(f"{key}-data"):
        return _decoded(entry, f"{key}-data", what)
    if entry.body.get(key):
        return entry.base / str(entry.body[key])
    return None


def _cluster(entry: _Entry, name: str) -> Cluster:
    body = entry.body
    if not body.get("server"):
        raise UsageError(f"kubeconfig {entry.source}: cluster {name!r} has no server: add its URL")
    if body.get("proxy-url"):
        raise UsageError(
            f"kubeconfig {entry.source}: cluster {name!r} sets proxy-url, which lockgate does not "
            "support: set HTTPS_PROXY (and NO_PROXY) in the environment instead"
        )
    extension = None
    for item in body.get("extensions") or []:
        if isinstance(item, dict) and item.get("name") == EXEC_EXTENSION:
            extension = item.get("extension")
    return Cluster(
        server=str(body["server"]),
        ca=_pem(entry, "certificate-authority", f"cluster {name!r}"),
        insecure=bool(body.get("insecure-skip-tls-verify")),
        tls_server_name=str(body.get("tls-server-name") or ""),
        exec_extension=extension,
    )


def _exec(entry: _Entry, name: str) -> ExecConfig:
    spec = entry.body["exec"]
    where = f"kubeconfig {entry.source}: user {name!r}"
    if not isinstance(spec, dict) or not spec.get("command"):
        raise UsageError(f"{where}: exec needs a command")
    api_version = str(spec.get("apiVersion") or "")
    if api_version not in EXEC_API_VERSIONS:
        raise UsageError(
            f"{where}: exec apiVersion {api_version or '(none)'!r} is not supported: "
            f"use one of {', '.join(EXEC_API_VERSIONS)} (v1alpha1 was removed in Kubernetes 1.24)"
        )
    mode = spec.get("interactiveMode")
    if not mode and api_version.endswith("/v1"):
        raise UsageError(f"{where}: exec interactiveMode is required with {api_version}: add 'Never'")
    mode = str(mode or "IfAvailable")
    if mode not in INTERACTIVE_MODES:
        raise UsageError(f"{where}: exec interactiveMode must be one of {', '.join(INTERACTIVE_MODES)}")
    command = str(spec["command"])
    # as kubectl: a command with a path separator is relative to the kubeconfig, a bare name is on PATH
    if os.sep in command or "/" in command:
        command = str(entry.base / command)
    env = tuple(
        (str(item["name"]), str(item.get("value") or ""))
        for item in spec.get("env") or []
        if isinstance(item, dict) and item.get("name")
    )
    return ExecConfig(
        command=command,
        api_version=api_version,
        args=tuple(str(a) for a in spec.get("args") or []),
        env=env,
        install_hint=str(spec.get("installHint") or ""),
        provide_cluster_info=bool(spec.get("provideClusterInfo")),
        interactive_mode=mode,
    )


def _user(entry: _Entry, name: str, cluster: Cluster, origin: str) -> Credentials:
    body = entry.body
    where = f"kubeconfig {entry.source}: user {name!r}"
    if body.get("auth-provider"):
        provider = body["auth-provider"].get("name", "") if isinstance(body["auth-provider"], dict) else ""
        raise UsageError(
            f"{where} uses the auth-provider {provider!r}; kubectl removed built-in auth providers in "
            "Kubernetes 1.26: switch the user to the provider's exec plugin (for example "
            "gke-gcloud-auth-plugin, kubelogin for Azure, or an OIDC exec plugin)"
        )
    methods = [
        method
        for method, keys in (("token", ("token", "tokenFile")), ("basic", ("username", "password")))
        if any(body.get(k) for k in keys)
    ]
    if body.get("exec"):
        methods.append("exec")
    if len(methods) > 1:
        raise UsageError(f"{where} has more than one authentication method ({', '.join(methods)}): keep one")
    token = str(body["token"]) if body.get("token") else None
    basic = (str(body.get("username") or ""), str(body.get("password") or ""))
    return Credentials(
        cluster=cluster,
        origin=origin,
        client_cert=_pem(entry, "client-certificate", f"user {name!r}"),
        client_key=_pem(entry, "client-key", f"user {name!r}"),
        token=token,
        token_file=entry.base / str(body["tokenFile"]) if body.get("tokenFile") and not token else None,
        basic=basic if "basic" in methods else None,
        exec=_exec(entry, name) if body.get("exec") else None,
    )


def select(merged: Merged, context: str | None = None) -> Credentials:
    """The credentials of ``context`` (default: the current context) in merged kubeconfigs."""
    name = context or merged.current_context
    if not name:
        raise UsageError(f"{merged.where} has no current-context: set one (kubectl config use-context)")
    ctx = merged.contexts.get(name)
    if ctx is None:
        raise UsageError(f"{merged.where} has no context named {name!r}: check the name or the files")
    cluster_name, user_name = str(ctx.body.get("cluster") or ""), str(ctx.body.get("user") or "")
    found = merged.clusters.get(cluster_name)
    if found is None:
        raise UsageError(
            f"{merged.where}: context {name!r} names cluster {cluster_name!r}, which none defines"
        )
    cluster = _cluster(found, cluster_name)
    origin = f"{merged.where} (context {name!r})"
    if not user_name:
        return Credentials(cluster=cluster, origin=origin)
    user = merged.users.get(user_name)
    if user is None:
        raise UsageError(f"{merged.where}: context {name!r} names user {user_name!r}, which none defines")
    return _user(user, user_name, cluster, origin)


def in_cluster(*, directory: Path = SA_DIR, environ: Mapping[str, str] = os.environ) -> Credentials:
    """The Pod's service account; its token file is re-read when it rotates (``runner.kube.auth``)."""
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        raise UsageError("no kubeconfig and not running in a cluster: pass --kubeconfig or set KUBECONFIG")
    host = f"[{host}]" if ":" in host else host
    return Credentials(
        cluster=Cluster(server=f"https://{host}:{port}", ca=directory / "ca.crt"),
        origin=f"the in-cluster service account ({directory})",
        token_file=directory / "token",
    )


def load(
    path: Path | None,
    context: str | None = None,
    *,
    environ: Mapping[str, str] = os.environ,
    sa_dir: Path = SA_DIR,
) -> Credentials:
    """From ``path``, else the merged ``$KUBECONFIG`` or ``~/.kube/config``; in-cluster when none exists."""
    candidates = files(path, environ)
    if path is not None and not path.is_file():
        raise UsageError(f"kubeconfig {path} does not exist: check --kubeconfig")
    existing = [f for f in candidates if f.is_file()]
    if not existing:
        try:
            return in_cluster(directory=sa_dir, environ=environ)
        except UsageError:
            if not environ.get("KUBECONFIG"):
                raise
            # kubectl skips missing files in the list; when every one is missing, say so
            listed = ", ".join(str(f) for f in candidates) or repr(environ["KUBECONFIG"])
            raise UsageError(
                f"none of the files in KUBECONFIG exists ({listed}) and not running in a cluster: "
                "fix KUBECONFIG or pass --kubeconfig"
            ) from None
    return select(merge([(f, _read(f)) for f in existing]), context)
