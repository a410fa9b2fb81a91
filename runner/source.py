"""Acquire the manifests of one pass: resolve, verify, pull by digest, extract, render, load.

The reference is resolved once (a tag, the highest tag in a semver range with Flux
OCIRepository semantics, or a digest) and everything after uses the digest. Verification
fails closed: without a policy the pass is refused unless the caller explicitly skips it.
Nothing here touches the cluster, so a refused artifact leaves the cluster as it was.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lockgate import manifests, registry, semver
from lockgate.artifact import extract, manifest
from lockgate.errors import RenderError, ResolveError, UsageError, VerificationError
from lockgate.manifests import K8sObject
from lockgate.registry.oci import ImageManifest

if TYPE_CHECKING:
    from lockgate.signing.policy import Policy

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
REVISION_ANNOTATION = "org.opencontainers.image.revision"


@dataclass(frozen=True)
class SourceSpec:
    url: str
    semver: str | None = None
    path: str | None = None
    policy: Policy | None = None
    insecure_skip_verify: bool = False


@dataclass(frozen=True)
class Fetched:
    reference: registry.Reference
    digest: str
    #: Flux's OCIRepository revision: ``<tag>@sha256:<hex>``, or ``sha256:<hex>`` for a digest ref
    revision: str
    source_revision: str
    verified_by: str
    objects: list[K8sObject]

    @property
    def url(self) -> str:
        return f"oci://{self.reference.name}@{self.digest}"


def latest_in_range(range_: str, tags: list[str], *, where: str) -> str:
    """The highest tag satisfying ``range_`` (Flux: strict semver, optional ``v``)."""
    try:
        constraints = semver.Constraints.parse(range_)
    except semver.SemverError as exc:
        raise UsageError(f"--semver {range_!r}: {exc}") from None
    best: semver.Version | None = None
    for tag in tags:
        version = semver.parse_tag(tag)
        if version is None or not constraints.check(version):
            continue
        order = 1 if best is None else version.compare(best)
        if order > 0 or (best is not None and order == 0 and version.original < best.original):
            best = version
    if best is None:
        raise ResolveError(f"{where}: no tag matches the semver range {range_!r} ({len(tags)} tags listed)")
    return best.original


def resolve(spec: SourceSpec, client: registry.RegistryClient) -> registry.Reference:
    """The reference with its tag chosen (semver), not yet its digest."""
    ref = registry.parse(spec.url)
    if spec.semver:
        if ref.digest:
            raise UsageError("--semver and a digest reference are exclusive: the digest already pins it")
        ref = ref.with_tag(latest_in_range(spec.semver, client.list_tags(ref.repository), where=str(ref)))
    return ref


def _pin(spec: SourceSpec, ref: registry.Reference, client: registry.RegistryClient) -> tuple[str, str]:
    """(digest, who verified it); verification comes first and fails closed."""
    if spec.policy is not None:
        # imported here: sigstore costs a third of a second of start-up, needed only to verify
        from lockgate.signing import verify as verify_mod

        verified = verify_mod.verify(ref, spec.policy, client=client)
        return verified.digest, verified.signer
    if not spec.insecure_skip_verify:
        raise VerificationError(
            f"no verification policy for {ref}: pass --verify-key or --verify-identity/--verify-issuer, "
            "or --insecure-skip-verify to apply unsigned artifacts (not recommended)"
        )
    return client.resolve(ref), "nobody (--insecure-skip-verify)"


def _extract(
    client: registry.RegistryClient, ref: registry.Reference, digest: str, dest: Path
) -> ImageManifest:
    fetched = client.get_manifest(ref.repository, digest)
    parsed = ImageManifest.from_bytes(fetched.content, where=str(ref))
    layer = manifest.select_layer(parsed, where=str(ref.with_digest(digest)))
    with tempfile.TemporaryFile(prefix="lockgate-layer-") as blob:
        size = client.download_blob(ref.repository, layer.digest, blob, max_size=layer.size)
        if size != layer.size:
            raise VerificationError(
                f"{ref}: layer {layer.digest} is {size} bytes, the manifest says {layer.size}"
            )
        blob.seek(0)
        extract.extract(blob, dest)
    return parsed


def _program(name: str) -> str:
    """``$LOCKGATE_<NAME>`` when set (an explicit choice is never silently replaced), else PATH."""
    variable = f"LOCKGATE_{name.upper()}"
    chosen = os.environ.get(variable)
    if chosen:
        if not (os.path.isfile(chosen) and os.access(chosen, os.X_OK)):
            raise RenderError(
                f"the artifact holds a kustomization, and {variable}={chosen} is not an executable: "
                f"point it at the {name} program or unset it to use {name} from PATH"
            )
        return chosen
    found = shutil.which(name)
    if not found:
        raise RenderError(
            f"the artifact holds a kustomization, and building it needs {name}: "
            f"install {name} on PATH or set {variable}"
        )
    return found


def render(root: Path, path: str | None) -> list[K8sObject]:
    """The objects under ``root/path``: ``kustomize build`` when it holds a kustomization."""
    base = root.resolve()
    directory = (base / path).resolve() if path else base
    if not directory.is_relative_to(base):
        raise UsageError(f"--path {path!r} leaves the artifact")
    if not directory.exists():
        raise RenderError(f"--path {path!r}: the artifact has no such directory")
    if directory.is_dir() and any((directory / f).is_file() for f in KUSTOMIZATION_FILES):
        shown = path or "."
        try:
            proc = subprocess.run(
                [_program("kustomize"), "build", str(directory)], capture_output=True, text=True, timeout=600
            )
        except OSError as exc:
            raise RenderError(f"cannot run kustomize ({exc.strerror})") from None
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
            raise RenderError(f"kustomize build {shown} failed (exit {proc.returncode}):\n{tail}")
        objects = manifests.load_text(proc.stdout, f"kustomize build {shown}")
    else:
        objects = manifests.load([directory], relative_to=base)
    seen: dict[manifests.ObjectKey, K8sObject] = {}
    for obj in objects:
        if obj.key in seen:
            raise RenderError(f"{obj.origin}: duplicate object {obj.key} (first at {seen[obj.key].origin})")
        seen[obj.key] = obj
    return objects


@contextmanager
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="lockgate-reconcile-") as tmp:
        yield Path(tmp)


def fetch(spec: SourceSpec, *, client: registry.RegistryClient | None = None) -> Fetched:
    """Resolve, verify, pull by digest, extract into a temporary directory and load the objects."""
    base = registry.parse(spec.url)
    client = client or registry.RegistryClient.for_reference(base)
    ref = resolve(spec, client)
    digest, signer = _pin(spec, ref, client)
    with workdir() as tmp:
        parsed = _extract(client, ref, digest, tmp / "artifact")
        objects = render(tmp / "artifact", spec.path)
    revision = f"{ref.tag}@{digest}" if ref.tag and not ref.digest else digest
    return Fetched(
        reference=ref,
        digest=digest,
        revision=revision,
        source_revision=parsed.annotations.get(REVISION_ANNOTATION, ""),
        verified_by=signer,
        objects=objects,
    )
