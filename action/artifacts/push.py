"""Build and push Flux-format artifacts: one path, or one per directory with ``--each``.

The plan (layer, annotations, manifest bytes, digest) is computed before any network
call; the registry is then asked once whether the tag already holds that digest
("unchanged": nothing is uploaded), otherwise missing blobs are uploaded (HEAD first)
and the manifest is put under the tag and any extra tags.
"""

from __future__ import annotations

import glob
import logging
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from action.artifacts import layer as layer_mod
from action.artifacts import signer as signer_mod
from action.artifacts import source as source_mod
from lockgate import interrupt, progress, registry
from lockgate.artifact import manifest, metadata, pack
from lockgate.errors import ExitCode, LockgateError, RenderError, UsageError

if TYPE_CHECKING:
    from lockgate.signing.sign import SignedArtifact

ClientFactory = Callable[["registry.Reference"], "registry.RegistryClient"]
log = logging.getLogger("lockgate.push")


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
    #: refuse a checkout with uncommitted changes under the path (``--strict``, the Action)
    refuse_dirty: bool = False


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
    #: the ``org.opencontainers.image.revision`` annotation pushed, when there is one
    revision: str | None = None
    #: the checkout's uncommitted changes under the path (``git status --porcelain``)
    uncommitted: tuple[str, ...] = ()

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
            "revision": self.revision,
        }
        if self.uncommitted:
            value["uncommitted"] = list(self.uncommitted)
        if self.signed is not None:
            value["signed"] = self.signed.to_json()
        return value


def build_layer(path: str, dest: Path, options: source_mod.BuildOptions) -> pack.Layer:
    """Pack ``path`` (after rendering, if asked) into ``dest`` and validate its YAML."""
    with source_mod.prepare(path, options) as root:
        entries = pack.collect(root, options.pack_options)
        if options.validate:
            source_mod.require_yaml(root, entries)
        check = source_mod.content_check(root, options)
        return pack.pack(
            root, dest, options.pack_options, entries=entries, check=check, limits=options.limits
        )


def provenance(path: str, options: PushOptions, *, per_path: bool = False) -> metadata.Provenance:
    """Where ``path`` comes from; uncommitted changes under it are refused with
    ``options.refuse_dirty``, else warned about (the annotation records them)."""
    origin = Path.cwd() if path == "-" else Path(path)
    found = metadata.detect(
        origin, source=options.source, revision=options.revision, created=options.created, per_path=per_path
    )
    if path == "-":
        return metadata.Provenance(found.source, found.revision, found.created)  # not the tree's content
    if found.uncommitted:
        shown = ", ".join(found.uncommitted[:5]) + (
            f" and {len(found.uncommitted) - 5} more" if len(found.uncommitted) > 5 else ""
        )
        said = (
            f"{path}: the checkout has uncommitted changes there ({shown}), so the artifact is not "
            f"the content of {found.revision}, the revision it would be pushed under"
        )
        if options.refuse_dirty:
            raise UsageError(
                f"{said}; commit them first (refused by --strict or --refuse-dirty; the Action's "
                "allow-dirty: true pushes it, annotated)"
            )
        log.warning(
            'warning: %s; it is annotated %s: "true" (commit them first, or --strict to refuse)',
            said,
            metadata.MODIFIED,
        )
    return found


def plan(
    provenance: metadata.Provenance, layer_digest: str, layer_size: int, options: PushOptions
) -> manifest.Built:
    annotations = {**provenance.annotations(), **options.annotations}
    return manifest.build(layer_digest, layer_size, annotations)


def _check_target(target: registry.Reference, options: PushOptions) -> None:
    if target.digest is not None:
        raise UsageError(f"{target}: push needs a tag (oci://REGISTRY/REPO:TAG), not a digest")
    if target.tag is None:
        raise UsageError(f"{target}: the tag is missing; push to oci://{target.name}:TAG (e.g. :latest)")
    for tag in options.extra_tags:
        target.with_tag(tag)


@dataclass
class Prepared:
    """One directory packed and checked, with its manifest planned; nothing sent yet."""

    path: str
    target: registry.Reference
    tree: layer_mod.Tree
    built: manifest.Built
    per_path: bool
    provenance: metadata.Provenance


