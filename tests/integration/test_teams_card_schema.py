"""lockgate's Microsoft Teams cards, judged by the published Adaptive Card JSON schema.

Teams cannot run here: ``Recorder(judge=teams.judge)`` (``tests/world/teams.py``) stands in for
a Teams workflow URL and accepts only a message whose card is valid under Microsoft's published
schema for the card's version (vendored with its licence under tests/data/adaptive-cards) and
Teams' documented ``msteams`` extension. The cards are the product's (``notify.teams.card``),
sent over HTTP as the notifier sends them; each rule of the stand-in is first shown to refuse a
card with one field broken, naming the JSON path.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from runner.serve.notify import teams as product_teams
from tests.world import teams
from tests.world.recorder import Recorder

EVENTS = {
    "error-with-metadata": {
        "involvedObject": {"kind": "Sync", "name": "web", "namespace": "apps"},
        "severity": "error",
        "message": "apply failed: ConfigMap/apps/first: bad key!\n\tand more",
        "metadata": {"summary": "prod", "revision": "1.2.3@sha256:ab", "digest": "sha256:ab"},
    },
    "info-without-metadata": {
        "involvedObject": {"kind": "Sync", "name": "web", "namespace": "apps"},
        "severity": "info",
        "message": "applied 3 objects",
    },
}


@pytest.fixture
def workflow() -> Iterator[Recorder]:
    stand_in = Recorder(status=202, judge=teams.judge)
    yield stand_in
    stand_in.stop()


def _post(workflow: Recorder, body: bytes) -> requests.Response:
    return requests.post(
        f"{workflow.url}/workflows/x/triggers/manual/paths/invoke",
        data=body,
        headers={"Content-Type": "application/json"},
        timeout=10,
    )


@pytest.mark.parametrize("event", sorted(EVENTS))
def test_the_card_lockgate_sends_is_valid_under_the_published_schema(event: str, workflow: Recorder) -> None:
    answer = _post(workflow, product_teams.card(EVENTS[event]))
    assert answer.status_code == 202, answer.text
    assert workflow.refusals == []


def _content(message: dict[str, Any]) -> dict[str, Any]:
    content: dict[str, Any] = message["attachments"][0]["content"]
    return content


BROKEN: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "text-size": (
        lambda m: _content(m)["body"][0]["items"][0].update(size="huge"),
        "$.attachments[0].content.body[0]",
    ),
    "no-card-version": (lambda m: _content(m).pop("version"), "content.version: None is not one of"),
    "unknown-card-property": (lambda m: _content(m).update(width="Full"), "'width' was unexpected"),
    "msteams-width": (lambda m: _content(m)["msteams"].update(width="Wide"), "content.msteams.width"),
    "content-type": (
        lambda m: m["attachments"][0].update(contentType="application/json"),
        "$.attachments[0].contentType",
    ),
    "two-attachments": (lambda m: m["attachments"].append(m["attachments"][0]), "exactly one attachment"),
    "message-type": (lambda m: m.update(type="card"), '$.type: must be "message"'),
    "fact-without-value": (
        lambda m: _content(m)["body"][0]["items"][2]["facts"][0].pop("value"),
        "$.attachments[0].content.body[0]",
    ),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_card_with_one_field_broken_is_refused_naming_where(name: str, workflow: Recorder) -> None:
    message = json.loads(product_teams.card(EVENTS["error-with-metadata"]))
    broken = copy.deepcopy(message)
    change, says = BROKEN[name]
    change(broken)
    answer = _post(workflow, json.dumps(broken).encode())
    assert answer.status_code == 400
    assert says in answer.json()["error"]["message"], answer.text
    assert len(workflow.refusals) == 1


def test_the_published_schema_alone_refuses_teams_msteams_extension() -> None:
    """Why ``msteams`` is judged apart: the published AdaptiveCard allows no extra property, and
    Teams documents ``msteams: {"width": "Full"}`` as its host extension."""
    card = _content(json.loads(product_teams.card(EVENTS["info-without-metadata"])))
    errors = list(teams._validator("1.4").iter_errors(card))
    assert [e.message for e in errors] == ["Additional properties are not allowed ('msteams' was unexpected)"]
