"""Rendezvous sharding and the Lease decisions: one owner per sync, minimal moves, fair shares,
and the specs client-go would write."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.plan import shard

NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
MEMBERS = st.sets(NAMES, min_size=1, max_size=8)
SYNCS = st.sets(NAMES, min_size=1, max_size=60)


# ---- rendezvous hashing -------------------------------------------------------------


@given(syncs=SYNCS, members=MEMBERS)
def test_every_sync_has_exactly_one_owner_among_the_members(syncs: set[str], members: set[str]) -> None:
    owners = shard.assign(syncs, members)
    assert owners.keys() == syncs
    assert set(owners.values()) <= members


@given(syncs=SYNCS, members=MEMBERS)
def test_the_owner_does_not_depend_on_the_order_of_members(syncs: set[str], members: set[str]) -> None:
    forward = sorted(members)
    for sync in syncs:
        assert shard.owner(sync, forward) == shard.owner(sync, reversed(forward))


@given(syncs=SYNCS, members=st.sets(NAMES, min_size=2, max_size=8), data=st.data())
def test_removing_a_member_moves_only_its_syncs(
    syncs: set[str], members: set[str], data: st.DataObject
) -> None:
    gone = data.draw(st.sampled_from(sorted(members)))
    before = shard.assign(syncs, members)
    after = shard.assign(syncs, members - {gone})
    moved = {sync for sync in syncs if before[sync] != after[sync]}
    assert moved == {sync for sync, owner in before.items() if owner == gone}


@given(syncs=SYNCS, members=MEMBERS, newcomer=NAMES)
def test_adding_a_member_moves_syncs_only_to_it(syncs: set[str], members: set[str], newcomer: str) -> None:
    before = shard.assign(syncs, members)
    after = shard.assign(syncs, members | {newcomer})
    assert all(after[s] == newcomer for s in syncs if before[s] != after[s])


@pytest.mark.parametrize(
    "members",
    [
        ["runner-0", "runner-1", "runner-2"],
        ["lockgate-7d9f8c6b5-x2k4q", "lockgate-7d9f8c6b5-p9z1m", "lockgate-7d9f8c6b5-a8c3v"],
        ["host-a-101", "host-a-102", "host-b-101"],
    ],
)
def test_a_thousand_syncs_over_three_members_are_shared_within_15_percent(members: list[str]) -> None:
    shares = Counter(shard.assign([f"sync-{i}" for i in range(1000)], members).values())
    assert set(shares) == set(members)
    for count in shares.values():
        assert abs(count - 1000 / 3) <= 0.15 * 1000 / 3, shares


def test_no_members_owns_nothing() -> None:
    assert shard.owner("a", []) is None
    assert shard.assign(["a"], []) == {}


def test_the_weight_is_stable_across_processes() -> None:
    # sha256, not hash(): a fixed value every replica computes alike
    assert shard.weight("runner-0", "sync-a") == 0x596B580DBC74435B  # sha256("runner-0\0sync-a")[:8]


# ---- MicroTime ----------------------------------------------------------------------


def test_micro_time_is_rfc3339_with_microseconds_in_utc() -> None:
    assert shard.micro_time(1_700_000_000.123456) == "2023-11-14T22:13:20.123456Z"
    assert shard.micro_time(0) == "1970-01-01T00:00:00.000000Z"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2023-11-14T22:13:20.123456Z", 1_700_000_000.123456),
        ("2023-11-14T22:13:20Z", 1_700_000_000.0),
        ("2023-11-14T23:13:20.5+01:00", 1_700_000_000.5),
    ],
)
def test_parse_time_reads_micro_time_and_time(text: str, seconds: float) -> None:
    assert shard.parse_time(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", [None, "", "yesterday", 12])
def test_parse_time_of_nothing_or_garbage_is_none(text: object) -> None:
    assert shard.parse_time(text) is None


# ---- who holds a Lease --------------------------------------------------------------

T0 = 1_700_000_000.0


def spec(
    holder: str = "b", *, renewed: float = T0, duration: int = 30, transitions: int = 0
) -> dict[str, object]:
    return {
        "holderIdentity": holder,
        "leaseDurationSeconds": duration,
        "acquireTime": shard.micro_time(T0 - 100),
        "renewTime": shard.micro_time(renewed),
        "leaseTransitions": transitions,
    }


@pytest.mark.parametrize(
    ("name", "lease", "now", "holder"),
    [
        ("heldByAnother", spec("b"), T0 + 10, "b"),
        ("heldUntilTheEnd", spec("b"), T0 + 29.9, "b"),
        ("withinTheSkew", spec("b"), T0 + 30 + shard.CLOCK_SKEW - 0.1, "b"),
        ("expiredPastTheSkew", spec("b"), T0 + 30 + shard.CLOCK_SKEW, ""),
        ("heldByMe", spec("a"), T0 + 10, ""),
        ("released", {**spec("b"), "holderIdentity": None}, T0 + 1, ""),
        ("noLease", None, T0, ""),
        ("emptySpec", {}, T0, ""),
        ("neverRenewed", {"holderIdentity": "b", "leaseDurationSeconds": 30}, T0, ""),
        (
            "acquiredOnly",
            {"holderIdentity": "b", "acquireTime": shard.micro_time(T0), "leaseDurationSeconds": 30},
            T0 + 5,
            "b",
        ),
    ],
)
def test_holder_of(name: str, lease: dict[str, object] | None, now: float, holder: str) -> None:
    assert shard.holder_of(lease, "a", now) == holder


def test_a_new_lease_starts_with_no_transitions() -> None:
    assert shard.acquired(None, "a", T0, 30) == {
        "holderIdentity": "a",
        "leaseDurationSeconds": 30,
        "acquireTime": shard.micro_time(T0),
        "renewTime": shard.micro_time(T0),
        "leaseTransitions": 0,
    }


def test_a_takeover_counts_a_transition_and_restarts_the_acquire_time() -> None:
    taken = shard.acquired(spec("b", transitions=4), "a", T0 + 40, 30)
    assert taken["holderIdentity"] == "a"
    assert taken["leaseTransitions"] == 5
    assert taken["acquireTime"] == taken["renewTime"] == shard.micro_time(T0 + 40)


def test_acquiring_after_a_release_counts_a_transition_as_client_go_does() -> None:
    free = shard.released(spec("b", transitions=2), T0)
    assert "holderIdentity" not in free
    assert shard.acquired(free, "b", T0 + 1, 30)["leaseTransitions"] == 3


def test_the_same_holder_taking_it_again_keeps_acquire_time_and_transitions() -> None:
    again = shard.acquired(spec("a", transitions=2), "a", T0 + 5, 30)
    assert again["leaseTransitions"] == 2
    assert again["acquireTime"] == shard.micro_time(T0 - 100)
    assert again["renewTime"] == shard.micro_time(T0 + 5)


def test_renewal_moves_only_the_renew_time() -> None:
    before = spec("a", transitions=3)
    after = shard.renewed(before, T0 + 10, 30)
    assert after == {**before, "renewTime": shard.micro_time(T0 + 10)}


def test_a_release_clears_the_holder_with_a_one_second_duration() -> None:
    assert shard.released(spec("a", transitions=3), T0 + 7) == {
        "leaseDurationSeconds": 1,
        "acquireTime": shard.micro_time(T0 + 7),
        "renewTime": shard.micro_time(T0 + 7),
        "leaseTransitions": 3,
    }


def test_durations_are_whole_seconds_rounded_up() -> None:
    assert shard.acquired(None, "a", T0, 2.5)["leaseDurationSeconds"] == 3
    assert shard.acquired(None, "a", T0, 0.2)["leaseDurationSeconds"] == 1


# ---- replicas on different configurations ---------------------------------------------


def member(identity: str, joined: float | None, config: str) -> shard.Member:
    return shard.Member(identity, joined=joined, config=config)


def test_replicas_on_one_configuration_all_share() -> None:
    me = member("b", 20.0, "sha256:x")
    got = shard.sharing(me, [member("a", 10.0, "sha256:x"), member("c", 30.0, "sha256:x")])
    assert got == shard.Sharing(peers=("a", "b", "c")) and not got.standing_by


def test_a_newcomer_on_another_configuration_stands_by_and_the_others_leave_it_out() -> None:
    old_a, old_b, new = (
        member("a", 10.0, "sha256:x"),
        member("b", 11.0, "sha256:x"),
        member("n", 50.0, "sha256:y"),
    )
    standing = shard.sharing(new, [old_a, old_b])
    assert standing.standing_by and standing.peers == ()
    assert standing.deferring_to == ("a", "b") and standing.their_config == "sha256:x"
    assert shard.sharing(old_a, [old_b, new]).peers == ("a", "b")


def test_the_eldest_replica_decides_whichever_of_them_reloaded_first() -> None:
    # a (eldest) reloaded to y first: b, still on x, stands by until it reloads too
    a, b = member("a", 10.0, "sha256:y"), member("b", 11.0, "sha256:x")
    assert shard.sharing(a, [b]).peers == ("a",)
    assert shard.sharing(b, [a]).standing_by
    # some group always runs the syncs, and never two groups at once
    for first, second in ((a, b), (b, a)):
        runs = [m.identity for m in (first, second) if not shard.sharing(m, [first, second]).standing_by]
        assert runs == ["a"]


def test_members_that_record_no_configuration_count_as_agreeing() -> None:
    me = member("b", 20.0, "sha256:x")
    assert shard.sharing(me, [member("a", 10.0, "")]).peers == ("a", "b")
    assert shard.sharing(member("a", 10.0, ""), [me]).peers == ("a", "b")


def test_a_replica_not_listed_yet_joins_last() -> None:
    me = member("a", None, "sha256:y")
    assert shard.sharing(me, [member("z", 99.0, "sha256:x")]).standing_by
