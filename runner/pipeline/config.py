"""What to reconcile, from flags or from a ``--config`` file of ``Sync`` documents.

A Sync document (``apiVersion: lockgate.dev/v1alpha1``, ``kind: Sync``) holds the same
settings as the flags, in camelCase under ``spec``; ``metadata.name`` is the sync's name.
Both routes produce ``reconcile.SyncOptions``, so the CLI stays one library call per sync; the
verification options become a policy through the shared ``lockgate.signing.options``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lockgate import manifests
from lockgate.errors import UsageError
from lockgate.signing.options import Spelling, VerifyOptions, build_policy
from runner.pipeline import source
from runner.pipeline.reconcile import SyncOptions
from runner.plan import prune_plan

API_VERSION = "lockgate.dev/v1alpha1"
_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?$")


def parse_duration(text: str) -> float:
    """Go-style ``1h30m``, ``5m``, ``45s``, or plain seconds."""
    value = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", value):
        return float(value)
    found = _DURATION.match(value)
    if not value or not found or not any(found.groups()):
        raise UsageError(f"invalid duration {text!r}: expected e.g. 30s, 5m, 1h30m")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in found.groups())
    return hours * 3600 + minutes * 60 + seconds


def sync_options(
    *,
    name: str,
    url: str,
    verify: VerifyOptions,
    spelling: Spelling = source.FLAGS,
    semver: str | None = None,
    path: str | None = None,
    namespace: str | None = None,
    target_namespace: str | None = None,
    prune: bool = False,
    wait: bool = False,
    timeout: str = "5m",
    force: bool = False,
    dry_run: bool = False,
    allow_mass_prune: bool = False,
    max_prune_share: float = prune_plan.DEFAULT_MAX_SHARE,
    concurrency: int = 8,
) -> SyncOptions:
    if not 0 < max_prune_share <= 1:
        raise UsageError(f"--max-prune-share {max_prune_share}: expected a share in (0, 1]")
    return SyncOptions(
        name=name,
        source=source.SourceSpec(
            url=url,
            semver=semver,
            path=path,
            policy=build_policy(verify, spelling),
            insecure_skip_verify=verify.insecure_skip,
            spelling=spelling,
        ),
        namespace=namespace,
        target_namespace=target_namespace,
        prune=prune,
        wait=wait,
        timeout=parse_duration(timeout),
        force=force,
        dry_run=dry_run,
        prune_options=prune_plan.PruneOptions(max_share=max_prune_share, allow_mass_prune=allow_mass_prune),
        concurrency=concurrency,
    )


def _spec_value(spec: dict[str, Any], name: str, kind: type, where: str) -> Any:
    value = spec.get(name)
    if value is not None and not isinstance(value, kind):
        raise UsageError(f"{where}: spec.{name} must be a {kind.__name__}")
    return value


def from_document(doc: dict[str, Any], where: str, *, dry_run: bool) -> SyncOptions:
    if doc.get("apiVersion") != API_VERSION or doc.get("kind") != "Sync":
        raise UsageError(f"{where}: expected apiVersion {API_VERSION}, kind Sync")
    name = (doc.get("metadata") or {}).get("name")
    spec = doc.get("spec")
    if not isinstance(name, str) or not isinstance(spec, dict) or not isinstance(spec.get("url"), str):
        raise UsageError(f"{where}: a Sync needs metadata.name and spec.url")
    verify = spec.get("verify") or {}
    if not isinstance(verify, dict):
        raise UsageError(f"{where}: spec.verify must be a mapping")
    values = {
        "semver": _spec_value(spec, "semver", str, where),
        "path": _spec_value(spec, "path", str, where),
        "namespace": _spec_value(spec, "namespace", str, where),
        "target_namespace": _spec_value(spec, "targetNamespace", str, where),
    }
    options = VerifyOptions(
        key=Path(verify["key"]) if verify.get("key") else None,
        identity=verify.get("identity"),
        identity_regexp=verify.get("identityRegexp"),
        issuer=verify.get("issuer"),
        issuer_regexp=verify.get("issuerRegexp"),
        trusted_root=Path(verify["trustedRoot"]) if verify.get("trustedRoot") else None,
        insecure_skip=bool(verify.get("insecureSkip", False)),
    )
    try:
        return sync_options(
            name=name,
            url=spec["url"],
            spelling=source.FIELDS,
            verify=options,
            prune=bool(spec.get("prune", False)),
            wait=bool(spec.get("wait", False)),
            timeout=str(spec.get("timeout", "5m")),
            force=bool(spec.get("force", False)),
            dry_run=dry_run,
            allow_mass_prune=bool(spec.get("allowMassPrune", False)),
            max_prune_share=float(spec.get("maxPruneShare", prune_plan.DEFAULT_MAX_SHARE)),
            **values,
        )
    except UsageError as exc:
        raise UsageError(f"{where}: {exc.message}") from None


def load(path: Path, *, dry_run: bool = False) -> list[SyncOptions]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--config {path}: {exc.strerror}") from None
    docs = [(line, doc) for line, doc in manifests.parse_documents(text, str(path)) if doc is not None]
    if not docs:
        raise UsageError(f"--config {path}: no Sync documents")
    syncs = [
        from_document(doc, f"{path}:{line}", dry_run=dry_run) for line, doc in docs if isinstance(doc, dict)
    ]
    names = [s.name for s in syncs]
    if len(set(names)) != len(names):
        raise UsageError(f"--config {path}: sync names must be unique")
    return syncs