@contextmanager
def _refused_before_pushing() -> Iterator[None]:
    """A layer over the runners' ratio, refused while packing, is named as push refuses it."""
    try:
        yield
    except pack.RatioTooHigh as exc:
        raise pack.RatioTooHigh(exc.root, exc.ratio, exc.max_ratio, stopped="pushed") from None


@contextmanager
def prepared(
    path: str, target: registry.Reference, options: PushOptions, *, per_path: bool = False
) -> Iterator[Prepared]:
    """Pack and check ``path`` (errors name the file and line) before anything is pushed."""
    _check_target(target, options)
    with (
        tempfile.TemporaryDirectory(prefix="lockgate-push-") as tmp,
        _refused_before_pushing(),
        layer_mod.prepare(path, options.build, Path(tmp) / "artifact.tgz") as tree,
    ):
        if options.signer is not None:
            # what is signed is never taken from the build cache: an entry planted in it could
            # name another layer the registry holds (an older release); the tree is packed, and
            # a cache entry that disagrees is dropped
            tree.layer()
        found = provenance(path, options, per_path=per_path)
        built = plan(found, tree.digest, tree.size, options)
        yield Prepared(path, target, tree, built, per_path, found)


@dataclass
class Written:
    """What one push has written so far, to say it when the push is interrupted."""

    blobs: int = 0
    tags: list[str] = field(default_factory=list)
    signed: bool = False

    def describe(self, target: registry.Reference, tags: Sequence[str], signing: bool) -> str:
        """``written: ...; not written: ...`` of an interrupted push of ``target``."""
        written = [f"{self.blobs} blob(s)"] if self.blobs else []
        written += [f"tag {tag}" for tag in self.tags]
        missing = [f"tag {tag}" for tag in tags if tag not in self.tags]
        if signing and not self.signed:
            missing.append("the signature")
        said = f"written to {target.name}: {', '.join(written) or 'nothing'}"
        if missing:
            said += f"; not written: {', '.join(missing)}"
            if not self.tags:
                said += " (the tag still names what it named before: nothing half-pushed is reachable)"
        return said


def upload(item: Prepared, client: registry.RegistryClient, options: PushOptions) -> PushResult:
    """Send what ``prepared`` made: the blobs the registry lacks, the manifest, tags, signature.

    Ctrl-C or SIGTERM (``lockgate.interrupt.raising``) is an ``Interrupted`` error saying what
    was written and what was not; the tag is written after the blobs, so it never names an
    incomplete artifact."""
    written = Written()
    assert item.target.tag is not None  # checked by prepared
    tags = (item.target.tag, *options.extra_tags)
    try:
        return _upload(item, client, options, written)
    except KeyboardInterrupt as stop:
        said = written.describe(item.target, tags, options.signer is not None)
        raise interrupt.Interrupted(
            f"{item.path}: interrupted by {interrupt.which(stop)}: {said}; run the same push again "
            "to finish it (what the registry has is not sent again)"
        ) from None


def _upload(
    item: Prepared, client: registry.RegistryClient, options: PushOptions, written: Written
) -> PushResult:
    target, tree, built, path = item.target, item.tree, item.built, item.path
    assert target.tag is not None  # checked by prepared
    repo = target.repository
    tags = (target.tag, *options.extra_tags)
    uploaded = 0
    status = Status.UNCHANGED
    if client.head_manifest(repo, target.tag) != built.digest:
        status = Status.PUSHED
        if not client.blob_exists(repo, built.manifest.config.digest):
            client.upload_blob(
                repo, built.config_blob, digest=built.manifest.config.digest, size=len(built.config_blob)
            )
            uploaded += 1
            written.blobs += 1
        if not client.blob_exists(repo, tree.digest):
            planned = tree.digest
            layer = tree.layer()
            if layer.digest != planned:
                # planned from the build cache: the bytes uploaded decide, if ever they differ
                built = plan(item.provenance, layer.digest, layer.size, options)
            task = progress.current().task("uploading", total=layer.size)
            with open(layer.path, "rb") as stream:
                try:
                    client.upload_blob(
                        repo, progress.Reading.of(stream, task), digest=layer.digest, size=layer.size
                    )
                finally:
                    task.finish()
            uploaded += 1
            written.blobs += 1
        client.put_manifest(repo, target.tag, built.content, built.manifest.media_type)
    written.tags.append(target.tag)
    for tag in options.extra_tags:
        if client.head_manifest(repo, tag) != built.digest:
            client.put_manifest(repo, tag, built.content, built.manifest.media_type)
            status = Status.PUSHED
        written.tags.append(tag)
    packed = tree.packed is not None
    signed = options.signer.sign(target, built.digest, client) if options.signer is not None else None
    written.signed = True
    revision = built.manifest.annotations.get(metadata.REVISION)
    return PushResult(
        target,
        built.digest,
        status,
        uploaded,
        tags,
        path,
        signed,
        packed,
        revision,
        item.provenance.uncommitted,
    )


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
    with prepared(path, target, options, per_path=per_path) as item:
        return upload(item, client, options)


