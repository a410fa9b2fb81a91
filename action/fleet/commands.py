"""``lockgate fleet`` as library calls: whose word counts, one look at the registry, and ``--watch``.

``policies`` turns ``--key`` (repeatable: one per attesting runner, any one verifying; with
``--bind-keys-to-clusters`` a file ``<clusterName>.pub`` attests for that cluster only, as a
Sync's Secret entries do, ``lockgate.signing.keybinding``) and the keyless flags (as
``lockgate verify`` takes them) into the policies every attestation is checked against
(``lockgate.fleet.evidence``); an attestation none of them verifies is shown as ``unverified``,
never as healthy. ``read`` looks once; ``watch`` looks again every
``interval`` seconds until SIGINT or SIGTERM, through one ``Reader``, so a refresh fetches only
the referrers it has not seen. A refresh that fails is shown and the next one tried.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from action import cliopts
from lockgate.errors import LockgateError, UsageError
from lockgate.signing.options import VERIFY_FLAGS, VerifyOptions, build_policy, policy_warnings

if TYPE_CHECKING:
    from lockgate.fleet.evidence import Reader, Selection
    from lockgate.fleet.matrix import Fleet
    from lockgate.registry import Reference
    from lockgate.signing.attest import AttestationPolicy
    from lockgate.signing.policy import KeySetPolicy
    from lockgate.signing.requirements import Requirement, Verdict


@dataclass(frozen=True)
class FleetRequest:
    """What ``lockgate fleet`` was asked: a repository (or one tag or digest of it), which of its
    revisions, and the attesters whose attestations count."""

    url: str
    keys: tuple[Path, ...] = ()
    #: ``--bind-keys-to-clusters``: a key file ``<clusterName>.pub`` attests for that cluster only
    bind_keys: bool = False
    #: the keyless identity, as ``lockgate verify``'s flags give it (its ``key`` is unused)
    keyless: VerifyOptions = field(default_factory=VerifyOptions)
    semver: str | None = None
    last: int | None = None


def policies(request: FleetRequest) -> list[AttestationPolicy]:
    """The keys as one set (any one verifying; with ``bind_keys`` each bound to the cluster its
    file name names), then the keyless identity; at least one."""
    found: list[AttestationPolicy] = []
    if request.keys:
        found.append(_key_set(request))
    keyless = build_policy(request.keyless, VERIFY_FLAGS) if request.keyless.keyless else None
    if keyless is not None:
        found.append(keyless)
    if not found:
        raise UsageError(
            "whose attestations count? pass --key FILE (once per attesting runner's public key), "
            "or --certificate-identity (or -regexp) and --certificate-oidc-issuer (or -regexp)"
        )
    return found


def _key_set(request: FleetRequest) -> KeySetPolicy:
    from lockgate.signing import keybinding
    from lockgate.signing.policy import KeyPolicy, KeySetPolicy

    read = [KeyPolicy.from_file(path) for path in request.keys]
    clusters = keybinding.bound_to(
        [path.name for path in request.keys], bind=request.bind_keys, selects=lambda _: False
    )
    bound = tuple(
        replace(key, cluster=clusters[path.name]) for key, path in zip(read, request.keys, strict=True)
    )
    return KeySetPolicy(bound, source=", ".join(str(p) for p in request.keys))


def warnings(request: FleetRequest) -> tuple[str, ...]:
    """What to tell the user about the keys (several, bound to no cluster) and the keyless
    identity (an unpinned GitHub workflow)."""
    found: list[str] = []
    if len(request.keys) > 1 and not request.bind_keys:
        found.append(
            f"{len(request.keys)} keys, bound to no cluster: each is trusted to attest for every "
            "cluster, so one runner's key can show any cluster healthy; name each key file "
            "<clusterName>.pub and pass --bind-keys-to-clusters"
        )
    if request.keyless.keyless:
        found += policy_warnings(build_policy(request.keyless, VERIFY_FLAGS), VERIFY_FLAGS)
    return tuple(found)


def _selection(request: FleetRequest) -> Selection:
    from lockgate.fleet.evidence import Selection

    return Selection(semver=request.semver, last=request.last)


def reader(request: FleetRequest, *, creds: str | None, insecure: bool) -> tuple[Reader, Reference]:
    """A reader for the request's repository, its input checked before any request is sent."""
    from lockgate import registry
    from lockgate.fleet.evidence import Reader

    ref = registry.parse(request.url)
    selection = _selection(request)
    selection.check(ref)
    selection.constraints()
    trusted = policies(request)
    return Reader(cliopts.client_for(ref, creds, insecure), ref.repository, trusted), ref


def read(request: FleetRequest, *, creds: str | None, insecure: bool) -> Fleet:
    """The fleet as the registry holds it now."""
    fleet_reader, ref = reader(request, creds=creds, insecure=insecure)
    return fleet_reader.fleet(ref, _selection(request))


