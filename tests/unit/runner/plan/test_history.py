"""The history of a sync: newest first, five entries, one per run of a digest; rejected digests."""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import json

import pytest

from runner.plan import history
from runner.plan.history import Entry, Outcome, Summary
from runner.plan.inventory import DATA_KEY, REQUESTED_AT, Inventory, from_secret


def entry(
    digest: str,
    *,
    result: Outcome = Outcome.SUCCEEDED,
    health: Summary = Summary.HEALTHY,
    time: str = "2025-01-01T00:00:00Z",
    message: str = "1 created",
) -> Entry:
    healthy = health is Summary.HEALTHY
    return Entry(digest, f"v1@{digest}", "nobody", result, health, time, message, was_healthy=healthy)


def digests(entries: list[Entry]) -> list[str]:
    return [e.digest for e in entries]


def test_new_digests_go_first_and_only_five_are_kept() -> None:
    kept: list[Entry] = []
    for i in range(6):
        kept = history.record(kept, entry(f"sha256:{i}"))
    assert digests(kept) == ["sha256:5", "sha256:4", "sha256:3", "sha256:2", "sha256:1"]


def test_a_pass_of_the_same_digest_updates_the_newest_entry() -> None:
    first = history.record([], entry("sha256:a", health=Summary.UNHEALTHY, result=Outcome.FAILED))
    updated = history.record(first, entry("sha256:a", time="2025-01-02T00:00:00Z"))
    assert len(updated) == 1
    assert (updated[0].result, updated[0].health, updated[0].time) == (
        Outcome.SUCCEEDED,
        Summary.HEALTHY,
        "2025-01-02T00:00:00Z",
    )


def test_a_pass_that_changes_nothing_keeps_the_time_so_nothing_is_written() -> None:
    first = history.record([], entry("sha256:a"))
    again = history.record(first, entry("sha256:a", time="2025-01-09T00:00:00Z"))
    assert again == first


def test_the_same_digest_after_another_is_a_new_entry() -> None:
    kept = history.record(history.record([], entry("sha256:a")), entry("sha256:b"))
    kept = history.record(kept, entry("sha256:a", result=Outcome.ROLLED_BACK))
    assert digests(kept) == ["sha256:a", "sha256:b", "sha256:a"]


def test_once_healthy_survives_a_later_failure_of_the_same_digest() -> None:
    kept = history.record([], entry("sha256:a"))
    kept = history.record(kept, entry("sha256:a", result=Outcome.FAILED, health=Summary.UNKNOWN))
    assert kept[0].result is Outcome.FAILED and kept[0].was_healthy
    assert history.was_healthy(kept, "sha256:a")


@pytest.mark.parametrize(
    ("entries", "excluding", "expected"),
    [
        pytest.param(
            [entry("sha256:b"), entry("sha256:a")], {"sha256:b"}, "sha256:a", id="skipsTheFailedOne"
        ),
        pytest.param(
            [entry("sha256:c"), entry("sha256:b", health=Summary.UNKNOWN), entry("sha256:a")],
            {"sha256:c"},
            "sha256:a",
            id="skipsNeverWatched",
        ),
        pytest.param(
            [entry("sha256:c"), entry("sha256:b"), entry("sha256:a")],
            {"sha256:c", "sha256:b"},
            "sha256:a",
            id="skipsRejected",
        ),
        pytest.param([entry("sha256:a", health=Summary.UNHEALTHY)], set(), None, id="noneHealthy"),
        pytest.param([], set(), None, id="empty"),
    ],
)
def test_last_healthy(entries: list[Entry], excluding: set[str], expected: str | None) -> None:
    found = history.last_healthy(entries, excluding=excluding)
    assert (found.digest if found else None) == expected


def test_rejected_digests_are_listed_once_newest_first_and_capped() -> None:
    rejected: list[str] = []
    for d in ["a", "b", "a", "c", "d", "e", "f"]:
        rejected = history.reject(rejected, d)
    assert rejected == ["f", "e", "d", "c", "a"]
    assert history.accept(rejected, "d") == ["f", "e", "c", "a"]


