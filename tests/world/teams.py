"""The Microsoft Teams stand-in's judgement of what a workflow URL is sent.

Teams is a SaaS that cannot run here: ``Recorder(judge=teams.judge)`` stands in for a Teams
workflow ("post to a channel when a webhook request is received"). It accepts (202, as a
workflow trigger answers) only what Teams documents: a JSON ``message`` with exactly one
attachment of ``contentType`` ``application/vnd.microsoft.card.adaptive`` whose ``content``
is an Adaptive Card valid under the **published Adaptive Card JSON schema** of the version it
declares (tests/data/adaptive-cards, Microsoft's, MIT), plus Teams' documented host extension
``msteams`` (``{"width": "Full"}``; the published schema allows no extra property, so it is
judged apart). Anything else is refused with 400 and a message naming the JSON path and the
rule, recorded in ``refusals``. (A real workflow answers 202 and fails its run later; the
stand-in refuses on arrival so a test sees it.)
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from tests.world.recorder import Recorded

SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "adaptive-cards"
CARD_TYPE = "application/vnd.microsoft.card.adaptive"
#: the card versions whose published schema is vendored
VERSIONS = {"1.4": "adaptive-card-1.4.0.json"}
#: Teams' documented ``msteams`` host extension of a card (full width; mentions)
MSTEAMS = {
    "type": "object",
    "properties": {"width": {"enum": ["Full"]}, "entities": {"type": "array"}},
    "additionalProperties": False,
}


@cache
def _validator(version: str) -> jsonschema.protocols.Validator:
    published = json.loads((SCHEMAS / VERSIONS[version]).read_text())
    # the card itself, so an error names the property at fault rather than "not valid under any"
    schema = {"$ref": "#/definitions/AdaptiveCard", "definitions": published["definitions"]}
    cls = jsonschema.validators.validator_for(published)
    cls.check_schema(published)
    validator: jsonschema.protocols.Validator = cls(schema)
    return validator


def problems(message: Any) -> list[str]:
    """What Teams would refuse in ``message`` (a decoded JSON body), each as ``PATH: rule``."""
    if not isinstance(message, dict) or message.get("type") != "message":
        return ['$.type: must be "message"']
    attachments = message.get("attachments")
    if not isinstance(attachments, list) or len(attachments) != 1 or not isinstance(attachments[0], dict):
        return ["$.attachments: must hold exactly one attachment"]
    attachment = attachments[0]
    if attachment.get("contentType") != CARD_TYPE:
        return [f"$.attachments[0].contentType: must be {CARD_TYPE}"]
    card = attachment.get("content")
    if not isinstance(card, dict):
        return ["$.attachments[0].content: must be an Adaptive Card object"]
    version = card.get("version")
    if version not in VERSIONS:
        return [f"$.attachments[0].content.version: {version!r} is not one of {sorted(VERSIONS)}"]
    found = []
    host = {k: v for k, v in card.items() if k != "msteams"}
    for error in _validator(str(version)).iter_errors(host):
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        found.append(f"$.attachments[0].content{where}: {error.message}")
    for error in jsonschema.Draft7Validator(MSTEAMS).iter_errors(card.get("msteams", {})):
        where = "".join(f".{p}" for p in error.absolute_path)
        found.append(f"$.attachments[0].content.msteams{where}: {error.message}")
    return found


def judge(recorded: Recorded) -> tuple[int, bytes] | None:
    """None to accept (202), else the refusal: 400 and what is wrong."""
    try:
        message = recorded.json()
    except (ValueError, UnicodeDecodeError):
        return 400, json.dumps({"error": {"code": "InvalidRequestContent", "message": "not JSON"}}).encode()
    found = problems(message)
    if not found:
        return None
    body = {"error": {"code": "InvalidRequestContent", "message": "; ".join(found)}}
    return 400, json.dumps(body).encode()
