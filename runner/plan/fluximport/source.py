"""An OCIRepository (``source.toolkit.fluxcd.io/v1``) as the source half of a Sync's spec.

Pure. The reference becomes the URL's tag or digest, or ``semver`` (Flux's precedence:
digest, then semver, then tag, else ``latest``); credentials, CA and proxy keep their
Secret names; ``verify`` keeps its Secret of keys, and a keyless ``matchOIDCIdentity`` is
carried so that every certificate Flux accepts is accepted: Flux (cosign) matches each
regexp anywhere in the value, lockgate matches the whole value, so ``S`` is written
``.*(?:S).*`` unless it is anchored at both ends already. An OCIRepository without
``verify`` is refused unless ``--allow-unsigned``, which writes ``insecureSkip`` and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from runner.plan.fluximport.objects import FluxObject, format_duration, get, parse_duration, ref_name
from runner.plan.fluximport.report import Report, RowClass

#: Flux's content layer (``flux push artifact``); lockgate extracts it, else the first layer
FLUX_CONTENT = "application/vnd.cncf.flux.content.v1.tar+gzip"
#: CRD defaults: a field at its default is the same as an absent one
DEFAULT_TIMEOUT = 60.0
#: every spec field of source-controller v1.9.5's OCIRepository
KNOWN = frozenset(
    {
        "url", "ref", "layerSelector", "provider", "secretRef", "verify", "serviceAccountName",
        "certSecretRef", "proxySecretRef", "interval", "timeout", "ignore", "insecure", "suspend",
    }
)  # fmt: skip


@dataclass
class Source:
    """The Sync spec fields an OCIRepository gives, and why it cannot be carried (if so)."""

    spec: dict[str, Any] = field(default_factory=dict)
    #: the reason the object cannot be a sync's source ("" : it can)
    unsupported: str = ""
    #: it has no ``spec.verify`` (Flux accepts unsigned artifacts)
    unsigned: bool = False
    #: Secrets it names, by field path
    secrets: dict[str, str] = field(default_factory=dict)


def unanchored(pattern: str) -> str:
    """A whole-value regexp accepting what Go's ``regexp.MatchString(pattern, value)`` accepts."""
    if pattern.startswith("^") and re.search(r"(?<!\\)\$$", pattern):
        return pattern
    return f".*(?:{pattern}).*"


def url_of(obj: FluxObject, report: Report, spec: dict[str, Any]) -> None:
    """``spec.url`` (and ``semver``) from the OCIRepository's url and ref."""
    url = str(obj.spec.get("url", "")).rstrip("/")
    ref = obj.spec.get("ref") or {}
    digest, semver, tag = (str(ref.get(k) or "") for k in ("digest", "semver", "tag"))
    if digest:
        spec["url"] = f"{url}@{digest}"
        for name, value in (("semver", semver), ("tag", tag)):
            if value:
                report.add(
                    obj.ref, f"spec.ref.{name}", RowClass.DROPPED, "ref.digest wins over it, as in Flux"
                )
    elif semver:
        spec["url"] = url
        spec["semver"] = semver
        if tag:
            report.add(obj.ref, "spec.ref.tag", RowClass.DROPPED, "ref.semver wins over it, as in Flux")
    else:
        spec["url"] = f"{url}:{tag or 'latest'}"


