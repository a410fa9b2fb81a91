"""The fleet's pure decisions: what a cluster's claims about one digest say, row order, rendering."""

from __future__ import annotations

import pytest

from lockgate.fleet import matrix
from lockgate.fleet.matrix import Cell, Claim, Revision, State

T1, T2, T3 = "2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z", "2026-01-01T12:00:00Z"


def healthy(at: str, *, verified: bool = True, signer: str = "key a") -> Claim:
    return Claim(
        "eu-1",
        True,
        at,
        verified,
        signer=signer if verified else "",
        sync="app",
        reason="" if verified else "not signed by a.pub",
    )


def failing(at: str, *, verified: bool = True) -> Claim:
    return Claim(
        "eu-1",
        False,
        at,
        verified,
        signer="key a" if verified else "",
        reason="" if verified else "not signed by a.pub",
    )


CASES = {
    "nothing": ([], Cell(State.NONE)),
    "healthy from its earliest attestation": (
        [healthy(T2), healthy(T1, signer="key b")],
        Cell(State.HEALTHY, since=T1, signers=("key a", "key b"), syncs=("app",)),
    ),
    "failing wins over healthy, as a downstream runner decides": (
        [healthy(T1), failing(T3), failing(T2)],
        Cell(State.FAILING, since=T2, signers=("key a",)),
    ),
    "only unverified claims: unverified, never healthy": (
        [healthy(T1, verified=False)],
        Cell(State.UNVERIFIED, unverified=1, reason="not signed by a.pub"),
    ),
    "an unverified failing claim does not make a verified healthy one fail": (
        [healthy(T1), failing(T2, verified=False)],
        Cell(
            State.HEALTHY,
            since=T1,
            signers=("key a",),
            syncs=("app",),
            unverified=1,
            reason="not signed by a.pub",
        ),
    ),
    "a healthy claim without a time is healthy, since unknown": (
        [healthy("")],
        Cell(State.HEALTHY, signers=("key a",), syncs=("app",)),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_cell_says_what_the_verified_claims_say(name: str) -> None:
    claims, expected = CASES[name]
    assert matrix.cell(claims) == expected


def test_cells_are_drawn_as_the_table_shows_them() -> None:
    assert Cell(State.HEALTHY, since=T1).text() == f"healthy since {T1}"
    assert Cell(State.FAILING, since=T2).text() == f"failing since {T2}"
    assert Cell(State.UNVERIFIED, unverified=2).text() == "unverified"
    assert Cell(State.NONE).text() == "—"


def test_revisions_newest_first_by_created_then_version_then_tag() -> None:
    def rev(name: str, *tags: str, created: str = "") -> Revision:
        return Revision("sha256:" + name * 64, tags, created)

    found = matrix.newest_first(
        [rev("a", "1.0.0"), rev("b", "main"), rev("c"), rev("d", "latest", "2.0.0"), rev("e", "v1.10.0")]
    )
    assert [r.label for r in found] == ["latest, 2.0.0", "v1.10.0", "1.0.0", "main", "sha256:cccccccccccc"]
    dated = matrix.newest_first([rev("a", "9.0.0", created=T1), rev("b", "1.0.0", created=T2)])
    assert [r.label for r in dated] == ["1.0.0", "9.0.0"]
    assert matrix.tags_in_order(["latest", "1.0.0", "v1.2.0", "edge", "1.2.0-rc.1"]) == (
        "v1.2.0",
        "1.2.0-rc.1",
        "1.0.0",
        "edge",
        "latest",
    )


def test_the_fleet_renders_as_a_table_and_as_json() -> None:
    one, two = "sha256:" + "1" * 64, "sha256:" + "2" * 64
    claims = {
        one: [healthy(T1), Claim("us-1", True, "", False, reason="referrer sha256:9: not signed by a.pub")],
        two: [failing(T3)],
    }
    fleet = matrix.build("reg/app", [Revision(one, ("1.0.0",)), Revision(two, ("1.1.0",))], claims, time=T3)
    assert fleet.clusters == ("eu-1", "us-1")
    assert fleet.table().splitlines() == [
        "REVISION  DIGEST               eu-1                                us-1",
        f"1.1.0     sha256:222222222222  failing since {T3}  —",
        f"1.0.0     sha256:111111111111  healthy since {T1}  unverified",
        "",
        "unverified (signed by no --key or identity given):",
        "  1.0.0 in us-1: referrer sha256:9: not signed by a.pub",
    ]
    doc = fleet.to_json()
    assert doc["clusters"] == ["eu-1", "us-1"] and [r["revision"] for r in doc["revisions"]] == [
        "1.1.0",
        "1.0.0",
    ]
    assert doc["revisions"][0]["clusters"]["us-1"] == {
        "state": "none",
        "since": "",
        "signers": [],
        "syncs": [],
        "unverified": 0,
        "reason": "",
    }
    assert doc["revisions"][1]["clusters"]["eu-1"]["since"] == T1
    assert matrix.build("reg/app", [], {}, time=T1).table() == "oci://reg/app: no revisions"
    bare = matrix.build("reg/app", [Revision(one)], {}, time=T1).table().splitlines()
    assert bare == [
        "REVISION             DIGEST",
        "sha256:111111111111  sha256:111111111111",
        "(no health attestations yet)",
    ]


def test_a_forged_cluster_name_cannot_drive_the_terminal() -> None:
    one = "sha256:" + "1" * 64
    forged = Claim("\x1b[2Jevil" + "x" * 100, True, "", False, reason="referrer r: not signed\x07")
    table = matrix.build("reg/app", [Revision(one, ("1.0.0",))], {one: [forged]}, time=T1).table()
    assert "\x1b" not in table and "\x07" not in table
    assert "\\x1b[2Jevil" in table and "x" * 100 not in table and "not signed\\x07" in table
