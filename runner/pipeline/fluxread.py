"""Reading Flux objects for ``lockgate import``: from a fleet repository's files, or from the cluster.

The I/O half of ``runner.plan.fluximport``. Files: every ``.yaml``/``.yml`` under the
directories given (``.git`` and symbolic links are never followed), each document parsed
within ``lockgate.bounded``'s limits, ``List`` documents (``kubectl get -o yaml``) opened;
kept are the documents of Flux's API groups and the ``kustomize-controller`` Deployment
(whose flags become the Runner's). The cluster: the same kinds listed through the API
server (only what its CRDs serve), plus that Deployment in ``flux-system``. Either way the
same object twice is refused, naming both places.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from lockgate import bounded
from lockgate.errors import UsageError
from lockgate.manifests import YAML_SUFFIXES
from runner.kube.client import Kube
from runner.kube.discovery import Resource
from runner.kube.errors import KubeError
from runner.plan.fluximport import controller, objects
from runner.plan.fluximport.objects import FluxObject

#: the Flux namespace where the controllers' Deployments are looked for
FLUX_NAMESPACE = "flux-system"
#: what ``--from-cluster`` lists: (apiVersion, kind), each only when the cluster serves it
KINDS = (
    ("source.toolkit.fluxcd.io/v1", "OCIRepository"),
    ("source.toolkit.fluxcd.io/v1", "GitRepository"),
    ("source.toolkit.fluxcd.io/v1", "Bucket"),
    ("source.toolkit.fluxcd.io/v1", "HelmRepository"),
    ("source.toolkit.fluxcd.io/v1", "ExternalArtifact"),
    ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
    ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
    ("notification.toolkit.fluxcd.io/v1beta3", "Provider"),
    ("notification.toolkit.fluxcd.io/v1beta3", "Alert"),
    ("notification.toolkit.fluxcd.io/v1", "Receiver"),
    ("image.toolkit.fluxcd.io/v1", "ImageRepository"),
    ("image.toolkit.fluxcd.io/v1", "ImagePolicy"),
    ("image.toolkit.fluxcd.io/v1", "ImageUpdateAutomation"),
)
DEPLOYMENT = Resource("apps", "v1", "Deployment", "deployments", True)


def _wanted(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    if objects.is_flux(doc):
        return True
    meta = doc.get("metadata") or {}
    return doc.get("kind") == "Deployment" and meta.get("name") == controller.DEPLOYMENT


def _files(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        raise UsageError(f"--from-files {root}: no such directory or file")
    for directory, dirs, files in os.walk(root):  # os.walk never follows directory symlinks
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(files):
            path = Path(directory) / name
            if name.endswith(YAML_SUFFIXES) and not path.is_symlink():
                yield path


def _documents(doc: Any) -> Iterator[Any]:
    if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            yield from _documents(item)
    else:
        yield doc


def _in(obj: FluxObject, namespace: str | None) -> bool:
    return namespace is None or obj.namespace == namespace or obj.kind == "Deployment"


def _unique(found: Iterable[tuple[FluxObject, str]]) -> list[FluxObject]:
    seen: dict[tuple[str, str, str], str] = {}
    result: list[FluxObject] = []
    for obj, where in found:
        if obj.key in seen:
            raise UsageError(
                f"{where}: {obj.ref} is also at {seen[obj.key]}: one object, one definition (remove one, or "
                "import the directories of one cluster only)"
            )
        seen[obj.key] = where
        result.append(obj)
    return result


def from_files(roots: Iterable[Path], *, namespace: str | None = None) -> list[FluxObject]:
    """The Flux objects of the YAML files under ``roots``; ``namespace``: only that one's."""
    found: list[tuple[FluxObject, str]] = []
    for root in roots:
        for path in _files(root):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise UsageError(f"{path}: cannot read ({exc})") from None
            if "toolkit.fluxcd.io" not in text and controller.DEPLOYMENT not in text:
                continue  # most of a fleet repository: the applications' own manifests
            for line, doc in bounded.yaml_documents(text, str(path), error=UsageError):
                for item in _documents(doc):
                    if _wanted(item):
                        obj = objects.from_document(item)
                        if _in(obj, namespace):
                            found.append((obj, f"{path}:{line}"))
    return _unique(found)


def from_cluster(kube: Kube, *, namespace: str | None = None) -> list[FluxObject]:
    """The Flux objects of the cluster (of ``namespace`` only, if given), and the
    kustomize-controller Deployment of ``flux-system``."""
    found: list[tuple[FluxObject, str]] = []
    for api_version, kind in KINDS:
        if not kube.knows(api_version, kind):
            continue
        res = kube.resource(api_version, kind)
        for item in kube.list_all(res, namespace or ""):
            found.append((objects.from_document(item), "the cluster"))
    try:
        deployment = kube.get(DEPLOYMENT, FLUX_NAMESPACE, controller.DEPLOYMENT)
    except KubeError as exc:
        if exc.status != 403:
            raise
        deployment = None  # may not read Deployments: the flags are unknown, and the report says so
    if deployment is not None:
        deployment.setdefault("apiVersion", "apps/v1")
        deployment.setdefault("kind", "Deployment")
        found.append((objects.from_document(deployment), "the cluster"))
    return _unique(found)