class BrokenDirectories(RenderError):
    """``--each``: some directories do not build; nothing was pushed."""

    def __init__(self, failures: Sequence[tuple[str, LockgateError]], total: int) -> None:
        lines = "\n".join(f"  {path}: {exc.message}" for path, exc in failures)
        super().__init__(
            f"{len(failures)} of {total} directories do not build, so nothing was pushed:\n{lines}"
        )
        self.failures = list(failures)
        codes = {exc.exit_code for _, exc in failures}
        if len(codes) == 1:
            self.exit_code = codes.pop()


class PartialPush(LockgateError):
    """``--each``: a push failed after others went out; ``results`` holds those."""

    exit_code = ExitCode.PARTIAL

    def __init__(self, results: Sequence[PushResult], failed: str, error: LockgateError, left: Sequence[str]):
        done = "\n".join(f"  {r.status.value} {r.reference}@{r.digest}" for r in results)
        rest = f"; not attempted: {', '.join(left)}" if left else ""
        super().__init__(
            f"{failed}: {error.message}\n{len(results)} pushed before it:\n{done}{rest}"
            if results
            else f"{failed}: {error.message}{rest}"
        )
        self.results, self.failed, self.error, self.left = list(results), failed, error, list(left)


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
    options = options or PushOptions()
    targets = expand_each(pattern, target_template)
    with ExitStack() as stack:
        # every directory is packed and checked before the first push: one broken app
        # stops the run with nothing pushed, rather than half of them pushed and signed
        ready: list[Prepared] = []
        broken: list[tuple[str, LockgateError]] = []
        for directory, ref in targets:
            try:
                ready.append(stack.enter_context(prepared(directory, ref, options, per_path=True)))
            except LockgateError as exc:
                broken.append((directory, exc))
        if broken:
            raise BrokenDirectories(broken, len(targets))
        results: list[PushResult] = []
        for index, item in enumerate(ready):
            try:
                results.append(upload(item, client_for(item.target), options))
            except interrupt.Interrupted as stopped:
                left = [p.path for p in ready[index + 1 :]]
                done = "".join(f"\n    {r.status.value} {r.reference}@{r.digest}" for r in results)
                raise interrupt.Interrupted(
                    f"{stopped.message}"
                    + (f"\n  {len(results)} pushed before it:{done}" if results else "")
                    + (f"\n  not attempted: {', '.join(left)}" if left else "")
                ) from None
            except LockgateError as exc:
                if not results:
                    raise
                raise PartialPush(results, item.path, exc, [p.path for p in ready[index + 1 :]]) from None
        return results


def partial_json(partial: PartialPush) -> list[dict[str, Any]]:
    """``--each`` cut short: the pushed results, the failed directory, the ones not attempted."""
    failed = {"path": partial.failed, "status": "failed", "error": partial.error.message}
    left = [{"path": path, "status": "notAttempted"} for path in partial.left]
    return [*results_json(partial.results), failed, *left]


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
    try:
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
        # the same revision rule as --each: a directory's revision is its last commit
        return [push(args[0], ref, client_for(ref), options, per_path=True)]
    except KeyboardInterrupt as stop:
        # an upload says what it wrote itself (``upload``): this one came before any
        raise interrupt.Interrupted(
            f"interrupted by {interrupt.which(stop)} while packing and checking: nothing was pushed"
        ) from None
