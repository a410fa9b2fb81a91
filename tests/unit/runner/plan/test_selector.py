"""Kubernetes label selectors as apimachinery's ``labels.Parse`` reads and matches them."""

from __future__ import annotations

import pytest

from runner.plan import selector

LABELS = {"app": "web", "tier": "front", "replicas": "3", "empty": ""}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("", True),
        ("app", True),
        ("!app", False),
        ("!legacy", True),
        ("app=web", True),
        ("app==web", True),
        ("app = web , tier = front", True),
        ("app=api", False),
        ("app!=api", True),
        ("legacy!=x", True),  # absent: != holds
        ("tier in (front, back)", True),
        ("tier in (back)", False),
        ("legacy in (x)", False),  # absent: in does not hold
        ("tier notin (back)", True),
        ("legacy notin (x)", True),
        ("replicas>2", True),
        ("replicas<3", False),
        ("app>2", False),  # not a number: neither > nor <
        ("empty=", True),
        ("example.com/team", False),
        ("app=web,!legacy,tier notin (x)", True),
    ],
)
def test_selectors_match_as_kubernetes_does(text: str, matches: bool) -> None:
    assert selector.parse(text).matches(LABELS) is matches


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("app=web,", "a requirement is missing after the last ','"),
        ("=web", "expected a key, found '='"),
        ("app web", "expected =, ==, !=, in, notin, > or <, found 'web'"),
        ("app in ()", "in and notin need at least one value"),
        ("app in (a", "expected ',' or ')', found the end"),
        ("app in a", "expected '(' after in or notin"),
        ("replicas > many", "expected an integer"),
        ("-app=web", "key '-app'"),
        ("Example.com/app=web", "its prefix must be a DNS subdomain"),
        ("app=" + "x" * 64, "at most 63"),
        ("app=web!", "expected ',' between requirements, found '!'"),
        ("app=we@b", "value 'we@b'"),
    ],
)
def test_bad_selectors_say_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(selector.SelectorError) as caught:
        selector.parse(text)
    assert says in str(caught.value)