def parse_waits(value: str) -> tuple[str, dict[str, str]]:
    """``--waits-for NAME=FIELD=VALUE,...``: a downstream sync's requirement, in the words of a
    Sync's ``verify.attestations[]`` (``cluster``, or ``clusters`` separated by ``|`` with
    ``minClusters`` and ``maxFailures``; ``minAge``)."""
    name, sep, spec = value.partition("=")
    fields: dict[str, str] = {}
    for part in spec.split(",") if sep else ():
        key, eq, text = part.partition("=")
        if not eq or key.strip() not in _WAIT_FIELDS:
            raise UsageError(
                f"--waits-for {value}: expected NAME=FIELD=VALUE,... with fields {', '.join(_WAIT_FIELDS)} "
                "(e.g. production=clusters=staging-*,minClusters=2,minAge=1h)"
            )
        fields[key.strip()] = text.strip()
    if not name or not sep or ("cluster" in fields) == ("clusters" in fields):
        raise UsageError(f"--waits-for {value}: name the downstream and give cluster or clusters")
    return name, fields


_WAIT_FIELDS = ("cluster", "clusters", "minClusters", "maxFailures", "minAge")


def _requirement(fields: dict[str, str], policy: AttestationPolicy, where: str) -> Requirement:
    from lockgate.model import parse_duration
    from lockgate.signing import quorum
    from lockgate.signing.requirements import Requirement

    try:
        min_age = parse_duration(fields["minAge"]) if "minAge" in fields else 0.0
        need = None
        if "clusters" in fields:
            entries = tuple(e for e in fields["clusters"].split("|") if e)
            need = quorum.Quorum(
                quorum.Selection(entries),
                min_clusters=int(fields.get("minClusters", str(len(entries)))),
                max_failures=int(fields.get("maxFailures", "0")),
            )
    except (ValueError, LockgateError) as exc:
        raise UsageError(f"--waits-for {where}: {exc}") from None
    return Requirement(cluster=fields.get("cluster"), policy=policy, min_age=min_age, quorum=need)


def page(
    request: FleetRequest, directory: Path, waits: tuple[str, ...], *, creds: str | None, insecure: bool
) -> Fleet:
    """Write the fleet's static page into ``directory`` (each file replaced whole)."""
    import datetime as dt

    from lockgate.fleet import matrix
    from lockgate.fleet import page as page_mod
    from lockgate.signing import attest, requirements

    parsed = [parse_waits(value) for value in waits]
    fleet_reader, ref = reader(request, creds=creds, insecure=insecure)
    wanted = [_requirement(fields, fleet_reader.policies[0], name) for name, fields in parsed]
    now = dt.datetime.now(dt.UTC)
    revisions = fleet_reader.revisions(ref, _selection(request))
    evidence = {r.digest: fleet_reader.evidence(r.digest) for r in revisions}
    claims = {digest: found.claims() for digest, found in evidence.items()}
    fleet = matrix.build(ref.name, revisions, claims, time=attest.timestamp(now))
    known = frozenset(c.cluster for found in claims.values() for c in found if c.verified)
    shown = [
        page_mod.Waits(
            name=name,
            requirement=requirement.describe(),
            verdicts={
                digest: _verdict(requirements.evaluate(requirement, found.found(0), now=now, known=known))
                for digest, found in evidence.items()
            },
        )
        for (name, _), requirement in zip(parsed, wanted, strict=True)
    ]
    files = page_mod.render(fleet, shown)
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        partial = directory / f".{name}.partial"
        partial.write_text(content, encoding="utf-8")
        partial.replace(directory / name)
    return fleet


def _verdict(verdict: Verdict) -> tuple[bool, str]:
    return verdict.ok, verdict.reason.removeprefix("waiting for ")


def watch(
    request: FleetRequest,
    *,
    interval: float,
    creds: str | None,
    insecure: bool,
    show: Callable[[Fleet], None],
    failed: Callable[[LockgateError], None],
    stop: threading.Event | None = None,
) -> None:
    """``show`` the fleet every ``interval`` seconds until SIGINT or SIGTERM (or ``stop``);
    a refresh that fails goes to ``failed`` and the next one is tried all the same."""
    if interval <= 0:
        raise UsageError(f"--interval {interval:g}: give a duration above zero (e.g. 10s)")
    fleet_reader, ref = reader(request, creds=creds, insecure=insecure)
    selection = _selection(request)
    done = stop or threading.Event()
    main = threading.current_thread() is threading.main_thread()
    previous = (
        {sig: signal.signal(sig, lambda *_: done.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
        if main
        else {}
    )
    try:
        while not done.is_set():
            try:
                show(fleet_reader.fleet(ref, selection))
            except LockgateError as exc:
                failed(exc)
            done.wait(interval)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
