"""The parts of a ``Sync``'s spec that follow Flux's Kustomization one to one: health checks
and CEL health expressions, ``ignore`` rules and drift detection, ``postBuild`` substitution,
the overlays (``patches``, ``images``, ``commonMetadata``) and SOPS ``decryption``.

Declared as ``runner.pipeline.documents`` declares the rest (``lockgate.model.attr``); the
``SyncSpec`` there holds them, and the schema and reference are rendered from the same
declarations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lockgate.model import attr


@dataclass(frozen=True)
class HealthCheck:
    """An extra object to wait for after applying (as Flux's healthChecks)."""

    api_version: str = attr("apiVersion", "The object's apiVersion.", required=True)
    kind: str = attr("kind", "The object's kind.", required=True)
    name: str = attr("name", "The object's name.", required=True)
    namespace: str | None = attr("namespace", "The object's namespace (namespaced kinds).")


@dataclass(frozen=True)
class HealthCheckExpr:
    """CEL expressions that tell the health of a custom resource kind (Flux's healthCheckExprs)."""

    api_version: str = attr(
        "apiVersion",
        "The kind's apiVersion; only its group is matched, so every served version is covered.",
        required=True,
    )
    kind: str | None = attr(
        "kind",
        "The kind; without it the entry covers every kind of the group, and an entry naming the kind "
        "wins over it.",
    )
    current: str = attr("current", "CEL: true when the object is healthy (Current).", required=True)
    in_progress: str | None = attr("inProgress", "CEL: true while the object is still reconciling.")
    failed: str | None = attr("failed", "CEL: true when the object failed (fails the pass at once).")


@dataclass(frozen=True)
class IgnoreTarget:
    """Which objects an ignore rule applies to (Flux's kustomize Selector); all fields must match."""

    group: str | None = attr("group", 'API group, a Go regular expression matched whole ("" is core).')
    version: str | None = attr("version", "API version (v1, v1beta1), a Go regular expression matched whole.")
    kind: str | None = attr("kind", "Kind, a Go regular expression matched whole.")
    name: str | None = attr("name", "Name, a Go regular expression matched whole.")
    namespace: str | None = attr("namespace", "Namespace, a Go regular expression matched whole.")
    label_selector: str | None = attr(
        "labelSelector", "A Kubernetes label selector on the object's labels (app=web,tier in (a,b))."
    )
    annotation_selector: str | None = attr(
        "annotationSelector", "A Kubernetes label selector on the object's annotations."
    )


@dataclass(frozen=True)
class IgnoreRule:
    """Fields left to other writers (Flux's Kustomization spec.ignore)."""

    paths: tuple[str, ...] = attr(
        "paths",
        "JSON Pointers (RFC 6901) to the fields, e.g. /spec/replicas; '/' inside a key is written "
        "~1 (/metadata/annotations/example.com~1owner) and '~' is ~0.",
        required=True,
        factory=tuple,
    )
    target: IgnoreTarget | None = attr(
        "target", "The objects the paths are ignored on; omitted: every object of the sync."
    )


@dataclass(frozen=True)
class DriftDetection:
    """What a pass does with changes made in the cluster (HelmRelease's driftDetection)."""

    mode: Literal["enabled", "warn", "disabled"] = attr(
        "mode",
        "enabled: correct drift; warn: report it (status, Event, metric, notification) and change "
        "nothing; disabled: neither. Drift is a difference from what the sync last applied to an "
        "object the artifact has not changed since; a changed object is applied in every mode.",
        default="enabled",
    )


@dataclass(frozen=True)
class SubstituteReference:
    """A ConfigMap or Secret of the runner namespace whose entries are variables (Flux's substituteFrom)."""

    kind: Literal["ConfigMap", "Secret"] = attr("kind", "ConfigMap or Secret.", required=True)
    name: str = attr("name", "Its name.", required=True, pattern=r"^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$")
    optional: bool = attr(
        "optional", "A missing one counts as empty instead of failing the pass.", default=False
    )


@dataclass(frozen=True)
class PostBuild:
    """Variable substitution in every object, with Flux's envsubst semantics (strict)."""

    substitute: dict[str, str] = attr(
        "substitute",
        "Variables by name; they win over substituteFrom.",
        factory=dict,
    )
    substitute_from: tuple[SubstituteReference, ...] = attr(
        "substituteFrom",
        "ConfigMaps and Secrets of variables, read at each pass; a later one wins over an earlier one.",
        factory=tuple,
    )
    substitute_strategy: Literal["WithVariables", "Always"] = attr(
        "substituteStrategy",
        "WithVariables: substitute only when at least one variable is defined; Always: also without "
        "any (for templates that only use defaults), as Flux.",
        default="WithVariables",
    )


@dataclass(frozen=True)
class PatchTarget:
    """The objects a patch applies to (Flux's and kustomize's Selector); every field set must match."""

    group: str | None = attr("group", "The API group, a regular expression over the whole group.")
    version: str | None = attr("version", "The API version, a regular expression over the whole version.")
    kind: str | None = attr("kind", "The kind, a regular expression over the whole kind.")
    name: str | None = attr("name", "The name (before namePrefix), a regular expression over the whole name.")
    namespace: str | None = attr(
        "namespace", "The namespace (before targetNamespace), a regular expression over the whole namespace."
    )
    label_selector: str | None = attr(
        "labelSelector", "A label selector expression (app=web,tier!=db), over the labels."
    )
    annotation_selector: str | None = attr(
        "annotationSelector", "A label selector expression, over the annotations."
    )


@dataclass(frozen=True)
class Patch:
    """An inline kustomize patch (as Flux's Kustomization patches)."""

    patch: str = attr(
        "patch",
        "A strategic merge patch (a YAML object) or a JSON 6902 patch (a list of operations); it may "
        "hold ${var}, substituted after the build.",
        required=True,
    )
    target: PatchTarget | None = attr(
        "target",
        "The objects to patch; required for a JSON 6902 patch. Without it a strategic merge patch "
        "patches the object it names. A target that selects nothing patches nothing (a note, not an "
        "error, as in Flux).",
    )


@dataclass(frozen=True)
class Image:
    """An image override (kustomize's images, as Flux's Kustomization images)."""

    name: str = attr("name", "The image name as the manifests write it, without tag.", required=True)
    new_name: str | None = attr("newName", "The name to write instead.")
    new_tag: str | None = attr("newTag", "The tag to write instead.")
    digest: str | None = attr(
        "digest", "The digest to write (sha256:...); with newTag too the image is written TAG@DIGEST."
    )


@dataclass(frozen=True)
class CommonMetadata:
    """Labels and annotations set on every object of the sync (as Flux's commonMetadata)."""

    labels: dict[str, str] = attr("labels", "Labels, overwriting the same keys.", factory=dict)
    annotations: dict[str, str] = attr("annotations", "Annotations, overwriting the same keys.", factory=dict)


@dataclass(frozen=True)
class Decryption:
    """SOPS decryption of the objects before they are applied (as Flux's Kustomization decryption)."""

    provider: Literal["sops"] = attr("provider", "sops (the only provider).", required=True)
    secret_ref: str | None = attr(
        "secretRef",
        "A Secret of the runner namespace whose every *.agekey entry holds age identities "
        "(age-keygen output), as Flux. Read at each pass, held in memory only.",
        reference=True,
    )
    check_mac: bool | None = attr(
        "checkMAC",
        "Check each encrypted object's SOPS MAC (whole-document integrity). Default: checked for "
        "objects read from the artifact's files, not for objects a kustomization rebuilt (kustomize "
        "sorts keys and adds fields, so their MAC cannot match; Flux never checks it); every "
        "encrypted value stays authenticated by AES-GCM with its path either way. true or false "
        "decides for every object. Secret entries are always checked.",
    )
