"""Build and push Flux-format artifacts: one path, or one per directory with ``--each``.

The plan (layer, annotations, manifest bytes, digest) is computed before any network
call; the registry is then asked once whether the tag already holds that digest
("unchanged": nothing is uploaded), otherwise missing blobs are uploaded (HEAD first)
and the manifest is put under the tag and any extra tags.
"""

from __future__ import annotations

import glob
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from action.artifacts import layer as layer_mod
from action.artifacts import signer as signer_mod
from action.artifacts import source as source_mod
from lockgate import progress, registry
from lockgate.artifact import manifest, metadata, pack
from lockgate.errors import UsageError

if TYPE_CHECKING:
    from lockgate.signing.sign import SignedArtifact

ClientFactory = Callable[["registry.Reference"], "registry.RegistryClient"]


class Status(Enum):
    PUSHED = "pushed"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class PushOptions:
    source: str | None = None
    revision: str | None = None
    created: str | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)
    extra_tags: tuple[str, ...] = ()
    build: source_mod.BuildOptions = field(default_factory=source_mod.BuildOptions)
    #: sign the pushed digest (``--sign key|keyless``); also when the push was unchanged
    signer: signer_mod.Signer | None = None


@dataclass(frozen=True)
class PushResult:
    reference: registry.Reference
    digest: str
    status: Status
    uploaded_blobs: int
    tags: tuple[str, ...]
    path: str
    signed: SignedArtifact | None = None
    #: the tree was packed in this run (False: the build cache and the registry made it unnecessary)
    packed: bool = False

    @property
    def url(self) -> str:
        return f"oci://{self.reference.name}@{self.digest}"

    def to_json(self) -> dict[str, Any]:
        """Flux's ``--output json`` fields, plus status, tags and, when signed, the signature."""
        value: dict[str, Any] = {
            "url": self.url,
            "repository": self.reference.name,
            "tag": self.reference.tag,
            "digest": self.digest,
            "status": self.status.value,
            "tags": list(self.tags),
            "path": self.path,
        }
        if self.signed is not None:
            value["signed"] = self.signed.to_json()
        return value


def build_layer(path: str, dest: Path, options: source_mod.BuildOptions) -> pack.Layer:
    """Pack ``path`` (after rendering, if asked) into ``dest`` and validate its YAML."""
    with source_mod.prepare(path, options) as root:
        entries = pack.collect(root, options.pack_options)
        check = None
        if options.validate:
            source_mod.require_yaml(root, entries)
            check = source_mod.syntax_check(root)
        return pack.pack(root, dest, options.pack_options, entries=entries, check=check)


def plan(
    path: str, layer_digest: str, layer_size: int, options: PushOptions, *, per_path: bool = False
) -> manifest.Built:
    origin = Path.cwd() if path == "-" else Path(path)
    provenance = metadata.detect(
        origin, source=options.source, revision=options.revision, created=options.created, per_path=per_path
    )
    annotations = {**provenance.annotations(), **options.annotations}
    return manifest.build(layer_digest, layer_size, annotations)


def push(
    path: str,
    target: registry.Reference,
    client: registry.RegistryClient,
    options: PushOptions | None = None,
    *,
    per_path: bool = False,
) -> PushResult:
    """Build ``path`` and push it to ``target`` (which must name a tag)."""
    options = options or PushOptions()
    if target.tag is None or target.digest is not None:
        raise UsageError(f"{target}: push needs a tag (oci://REGISTRY/REPO:TAG), not a digest")
    for tag in options.extra_tags:
        target.with_tag(tag)
    repo = target.repository
    tags = (target.tag, *options.extra_tags)
    uploaded = 0
    status = Status.UNCHANGED
    with (
        tempfile.TemporaryDirectory(prefix="lockgate-push-") as tmp,
        layer_mod.prepare(path, options.build, Path(tmp) / "artifact.tgz") as tree,
    ):
        built = plan(path, tree.digest, tree.size, options, per_path=per_path)
        if client.head_manifest(repo, target.tag) != built.digest:
            status = Status.PUSHED
            if not client.blob_exists(repo, built.manifest.config.digest):
                client.upload_blob(
                    repo, built.config_blob, digest=built.manifest.config.digest, size=len(built.config_blob)
                )
                uploaded += 1
            if not client.blob_exists(repo, tree.digest):
                planned = tree.digest
                layer = tree.layer()
                if layer.digest != planned:
                    # planned from the build cache: the bytes uploaded decide, if ever they differ
                    built = plan(path, layer.digest, layer.size, options, per_path=per_path)
                task = progress.current().task("uploading", total=layer.size)
                with open(layer.path, "rb") as stream:
                    try:
                        client.upload_blob(
                            repo, progress.Reading.of(stream, task), digest=layer.digest, size=layer.size
                        )
                    finally:
                        task.finish()
                uploaded += 1
            client.put_manifest(repo, target.tag, built.content, built.manifest.media_type)
        for tag in options.extra_tags:
            if client.head_manifest(repo, tag) != built.digest:
                client.put_manifest(repo, tag, built.content, built.manifest.media_type)
                status = Status.PUSHED
        packed = tree.packed is not None
    signed = options.signer.sign(target, built.digest, client) if options.signer is not None else None
    return PushResult(target, built.digest, status, uploaded, tags, path, signed, packed)


def expand_each(pattern: str, target_template: str) -> list[tuple[str, registry.Reference]]:
    """The directories matching ``pattern`` with their target, ``{name}`` replaced by the directory name."""
    if "{name}" not in target_template:
        raise UsageError(
            f"--each needs '{{name}}' in the target, e.g. oci://ghcr.io/org/{{name}}:main "
            f"(got {target_template})"
        )
    directories = sorted(p for p in glob.glob(pattern) if Path(p).is_dir())
    if not directories:
        raise UsageError(f"--each {pattern!r} matches no directory")
    result = []
    for directory in directories:
        name = Path(directory).name
        result.append((directory, registry.parse(target_template.replace("{name}", name))))
    return result


def push_each(
    pattern: str,
    target_template: str,
    client_for: ClientFactory,
    options: PushOptions | None = None,
) -> list[PushResult]:
    """One artifact per directory; revisions come from the last commit touching each directory."""
    targets = expand_each(pattern, target_template)
    return [push(directory, ref, client_for(ref), options, per_path=True) for directory, ref in targets]


def results_json(results: Sequence[PushResult]) -> list[dict[str, Any]]:
    return [r.to_json() for r in results]


def push_targets(
    args: Sequence[str],
    *,
    each: str | None,
    options: PushOptions,
    sign: signer_mod.SignOptions,
    client_for: ClientFactory,
) -> list[PushResult]:
    """``lockgate push PATH TARGET`` or ``lockgate push --each GLOB TEMPLATE``, signing if asked.

    The signer is made before anything is pushed (see ``signer.prepare``).
    """
    options = replace(options, signer=signer_mod.prepare(sign))
    if each is not None:
        if len(args) != 1:
            raise UsageError(
                "with --each give only the target: lockgate push --each 'apps/*' oci://REG/{name}:TAG"
            )
        return push_each(each, args[0], client_for, options)
    if len(args) != 2:
        raise UsageError("usage: lockgate push PATH oci://REGISTRY/REPO:TAG")
    ref = registry.parse(args[1])
    return [push(args[0], ref, client_for(ref), options)]