def test_entries_round_trip_and_unknown_words_read_leniently() -> None:
    listed = "\n".join(f"  - ConfigMap/ns/c{i}: refused" for i in range(20))
    one = entry("sha256:a", message=f"20 objects failed to apply:\n{listed}")
    (kept,) = history.record([], one)
    assert kept.message == one.message  # kept whole, every object in it
    assert Entry.from_json(kept.to_json()) == kept
    # beyond the bound: summarised, never cut in the middle of an object
    many = "\n".join(f"  - ConfigMap/ns/c{i}: {'refused ' * 20}" for i in range(100))
    (long,) = history.record([], entry("sha256:a", message=f"100 objects failed to apply:\n{many}"))
    assert len(long.message) <= history.MAX_MESSAGE and long.message.endswith(" more")
    assert long.message.startswith("100 objects failed to apply: ConfigMap/ns/c0 (refused")
    odd = Entry.from_json({"digest": "sha256:z", "result": "Exploded", "health": "Shiny"})
    assert (odd.result, odd.health, odd.was_healthy) == (Outcome.FAILED, Summary.UNKNOWN, False)


def test_timestamps_are_rfc3339_utc() -> None:
    moment = dt.datetime(2025, 3, 4, 5, 6, 7, 890, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert history.timestamp(moment) == "2025-03-04T03:06:07Z"


def test_the_inventory_keeps_history_rejected_and_the_handled_request() -> None:
    inventory = Inventory(name="web", namespace="lockgate-system", digest="sha256:b")
    inventory.history = history.record(history.record([], entry("sha256:a")), entry("sha256:b"))
    inventory.rejected = ["sha256:c"]
    inventory.handled_request = "2025-01-01T00:00:00Z"
    secret = inventory.body()
    secret["metadata"]["annotations"][REQUESTED_AT] = "2025-01-02T00:00:00Z"
    read = from_secret(secret, "web", "lockgate-system")
    assert read.history == inventory.history and read.rejected == ["sha256:c"]
    assert read.handled_request == "2025-01-01T00:00:00Z" and read.requested_at == "2025-01-02T00:00:00Z"
    assert read.request_pending


def test_an_inventory_written_before_history_existed_still_reads() -> None:
    old = {
        "members": [],
        "digest": "sha256:a",
        "revision": "v1@sha256:a",
        "source": "oci://r/x",
        "lastResult": {},
    }
    secret = Inventory(name="web", namespace="ns").body()
    secret["data"][DATA_KEY] = base64.b64encode(gzip.compress(json.dumps(old).encode())).decode()
    read = from_secret(secret, "web", "ns")
    assert (read.digest, read.history, read.rejected, read.handled_request) == ("sha256:a", [], [], "")
    assert not read.request_pending


def test_an_inventory_that_is_a_gzip_bomb_is_refused_without_inflating_it() -> None:
    from lockgate.errors import ApplyError
    from runner.plan import inventory

    secret = Inventory(name="web", namespace="ns").body()
    # 65 MiB of spaces in 65 KB: a write to the runner namespace, not an inventory lockgate wrote
    bomb = gzip.compress(b" " * (inventory.MAX_BYTES + (1 << 20)), compresslevel=9)
    secret["data"][DATA_KEY] = base64.b64encode(bomb).decode()
    with pytest.raises(ApplyError, match=r"the inventory is unreadable \(more than 67,108,864 bytes"):
        from_secret(secret, "web", "ns")
    deep = gzip.compress(b"[" * 5000 + b"]" * 5000)
    secret["data"][DATA_KEY] = base64.b64encode(deep).decode()
    with pytest.raises(ApplyError, match=r"nests deeper than 256 levels .*\(limit: depth\)"):
        from_secret(secret, "web", "ns")
