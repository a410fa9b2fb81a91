"""Registry scanning: list each repository's tags once, then evaluate every policy on them.

The registry seam is ``lockgate.registry`` (pagination via ``Link``, bearer tokens, 429
backoff live there); ``credentials`` decides what to log in with. Repositories are listed
concurrently; a failure in one repository becomes an error on its policies and the others
carry on, so the caller can report a partial result. Tags are matched (exclusion lists,
``filterTags``) in the calling thread as each listing arrives, never in the listing
threads: RE2 releases the GIL on every match, and threads taking turns at that for each
tag made a scan slower with eight workers than with one.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path

from action.images import credentials, policy, transport
from action.images.model import Config, ImageRepository, NamespacedName
from action.images.update import LatestRef, PolicyResult
from lockgate import registry
from lockgate.errors import ExitCode, LockgateError
from lockgate.registry import reference


@dataclass(frozen=True)
class Listing:
    key: NamespacedName
    tags: tuple[str, ...] = ()  #: after the exclusion list
    listed: int = 0  #: before the exclusion list
    error: str | None = None
    exit_code: ExitCode | None = None  #: the failure's class when ``error`` is set
    credentials: str = ""  #: which credential rule applied (never the secret)


def canonical(image: str) -> str:
    """Docker Hub shorthand as go-containerregistry expands it (``redis`` -> library/redis)."""
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return image.replace("docker.io/", "index.docker.io/", 1) if first == "docker.io" else image
    return f"index.docker.io/{image if rest else 'library/' + image}"


def connect(
    repo: ImageRepository, *, secrets_dir: Path | None = None
) -> tuple[registry.RegistryClient, str, str]:
    """A client for ``repo``'s registry, the repository name in it, and the credentials' origin."""
    ref = reference.parse(canonical(repo.image))
    access = credentials.for_repository(repo, ref.host, secrets_dir=secrets_dir)
    options = transport.options_for(repo, secrets_dir=secrets_dir)
    if access.ambient:
        client = registry.RegistryClient.for_reference(ref, insecure=repo.insecure, options=options)
        return client, ref.repository, access.origin
    transport_ = registry.Transport(
        ref.host, credentials=access.credentials, insecure=repo.insecure, options=options
    )
    origin = access.origin if access.credentials is not None else f"{access.origin}: no entry for {ref.host}"
    return registry.RegistryClient(transport_), ref.repository, origin


def _list_tags(
    repo: ImageRepository, *, page_size: int, secrets_dir: Path | None
) -> tuple[list[str], str] | Listing:
    """The repository's tags and the credentials' origin, or a failed ``Listing``."""
    origin = ""
    try:
        client, name, origin = connect(repo, secrets_dir=secrets_dir)
        return client.list_tags(name, page_size=page_size), origin
    except LockgateError as exc:
        return Listing(repo.key, error=exc.message, exit_code=exc.exit_code, credentials=origin)


def _excluded(repo: ImageRepository, listed: tuple[list[str], str] | Listing) -> Listing:
    if isinstance(listed, Listing):
        return listed
    tags, origin = listed
    try:
        kept = tuple(policy.exclude(tags, repo.exclusion_list))
    except LockgateError as exc:
        return Listing(repo.key, error=exc.message, exit_code=exc.exit_code, credentials=origin)
    return Listing(repo.key, kept, len(tags), credentials=origin)


def list_repository(
    repo: ImageRepository, *, page_size: int = 1000, secrets_dir: Path | None = None
) -> Listing:
    """List one repository's tags and apply its exclusion list."""
    return _excluded(repo, _list_tags(repo, page_size=page_size, secrets_dir=secrets_dir))


def scan_all(
    config: Config, *, page_size: int = 1000, secrets_dir: Path | None = None, workers: int = 8
) -> tuple[dict[NamespacedName, Listing], dict[NamespacedName, PolicyResult]]:
    """List every repository (``workers`` at a time) and evaluate its policies as it arrives,
    so evaluating one repository's tags overlaps with waiting for the others'."""
    repos = sorted(config.repositories.values(), key=lambda r: r.key)
    listings: dict[NamespacedName, Listing] = {}
    results: dict[NamespacedName, PolicyResult] = {}
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(repos) or 1))) as pool:
        pending = {
            pool.submit(_list_tags, repo, page_size=page_size, secrets_dir=secrets_dir): repo
            for repo in repos
        }
        for future in as_completed(pending):
            repo = pending[future]
            listing = _excluded(repo, future.result())
            listings[repo.key] = listing
            own = {key: pol for key, pol in config.policies.items() if pol.repository == repo.key}
            results.update(evaluate(replace(config, policies=own), {repo.key: listing}))
    return dict(sorted(listings.items())), dict(sorted(results.items()))


def evaluate(
    config: Config, listings: Mapping[NamespacedName, Listing]
) -> dict[NamespacedName, PolicyResult]:
    """Apply each policy to its repository's tags (pure)."""
    results: dict[NamespacedName, PolicyResult] = {}
    for key, pol in sorted(config.policies.items()):
        listing = listings.get(pol.repository)
        repo = config.repositories.get(pol.repository)
        if listing is None or repo is None or listing.error is not None:
            error = listing.error if listing is not None and listing.error else "repository not scanned"
            code = listing.exit_code if listing is not None and listing.exit_code else ExitCode.REGISTRY
            results[key] = PolicyResult(key, None, error, exit_code=code)
            continue
        try:
            selection = policy.select(listing.tags, pol.choice, tag_filter=pol.tag_filter)
        except LockgateError as exc:
            results[key] = PolicyResult(key, None, exc.message, len(listing.tags), exit_code=exc.exit_code)
            continue
        results[key] = PolicyResult(key, LatestRef(repo.image, selection.tag), None, selection.candidates)
    return results


def reflect_digests(
    config: Config, results: dict[NamespacedName, PolicyResult], *, secrets_dir: Path | None = None
) -> dict[NamespacedName, PolicyResult]:
    """Resolve the digest of elected tags whose policy asks for it (IfNotPresent, Always).

    A CI run has no previous status, so IfNotPresent behaves as Always here.
    """
    out = dict(results)
    for key, result in results.items():
        pol = config.policies[key]
        if result.latest is None or pol.digest_reflection == "Never":
            continue
        repo = config.repositories[pol.repository]
        failed = f"failed fetching digest of {result.latest}"
        try:
            client, name, _ = connect(repo, secrets_dir=secrets_dir)
            digest = client.head_manifest(name, result.latest.tag)
        except LockgateError as exc:
            out[key] = PolicyResult(key, None, f"{failed}: {exc.message}", exit_code=exc.exit_code)
            continue
        if digest is None:
            out[key] = PolicyResult(key, None, f"{failed}: not found", exit_code=ExitCode.RESOLVE)
            continue
        latest = LatestRef(result.latest.image, result.latest.tag, digest)
        out[key] = PolicyResult(key, latest, None, result.candidates)
    return out