def _verify(obj: FluxObject, report: Report, result: Source, *, allow_unsigned: bool) -> None:
    verify = obj.spec.get("verify")
    if not isinstance(verify, dict):
        result.unsigned = True
        if allow_unsigned:
            result.spec["verify"] = {"insecureSkip": True}
            report.add(
                obj.ref,
                "spec.verify",
                RowClass.SECURITY,
                "no signature verification (Flux applies unsigned artifacts): written as "
                "verify.insecureSkip; sign in CI (lockgate push --sign) and set verify",
            )
        return
    provider = str(verify.get("provider") or "cosign")
    if provider != "cosign":
        result.unsupported = f"verify.provider {provider!r}: lockgate verifies cosign signatures only"
        return
    keys = ref_name(verify.get("secretRef"))
    identities = [i for i in verify.get("matchOIDCIdentity") or [] if isinstance(i, dict)]
    if ref_name(verify.get("trustedRootSecretRef")):
        result.unsupported = (
            "verify.trustedRootSecretRef: lockgate reads a private Sigstore's trusted root from a file "
            "(verify.trustedRoot), not from a Secret"
        )
        return
    if keys:
        result.spec["verify"] = {"secretRef": {"name": keys}}
        result.secrets["spec.verify.secretRef"] = keys
        if identities:
            report.add(
                obj.ref,
                "spec.verify.matchOIDCIdentity",
                RowClass.DROPPED,
                "with verify.secretRef Flux verifies with the keys; the identities are not used",
            )
        return
    if len(identities) > 1:
        result.unsupported = (
            f"verify.matchOIDCIdentity has {len(identities)} entries (any one matching suffices in Flux); "
            "a lockgate Sync takes one issuer and identity"
        )
        return
    if not identities:
        result.spec["verify"] = {"issuerRegexp": ".*", "identityRegexp": ".*"}
        report.add(
            obj.ref,
            "spec.verify",
            RowClass.SECURITY,
            "keyless without matchOIDCIdentity accepts any Sigstore identity (as in Flux): written as "
            "issuerRegexp and identityRegexp '.*'; pin the workflow that signs",
        )
        return
    issuer, subject = str(identities[0].get("issuer", "")), str(identities[0].get("subject", ""))
    result.spec["verify"] = {"issuerRegexp": unanchored(issuer), "identityRegexp": unanchored(subject)}
    loose = [name for name, value in (("issuer", issuer), ("subject", subject)) if unanchored(value) != value]
    if loose:
        report.add(
            obj.ref,
            "spec.verify.matchOIDCIdentity[0]",
            RowClass.SECURITY,
            f"{' and '.join(loose)} matched anywhere in the value, as Flux does (written .*(?:...).*); "
            "anchor them (^...$) to accept only the workflow meant",
        )


def map_source(obj: FluxObject, report: Report, *, allow_unsigned: bool) -> Source:
    result = Source()
    spec = result.spec
    url_of(obj, report, spec)
    if get(obj.spec, "ref", "semverFilter"):
        result.unsupported = (
            "ref.semverFilter: lockgate's semver has no tag filter, so it would pick other tags"
        )
    selector = obj.spec.get("layerSelector") or {}
    if str(selector.get("operation") or "extract") == "copy":
        result.unsupported = (
            "layerSelector.operation copy: the artifact is handed on whole (a Helm chart for a "
            "HelmRelease chartRef), not applied"
        )
    media = str(selector.get("mediaType") or "")
    if media and media != FLUX_CONTENT:
        report.add(
            obj.ref,
            "spec.layerSelector.mediaType",
            RowClass.SEMANTIC,
            f"lockgate extracts the layer of media type {FLUX_CONTENT}, else the first layer, not {media}",
        )
    provider = str(obj.spec.get("provider") or "generic")
    if provider != "generic":
        spec["provider"] = provider
    for name in ("secretRef", "certSecretRef", "proxySecretRef"):
        secret = ref_name(obj.spec.get(name))
        if secret:
            spec[name] = {"name": secret}
            result.secrets[f"spec.{name}"] = secret
    if obj.spec.get("insecure"):
        spec["insecure"] = True
        report.add(
            obj.ref,
            "spec.insecure",
            RowClass.SEMANTIC,
            "lockgate reads the registry over plain http; it never skips TLS verification (Flux does when "
            "the registry speaks https): give an https registry's CA in certSecretRef instead",
        )
    interval = parse_duration(str(obj.spec.get("interval", "")))
    if interval is not None:
        spec["interval"] = format_duration(max(interval, 1.0))
    timeout = obj.spec.get("timeout")
    if timeout is not None and parse_duration(str(timeout)) != DEFAULT_TIMEOUT:
        report.add(obj.ref, "spec.timeout", RowClass.DROPPED, "lockgate has no separate pull timeout")
    if obj.spec.get("ignore"):
        report.add(
            obj.ref,
            "spec.ignore",
            RowClass.DROPPED,
            "lockgate applies the artifact's files as pushed: leave them out at push time "
            "(.sourceignore, lockgate push --ignore-paths)",
        )
    if obj.spec.get("serviceAccountName"):
        report.add(
            obj.ref,
            "spec.serviceAccountName",
            RowClass.DROPPED,
            "registry credentials from a ServiceAccount's imagePullSecrets: put them in a "
            "kubernetes.io/dockerconfigjson Secret and set secretRef (provider identities come from the "
            "Sync's serviceAccountName)",
        )
    if obj.spec.get("suspend"):
        spec["suspend"] = True
    _verify(obj, report, result, allow_unsigned=allow_unsigned)
    for unknown in sorted(set(obj.spec) - KNOWN):
        report.add(obj.ref, f"spec.{unknown}", RowClass.DROPPED, "a field lockgate import does not know")
    return result
