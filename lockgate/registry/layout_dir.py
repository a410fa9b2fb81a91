"""An OCI image layout directory (``oci-layout://DIR``) behind the ``RegistryClient`` verbs.

The layout is the OCI image-layout spec's: an ``oci-layout`` file, ``index.json`` and
``blobs/<alg>/<hex>``; a tag is an ``index.json`` entry annotated
``org.opencontainers.image.ref.name``, as oras and skopeo write it. ``RegistryClient.for_reference``
hands this store out for an ``oci-layout://`` reference, so ``pull``, ``verify``,
``reconcile`` and ``copy`` read a layout exactly as they read a registry.

A layout is files anyone may have edited, so every blob and manifest read is hashed and a
mismatch is refused naming the file. Writes never leave a half-written file where a reader
looks: a blob goes to a temporary file in ``blobs/<alg>/`` and is renamed once its digest
checks, and ``index.json`` is replaced by rename (under a lock on the directory) only after
the content it names is in place. Every file is reached through a ``beneath.Tree``: a
Sync's layout is confined to the root its Runner allows, so no symlink in it leads a read
or an attestation's write anywhere else; the command line's tree is ``/``. Referrers are
found as oras finds them in a layout: the manifests listed in ``index.json`` whose
``subject`` is the digest (``put_manifest`` by digest lists a manifest untagged), plus a
tag-schema fallback index if one was copied in.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from lockgate.errors import ResolveError, VerificationError
from lockgate.registry import oci
from lockgate.registry.beneath import Tree
from lockgate.registry.client import CHUNK, MAX_MANIFEST_BYTES, FetchedManifest, RegistryClient
from lockgate.registry.oci import MANIFEST_TYPES, Descriptor, Referrers, referrers_tag, sha256_digest
from lockgate.registry.reference import DIGEST_PATTERN

LAYOUT_FILE = "oci-layout"
INDEX_FILE = "index.json"
LAYOUT_VERSION = {"imageLayoutVersion": "1.0.0"}
REF_NAME = "org.opencontainers.image.ref.name"
#: an index.json of a layout with many tags and referrers, still bounded
MAX_INDEX_BYTES = 64 << 20


class LayoutStore(RegistryClient):
    """The registry verbs over one layout directory; ``repo`` arguments are ignored (a layout
    holds one repository). Open it with ``open`` (reading) or ``create`` (a copy's target)."""

    def __init__(self, root: Path, tree: Tree | None = None) -> None:
        # no transport: nothing here goes over the network
        self.root = root
        #: every file is reached through it: a Sync's layout stays under its allowed root
        self.tree = tree or Tree(Path("/"))
        self.cache = None
        self._counts: dict[str, int] = {}
        self._subjects: dict[str, str | None] = {}

    @classmethod
    def open(cls, root: Path, *, tree: Tree | None = None) -> LayoutStore:
        store = cls(root, tree)
        if not store.tree.is_file(root / LAYOUT_FILE) or not store.tree.is_file(root / INDEX_FILE):
            raise ResolveError(
                f"oci-layout://{root}: not an OCI image layout (no {LAYOUT_FILE} or {INDEX_FILE} file); "
                "write one with `lockgate copy SRC oci-layout://DIR`"
            )
        return store

    @classmethod
    def create(cls, root: Path, *, tree: Tree | None = None) -> LayoutStore:
        """The layout at ``root``, made (empty) when the directory does not hold one yet."""
        store = cls(root, tree)
        if store.tree.is_file(root / LAYOUT_FILE):
            return cls.open(root, tree=tree)
        if store.tree.exists(root) and store.tree.listdir(root):
            raise ResolveError(
                f"oci-layout://{root}: the directory is not empty and holds no {LAYOUT_FILE} file; "
                "name a new or empty directory"
            )
        with store.tree.directory(root / "blobs" / "sha256", create=True):
            pass
        with store._locked():
            empty = {"schemaVersion": 2, "mediaType": oci.OCI_INDEX, "manifests": []}
            store._replace(INDEX_FILE, _encode(empty))
            store._replace(LAYOUT_FILE, _encode(LAYOUT_VERSION))
        return store

    @property
    def host(self) -> str:
        return f"oci-layout://{self.root}"

    @property
    def counts(self) -> dict[str, int]:
        """Blobs and manifests read and written so far (``read``, ``write``)."""
        return dict(self._counts)

    def _count(self, what: str) -> None:
        self._counts[what] = self._counts.get(what, 0) + 1

    # -- index.json -------------------------------------------------------------------------

    def _index(self) -> dict[str, Any]:
        path = self.root / INDEX_FILE
        try:
            data = self.tree.read_bytes(path)
        except OSError as exc:
            raise ResolveError(f"{path}: cannot read the layout's index ({exc.strerror})") from None
        value = oci.read(data, str(path), max_bytes=MAX_INDEX_BYTES)
        if not isinstance(value, dict) or not isinstance(value.get("manifests"), list):
            raise ResolveError(f"{path} is not an image index ('manifests' is missing)")
        return value

    def _entries(self) -> list[Descriptor]:
        path = self.root / INDEX_FILE
        found = []
        for i, entry in enumerate(self._index()["manifests"]):
            found.append(Descriptor.from_json(entry, f"{path}: manifests[{i}]"))
        return found

    def _tagged(self, tag: str) -> Descriptor | None:
        for entry in self._entries():
            if entry.annotations.get(REF_NAME) == tag:
                return entry
        return None

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One writer of ``index.json`` at a time (a lock on the directory itself)."""
        with self.tree.directory(self.root) as fd:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield

    def _replace(self, name: str, data: bytes) -> None:
        self.tree.write_atomic(self.root / name, [data])

    def _list(self, ref: str, entry: Descriptor) -> None:
        """Point the tag ``ref`` at ``entry`` (or list a digest untagged) in ``index.json``."""
        with self._locked():
            index = self._index()
            kept: list[Any] = []
            tag = None if DIGEST_PATTERN.match(ref) else ref
            for item in index["manifests"]:
                named = (item.get("annotations") or {}).get(REF_NAME) if isinstance(item, dict) else None
                same = isinstance(item, dict) and item.get("digest") == entry.digest
                if tag is not None and (named == tag or (same and not named)):
                    continue  # the tag moves; an untagged entry of the digest becomes the tagged one
                if tag is None and same:
                    return  # already listed
                kept.append(item)
            value = entry.to_json()
            if tag is not None:
                value["annotations"] = {**dict(entry.annotations), REF_NAME: tag}
            index["manifests"] = [*kept, value]
            self._replace(INDEX_FILE, _encode(index))
        self._count("write")

    # -- blobs ------------------------------------------------------------------------------

    def blob_path(self, digest: str) -> Path:
        if not DIGEST_PATTERN.match(digest):
            raise ResolveError(f"oci-layout://{self.root}: {digest!r} is not a digest")
        algorithm, _, hexdigest = digest.partition(":")
        return self.root / "blobs" / algorithm / hexdigest

    def blob_exists(self, repo: str, digest: str) -> bool:
        return self.tree.is_file(self.blob_path(digest))

    def _read_checked(self, digest: str, dest: IO[bytes] | None, max_size: int | None) -> tuple[int, bytes]:
        """Stream the blob file into ``dest`` (or return it when ``dest`` is None), refusing a
        file whose bytes do not hash to its name."""
        path = self.blob_path(digest)
        algorithm, _, expected = digest.partition(":")
        hasher = hashlib.new(algorithm)
        total, parts = 0, []
        try:
            handle = os.fdopen(self.tree.open(path), "rb")
        except FileNotFoundError:
            raise ResolveError(
                f"oci-layout://{self.root}: blob {digest} not found ({path} is missing)"
            ) from None
        with handle:
            while chunk := handle.read(CHUNK):
                total += len(chunk)
                if max_size is not None and total > max_size:
                    raise VerificationError(f"{path} is larger than the {max_size} bytes allowed")
                hasher.update(chunk)
                if dest is None:
                    parts.append(chunk)
                else:
                    dest.write(chunk)
        if hasher.hexdigest() != expected:
            raise VerificationError(
                f"{path}: content hashes to {algorithm}:{hasher.hexdigest()}, not the {digest} its name "
                "says; the layout was tampered with or corrupted: copy the artifact into it again"
            )
        self._count("read")
        return total, b"".join(parts)

    def download_blob(self, repo: str, digest: str, dest: IO[bytes], *, max_size: int | None = None) -> int:
        return self._read_checked(digest, dest, max_size)[0]

    def upload_blob(self, repo: str, stream: IO[bytes] | bytes, *, digest: str, size: int) -> None:
        path = self.blob_path(digest)
        algorithm, _, expected = digest.partition(":")
        hasher = hashlib.new(algorithm)

        def checked() -> Iterator[bytes]:
            """The bytes, hashed on the way; refused before the rename when they are not ``digest``."""
            chunks = [stream] if isinstance(stream, bytes) else iter(lambda: stream.read(CHUNK), b"")
            for chunk in chunks:
                hasher.update(chunk)
                yield chunk
            if hasher.hexdigest() != expected:
                raise VerificationError(f"{path}: the bytes written hash to {algorithm}:{hasher.hexdigest()}")

        self.tree.write_atomic(path, checked())
        self._count("write")

    # -- manifests --------------------------------------------------------------------------

    def head_manifest(self, repo: str, ref: str) -> str | None:
        if DIGEST_PATTERN.match(ref):
            return ref if self.blob_exists(repo, ref) else None
        entry = self._tagged(ref)
        return entry.digest if entry is not None else None

    def get_manifest(
        self, repo: str, ref: str, *, accept: tuple[str, ...] = MANIFEST_TYPES
    ) -> FetchedManifest:
        digest = self.head_manifest(repo, ref)
        if digest is None:
            shown = f"{'@' if DIGEST_PATTERN.match(ref) else ':'}{ref}"
            raise ResolveError(f"oci-layout://{self.root}{shown} not found")
        _, content = self._read_checked(digest, None, MAX_MANIFEST_BYTES)
        value = oci.read(content, str(self.blob_path(digest)))
        media_type = value.get("mediaType", "") if isinstance(value, dict) else ""
        return FetchedManifest(content=content, media_type=str(media_type), digest=digest)

    def put_manifest(self, repo: str, ref: str, content: bytes, media_type: str) -> str:
        digest = sha256_digest(content)
        if DIGEST_PATTERN.match(ref) and ref != digest:
            raise VerificationError(f"oci-layout://{self.root}: manifest bytes hash to {digest}, not {ref}")
        if not self.blob_exists(repo, digest):
            self.upload_blob(repo, content, digest=digest, size=len(content))
        value = oci.read(content, f"manifest {digest}")
        explicit = value.get("artifactType") if isinstance(value, dict) else None
        entry = Descriptor(
            media_type, digest, len(content), artifact_type=explicit if isinstance(explicit, str) else None
        )
        self._list(ref, entry)
        return digest

    def referrers(self, repo: str, digest: str) -> Referrers:
        """The manifests listed in ``index.json`` whose ``subject`` is ``digest``, and the
        entries of a fallback index tagged ``sha256-<hex>``."""
        found: dict[str, Descriptor] = {}
        for entry in self._entries():
            if entry.media_type not in (oci.OCI_MANIFEST, oci.OCI_INDEX) or entry.digest == digest:
                continue
            if self._subject(entry.digest) == digest:
                fetched = self.get_manifest(repo, entry.digest)
                value = oci.read(fetched.content, str(self.blob_path(entry.digest)))
                found[entry.digest] = Descriptor(
                    fetched.media_type or entry.media_type,
                    entry.digest,
                    len(fetched.content),
                    dict(value.get("annotations") or {}),
                    _artifact_type(value),
                )
        fallback = self._tagged(referrers_tag(digest))
        if fallback is not None:
            fetched = self.get_manifest(repo, fallback.digest)
            listed = Referrers.from_bytes(fetched.content, from_api=False, where=f"oci-layout://{self.root}")
            for item in listed.manifests:
                found.setdefault(item.digest, item)
        return Referrers(tuple(found.values()), from_api=True)

    def _subject(self, manifest: str) -> str | None:
        """The subject digest of a listed manifest (remembered: manifests never change)."""
        if manifest not in self._subjects:
            subject = None
            if self.blob_exists("", manifest):
                _, content = self._read_checked(manifest, None, MAX_MANIFEST_BYTES)
                value = oci.read(content, str(self.blob_path(manifest)))
                item = value.get("subject") if isinstance(value, dict) else None
                if isinstance(item, dict) and isinstance(item.get("digest"), str):
                    subject = item["digest"]
            self._subjects[manifest] = subject
        return self._subjects[manifest]

    def lists(self, digest: str) -> bool:
        """The manifest ``digest`` is stored and listed in ``index.json`` (tagged or not)."""
        return self.blob_exists("", digest) and any(e.digest == digest for e in self._entries())

    def iter_tags(self, repo: str, *, page_size: int = 1000) -> Iterator[str]:
        for entry in self._entries():
            name = entry.annotations.get(REF_NAME)
            if name:
                yield name


def _artifact_type(value: Any) -> str | None:
    """A manifest's ``artifactType``, else its config media type (as the referrers API reports it)."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("artifactType"), str):
        return str(value["artifactType"])
    config = value.get("config")
    if isinstance(config, dict) and isinstance(config.get("mediaType"), str):
        return str(config["mediaType"])
    return None


def _encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()
