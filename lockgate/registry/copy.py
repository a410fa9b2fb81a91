"""``lockgate copy``: an artifact and everything that verifies it, to a mirror, by digest.

As ``cosign copy`` and ``oras copy -r`` do, one artifact travels with its cosign signatures
in both layouts (the legacy ``sha256-<hex>.sig`` tag, with ``.att`` and ``.sbom``, and the
OCI 1.1 referrers: Sigstore bundles, lockgate's health attestations), referrers of
referrers, and the tag-schema fallback index ``sha256-<hex>`` where the destination has
no referrers API; for an index, what is attached to each manifest it lists too (as ``cosign
copy`` walks an index). The source and the destination are either a registry or an OCI image
layout directory (``layout_dir``): both are ``RegistryClient``s, so one walk serves all four
directions. Documents travel as their exact bytes, so every digest, and therefore every
signature over one, is the same on the mirror.

Order is what makes an interrupted copy safe: blobs before the manifest that lists them,
manifests before the index that lists them, every referrer before the fallback index,
and the artifact's tag last; nothing a reader can reach points at content that is not
there yet. What is present already (a blob, a manifest, a tag pointing at the digest) is
skipped, so running a copy again completes it and otherwise does nothing.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockgate import interrupt, progress, semver
from lockgate.errors import ResolveError, UsageError, VerificationError
from lockgate.registry import oci
from lockgate.registry.client import RegistryClient
from lockgate.registry.connection import TransportOptions
from lockgate.registry.credentials import Credentials
from lockgate.registry.layout_dir import LayoutStore
from lockgate.registry.oci import COSIGN_TAG_SUFFIXES, ImageIndex, Referrers, is_artifact_tag, referrers_tag
from lockgate.registry.reference import Reference

#: referrers of referrers are followed this deep (a signature on an attestation is depth 2)
MAX_DEPTH = 4
_INDEX_TYPES = (oci.OCI_INDEX, oci.DOCKER_LIST)


@dataclass(frozen=True)
class Step:
    """One unit of a copy: a ``blob``, ``manifest`` or ``tag``, copied or found present."""

    kind: str
    digest: str
    size: int = 0
    skipped: bool = False
    tag: str = ""


@dataclass(frozen=True)
class CopyOptions:
    #: source tags to copy (each keeps its name); empty: the tag or digest SRC names
    tags: tuple[str, ...] = ()
    #: copy every artifact tag of the source in this semver range (Flux's rules)
    semver: str | None = None
    #: told about every step as it is done (progress; an interruption in the tests)
    on_step: Callable[[Step], None] | None = None


@dataclass(frozen=True)
class CopiedArtifact:
    digest: str
    tag: str | None
    #: cosign tags copied along (``sha256-<hex>.sig`` ...)
    cosign_tags: tuple[str, ...]
    #: referrer manifests copied along (bundles, attestations, their own referrers)
    referrers: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "digest": self.digest,
            "tag": self.tag,
            "cosignTags": list(self.cosign_tags),
            "referrers": list(self.referrers),
        }


@dataclass
class CopyResult:
    source: str
    destination: str
    artifacts: list[CopiedArtifact] = field(default_factory=list)
    #: (copied, skipped) per kind: blob, manifest, tag
    counts: dict[str, list[int]] = field(default_factory=dict)
    bytes_copied: int = 0

    def count(self, step: Step) -> None:
        pair = self.counts.setdefault(step.kind, [0, 0])
        pair[1 if step.skipped else 0] += 1
        if step.kind == "blob" and not step.skipped:
            self.bytes_copied += step.size

    def copied(self, kind: str) -> int:
        return self.counts.get(kind, [0, 0])[0]

    def skipped(self, kind: str) -> int:
        return self.counts.get(kind, [0, 0])[1]

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "destination": self.destination,
            "artifacts": [a.to_json() for a in self.artifacts],
            **{
                f"{kind}s": {"copied": self.copied(kind), "skipped": self.skipped(kind)}
                for kind in ("blob", "manifest", "tag")
            },
            "bytesCopied": self.bytes_copied,
        }


def destination_client(
    ref: Reference,
    *,
    credentials: Credentials | None = None,
    insecure: bool = False,
    options: TransportOptions | None = None,
) -> RegistryClient:
    """The store to copy into: a layout directory is created when absent."""
    if ref.layout is not None:
        return LayoutStore.create(Path(ref.layout))
    return RegistryClient.for_reference(ref, credentials=credentials, insecure=insecure, options=options)


def select(source: RegistryClient, ref: Reference, options: CopyOptions) -> list[tuple[str | None, str]]:
    """(tag, digest) of each artifact to copy: the one SRC names, ``--tags``, or ``--semver``."""
    if (options.tags or options.semver) and (ref.tag or ref.digest):
        raise UsageError(f"{ref}: name the artifact in SRC or select with --tags/--semver, not both")
    if options.tags and options.semver:
        raise UsageError("--tags and --semver are exclusive")
    if options.semver:
        try:
            constraints = semver.Constraints.parse(options.semver)
        except semver.SemverError as exc:
            raise UsageError(f"--semver {options.semver!r}: {exc}") from None
        listed = [tag for tag in source.list_tags(ref.repository) if is_artifact_tag(tag)]
        tags = semver.in_range_descending(constraints, listed)
        if not tags:
            raise ResolveError(
                f"{ref}: no tag matches the semver range {options.semver!r} ({len(listed)} listed)"
            )
        return [(tag, source.resolve(ref.with_tag(tag))) for tag in tags]
    if options.tags:
        return [(tag, source.resolve(ref.with_tag(tag))) for tag in options.tags]
    if ref.tag is None and ref.digest is None:
        raise UsageError(
            f"{ref}: name a tag or a digest (SRC:TAG, SRC@sha256:...), or pass --tags or --semver"
        )
    return [(ref.tag, source.resolve(ref))]


def copy(
    source: RegistryClient,
    source_ref: Reference,
    destination: RegistryClient,
    destination_ref: Reference,
    options: CopyOptions | None = None,
) -> CopyResult:
    """Copy what ``options`` select from ``source_ref`` to ``destination_ref`` with everything
    that verifies it; raises on the first failure, leaving only complete content reachable."""
    options = options or CopyOptions()
    if destination_ref.digest:
        raise UsageError(
            f"DST {destination_ref}: name a repository (and a tag), not a digest; the digest is SRC's"
        )
    chosen = select(source, source_ref, options)
    if destination_ref.tag and len(chosen) > 1:
        raise UsageError(f"DST {destination_ref}: one tag cannot name the {len(chosen)} artifacts selected")
    result = CopyResult(str(source_ref), str(destination_ref))
    walk = _Walk(source, source_ref.repository, destination, destination_ref.repository, result, options)
    try:
        for tag, digest in chosen:
            walk.tree(digest)
            cosign_tags, referrers = walk.attached_tree(digest)
            target_tag = destination_ref.tag or tag
            if target_tag:
                walk.tag(target_tag, digest)
            result.artifacts.append(CopiedArtifact(digest, target_tag, cosign_tags, referrers))
    except KeyboardInterrupt as stop:
        pending = [destination_ref.tag or tag or digest for tag, digest in chosen[len(result.artifacts) :]]
        raise interrupt.Interrupted(interrupted(result, pending, interrupt.which(stop))) from None
    return result


def interrupted(result: CopyResult, pending: list[str], signal_name: str) -> str:
    """What an interrupted copy wrote to the destination and what it did not (pure)."""
    written = (
        f"{result.copied('blob')} blob(s) ({result.bytes_copied:,} bytes), "
        f"{result.copied('manifest')} manifest(s) and {result.copied('tag')} tag(s)"
    )
    done = [a.tag or a.digest for a in result.artifacts]
    lines = [f"interrupted by {signal_name}: written to {result.destination}: {written}"]
    if done:
        lines.append(f"complete, with their signatures and referrers: {', '.join(done)}")
    lines.append(
        f"not written: {', '.join(pending)} (a tag is written last, so nothing at the destination "
        "names an incomplete artifact); run the same copy again to complete it (what is there is skipped)"
    )
    return "\n  ".join(lines)


class _Walk:
    """One copy's traversal: what it has done, so shared content is visited once."""

    def __init__(
        self,
        source: RegistryClient,
        source_repo: str,
        destination: RegistryClient,
        destination_repo: str,
        result: CopyResult,
        options: CopyOptions,
    ) -> None:
        self.src, self.srepo = source, source_repo
        self.dst, self.drepo = destination, destination_repo
        self.result, self.options = result, options
        self.done: set[str] = set()
        #: the manifests each copied index lists
        self.children: dict[str, list[str]] = {}

    def _step(self, step: Step) -> None:
        self.result.count(step)
        if self.options.on_step is not None:
            self.options.on_step(step)

    def tree(self, digest: str) -> None:
        """The manifest ``digest``, what it lists (blobs, or an index's manifests) first."""
        if digest in self.done:
            return
        fetched = self.src.get_manifest(self.srepo, digest)
        value = oci.read(fetched.content, f"manifest {digest} of {self.src.host}")
        if not isinstance(value, dict):
            raise ResolveError(f"manifest {digest} of {self.src.host} is not a JSON object")
        media_type = fetched.media_type or str(value.get("mediaType") or oci.OCI_MANIFEST)
        if media_type in _INDEX_TYPES:
            children = ImageIndex.from_bytes(fetched.content, where=digest).manifests
            self.children[digest] = [child.digest for child in children]
            for child in children:
                self.tree(child.digest)
        else:
            for blob in _blobs(value, digest):
                self.blob(blob)
        if self._has_manifest(digest):
            self._step(Step("manifest", digest, len(fetched.content), skipped=True))
        else:
            self.dst.put_manifest(self.drepo, digest, fetched.content, media_type)
            self._step(Step("manifest", digest, len(fetched.content)))
        self.done.add(digest)

    def _has_manifest(self, digest: str) -> bool:
        if isinstance(self.dst, LayoutStore):
            return self.dst.lists(digest)
        return self.dst.head_manifest(self.drepo, digest) == digest

    def blob(self, blob: oci.Descriptor) -> None:
        if blob.digest in self.done:
            return
        if self.dst.blob_exists(self.drepo, blob.digest):
            self._step(Step("blob", blob.digest, blob.size, skipped=True))
        else:
            with tempfile.TemporaryFile(prefix="lockgate-copy-") as spool:
                size = self.src.download_blob(self.srepo, blob.digest, spool, max_size=blob.size)
                if size != blob.size:
                    raise VerificationError(
                        f"{self.src.host}: blob {blob.digest} has {size} bytes, "
                        f"its descriptor says {blob.size}"
                    )
                spool.seek(0)
                # one progress line per blob, moving while it is sent (a retry rewinds it)
                task = progress.current().task(f"copying {blob.digest[:19]}", total=size)
                try:
                    sending = progress.Reading.of(spool, task)
                    self.dst.upload_blob(self.drepo, sending, digest=blob.digest, size=size)
                finally:
                    task.finish()
            self._step(Step("blob", blob.digest, size))
        self.done.add(blob.digest)

    def tag(self, tag: str, digest: str) -> None:
        if self.dst.head_manifest(self.drepo, tag) == digest:
            self._step(Step("tag", digest, skipped=True, tag=tag))
            return
        fetched = self.src.get_manifest(self.srepo, digest)
        self.dst.put_manifest(self.drepo, tag, fetched.content, fetched.media_type or oci.OCI_MANIFEST)
        self._step(Step("tag", digest, tag=tag))

    def attached_tree(self, digest: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``attached`` for ``digest`` and, as ``cosign copy`` does, for each manifest an index
        lists (a platform image signed on its own)."""
        cosign_tags, referrers = self.attached(digest, depth=1)
        for child in dict.fromkeys(self.children.get(digest, [])):
            more_tags, more_referrers = self.attached_tree(child)
            cosign_tags, referrers = cosign_tags + more_tags, referrers + more_referrers
        return cosign_tags, referrers

    def attached(self, digest: str, *, depth: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Copy cosign's tags and the referrers of ``digest`` (and theirs, ``MAX_DEPTH`` deep),
        then list the referrers in the destination's fallback index if it has no API."""
        cosign_tags = []
        for suffix in COSIGN_TAG_SUFFIXES:
            tag = referrers_tag(digest) + suffix
            found = self.src.head_manifest(self.srepo, tag)
            if found is not None:
                self.tree(found)
                self.tag(tag, found)
                cosign_tags.append(tag)
        listed = self.src.referrers(self.srepo, digest)
        copied = []
        for referrer in listed.manifests:
            self.tree(referrer.digest)
            copied.append(referrer.digest)
            if depth < MAX_DEPTH:
                self.attached(referrer.digest, depth=depth + 1)
        if listed.manifests:
            self._list_referrers(digest, listed)
        return tuple(cosign_tags), tuple(copied)

    def _list_referrers(self, digest: str, listed: Referrers) -> None:
        present = self.dst.referrers(self.drepo, digest)
        if present.from_api:
            return  # the registry (or the layout's index.json) lists them by their subject
        tag = referrers_tag(digest)
        known = {m.digest for m in present.manifests}
        missing = [m for m in listed.manifests if m.digest not in known]
        if not missing:
            self._step(Step("tag", digest, skipped=True, tag=tag))
            return
        content = None
        if not present.manifests and not listed.from_api:
            # the source's own fallback index, byte for byte, when the mirror has none yet
            fetched = self.src.get_manifest(self.srepo, tag)
            if Referrers.from_bytes(fetched.content, from_api=False, where=tag).manifests == listed.manifests:
                content = fetched.content
        if content is None:
            content = ImageIndex(manifests=(*present.manifests, *missing)).to_bytes()
        self.dst.put_manifest(self.drepo, tag, content, oci.OCI_INDEX)
        self._step(Step("tag", oci.sha256_digest(content), tag=tag))


def _blobs(value: dict[str, Any], digest: str) -> list[oci.Descriptor]:
    """The config and layers of an image manifest."""
    where = f"manifest {digest}"
    found = [oci.Descriptor.from_json(value.get("config"), f"{where}: config")]
    layers = value.get("layers") or []
    if not isinstance(layers, list):
        raise ResolveError(f"{where}: 'layers' is not a list")
    found += [oci.Descriptor.from_json(layer, f"{where}: layers[{i}]") for i, layer in enumerate(layers)]
    return found
