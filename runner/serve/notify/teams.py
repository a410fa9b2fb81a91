"""The Microsoft Teams body of an event: an Adaptive Card, as Flux's ``msteams`` notifier sends it.

Teams' Office 365 connectors (MessageCard) are being retired; workflows (Power Automate) take a
``message`` with one ``application/vnd.microsoft.card.adaptive`` attachment. The card is the one
notification-controller builds: schema version 1.4 (the highest Teams renders), full width, one
Container holding the object (``sync/NAME.NAMESPACE`` in bold, large), the message (wrapped,
in the ``attention`` colour for an error) and a FactSet of the event's metadata, ``summary``
first and the rest sorted by key; an event without metadata has no FactSet (the published
Adaptive Card schema requires a FactSet's ``facts``). Pure: built from Flux's event JSON
(``messages``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

CARD_VERSION = "1.4"
CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"


def card(event: Mapping[str, Any]) -> bytes:
    """The Teams message for Flux's ``event`` (a dict of ``messages.flux_event``'s JSON)."""
    involved = event["involvedObject"]
    title = f"{str(involved['kind']).lower()}/{involved['name']}.{involved['namespace']}"
    heading = {"type": "TextBlock", "text": title, "size": "large", "weight": "bolder", "wrap": True}
    message: dict[str, Any] = {"type": "TextBlock", "text": event["message"], "wrap": True}
    if event.get("severity") == "error":
        message["color"] = "attention"
    metadata: Mapping[str, str] = event.get("metadata") or {}
    facts = [{"title": "summary", "value": metadata["summary"]}] if "summary" in metadata else []
    facts += [{"title": k, "value": metadata[k]} for k in sorted(metadata) if k != "summary"]
    fact_set = [{"type": "FactSet", "facts": facts}] if facts else []
    body = {
        "type": "message",
        "attachments": [
            {
                "contentType": CONTENT_TYPE,
                "content": {
                    "$schema": SCHEMA,
                    "type": "AdaptiveCard",
                    "version": CARD_VERSION,
                    "body": [
                        {
                            "type": "Container",
                            "items": [heading, message, *fact_set],
                        }
                    ],
                    "msteams": {"width": "Full"},
                },
            }
        ],
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
