"""Forge webhooks as the real Gitea sends them: a branch or tag created is a ``create`` event
whose payload names the short ref and its commit as ``sha`` (Gitea 1.26's ``CreatePayload``),
not ``after`` as a push does; the pass's reason names both either way."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping

import pytest

from runner.serve import forges

TOKEN = b"0123456789abcdef-webhook"
SHA = "5f3c0a1b2c3d4e5f60718293a4b5c6d7e8f90123"


def _signed(event: str, payload: Mapping[str, object], forge: str = "gitea") -> forges.Event:
    body = json.dumps(payload).encode()
    headers = {
        f"x-{forge}-signature": hmac.new(TOKEN, body, hashlib.sha256).hexdigest(),
        f"x-{forge}-event": event,
    }
    scheme = forges.authenticate(headers, body, TOKEN)
    assert scheme == forge
    return forges.classify(scheme, headers, json.loads(body))


@pytest.mark.parametrize(("forge", "label"), [("gitea", "Gitea"), ("forgejo", "Forgejo")])
def test_a_created_tag_names_its_ref_and_commit(forge: str, label: str) -> None:
    created = {"ref": "v1.0.0", "ref_type": "tag", "sha": SHA, "repository": {"full_name": "o/app"}}
    event = _signed("create", created, forge)
    assert (event.kind, event.text) == ("trigger", f"webhook: {label} create v1.0.0@5f3c0a1b2c3d")


def test_a_push_still_names_after_not_a_stray_sha() -> None:
    pushed = {"ref": "refs/tags/v1.0.0", "before": "0" * 40, "after": SHA, "sha": "f" * 40}
    event = _signed("push", pushed)
    assert event.text == "webhook: Gitea push refs/tags/v1.0.0@5f3c0a1b2c3d"
