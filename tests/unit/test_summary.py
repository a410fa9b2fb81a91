"""``lockgate.summary``: an error's whole text and its one-line summary, table-driven."""

from __future__ import annotations

import pytest

from lockgate.errors import ApplyError
from lockgate.summary import summarise, whole

TWO = whole(
    "2 objects failed to apply",
    [
        "Deployment.apps/web/web: Unschedulable: 0/3 nodes are available: 3 node(s) didn't match selector",
        'ConfigMap/web/settings: ConfigMap "settings" is invalid: data[bad key!]: Invalid value',
    ],
)


def test_whole_lists_each_detail_under_its_headline() -> None:
    assert TWO.splitlines()[0] == "2 objects failed to apply:"
    assert TWO.splitlines()[1].startswith("  - Deployment.apps/web/web: Unschedulable")
    assert whole("one line") == "one line"
    assert whole("head:", ["a\nsecond line"]) == "head:\n  - a\n    second line"


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("one line", 200, "one line"),
        ("", 200, ""),
        ("ends on a colon:", 200, "ends on a colon"),
        (
            TWO,
            400,
            "2 objects failed to apply: Deployment.apps/web/web (Unschedulable: 0/3 nodes are available: "
            '3 node(s) didn\'t match selector), ConfigMap/web/settings (ConfigMap "settings" is invalid: '
            "data[bad key!]: Invalid value)",
        ),
        (TWO, 80, "2 objects failed to apply: Deployment.apps/web/web (Unschedulable: 0/…), +1 more"),
        (TWO, 60, "2 objects failed to apply: Deployment.apps/web/web, +1 more"),
        (TWO, 50, "2 objects failed to apply: Deployment/web, +1 more"),
        (TWO, 40, "2 objects failed to apply: +2 more"),
        (TWO, 20, "2 objects failed to…"),
        (
            "2 objects failed to apply:\n  - a: x\n  - b: y\n  ... and 18 more",
            200,
            "2 objects failed to apply: a (x), b (y), +18 more",
        ),
        (
            "v2 failed its health checks and was rolled back to v1\n1 object(s) failed:\n"
            "  - Deployment.apps/web/web: Failed: progress deadline exceeded",
            200,
            "v2 failed its health checks and was rolled back to v1; 1 object(s) failed: "
            "Deployment.apps/web/web (Failed: progress deadline exceeded)",
        ),
        (
            "rolling back failed too:\nthe registry is down",
            200,
            "rolling back failed too: the registry is down",
        ),
        ("first\nsecond part that is long", 12, "first…"),
    ],
    ids=[
        "one-line",
        "empty",
        "no-dangling-colon",
        "all-fit",
        "one-shown-one-counted",
        "no-room-for-the-reason",
        "object-key-shortened",
        "only-counted",
        "headline-clipped",
        "capped-list-counts-the-rest",
        "paragraphs",
        "colon-completed-by-next-line",
        "later-paragraph-hinted",
    ],
)
def test_summarise(text: str, limit: int, expected: str) -> None:
    got = summarise(text, limit)
    assert got == expected
    assert len(got) <= limit and "\n" not in got and not got.endswith(":")


def test_an_error_is_one_value_with_its_summary() -> None:
    error = ApplyError("2 objects failed to apply", details=["a: refused", "b: refused"])
    assert error.message == "2 objects failed to apply:\n  - a: refused\n  - b: refused"
    assert error.summary(60) == "2 objects failed to apply: a (refused), b (refused)"


def test_counted_gives_the_noun_its_number() -> None:
    """"1 objects healthy" was a pass's summary (issue 36, Low)."""
    from lockgate.summary import counted

    assert [counted(n, "object") for n in (0, 1, 2)] == ["0 objects", "1 object", "2 objects"]
    assert counted(1, "policy", "policies") == "1 policy" and counted(3, "policy", "policies") == "3 policies"
