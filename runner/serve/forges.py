"""Who sent a ``POST /hook/<sync>``, proved how, and whether its event asks for a pass.

``runner.serve.http`` reads the body and calls ``authenticate`` with the Runner's webhook
token (every comparison is ``runner.serve.proofs``'s, constant-time); the scheme that proved
the request names the forge, and ``classify`` reads that forge's event header:

- github: ``X-Hub-Signature-256: sha256=HEX``; event ``X-GitHub-Event``; ``ping`` answered;
  push, package, registry_package trigger.
- gitlab: ``X-Gitlab-Token: TOKEN``; event ``X-Gitlab-Event`` (GitLab has no ping; its Test
  button sends a real event); Push Hook, Tag Push Hook trigger.
- gitea, forgejo: ``X-Gitea-Signature`` / ``X-Forgejo-Signature: HEX`` (no prefix); event
  ``X-Gitea-Event`` / ``X-Forgejo-Event`` (no ping: the Test Delivery is a push); push,
  create, package trigger.
- bitbucket (Cloud and Server): ``X-Hub-Signature: sha256=HEX``; event ``X-Event-Key``;
  ``diagnostics:ping`` answered; repo:push (Cloud), repo:refs_changed (Server) trigger.
- generic-hmac (``X-Signature: sha1|sha256|sha512=HEX``) and bearer (``Authorization:
  Bearer TOKEN``): read ``X-GitHub-Event`` when sent, else any request triggers.

Other events of a known forge answer 200 and say they were ignored. A push (and a Gitea
create) names its ref and commit in the pass's reason, read from each forge's documented payload.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from runner.pipeline.secretrefs import MIN_TOKEN_BYTES
from runner.serve import proofs

# generic-hmac as Flux checks it (go-github's ValidateSignature): the prefix names the hash
_HMAC_DIGESTS = ("sha1", "sha256", "sha512")


@dataclass(frozen=True)
class Forge:
    """What a forge's webhooks look like: their event header, ping and triggering events."""

    label: str
    event_header: str
    pings: frozenset[str]
    triggers: frozenset[str]


GITHUB = Forge(
    "GitHub", "x-github-event", frozenset({"ping"}), frozenset({"push", "package", "registry_package"})
)
GITLAB = Forge("GitLab", "x-gitlab-event", frozenset(), frozenset({"push hook", "tag push hook"}))
GITEA = Forge("Gitea", "x-gitea-event", frozenset(), frozenset({"push", "create", "package"}))
FORGEJO = Forge("Forgejo", "x-forgejo-event", frozenset(), frozenset({"push", "create", "package"}))
BITBUCKET = Forge(
    "Bitbucket", "x-event-key", frozenset({"diagnostics:ping"}), frozenset({"repo:push", "repo:refs_changed"})
)
#: the scheme that proved a request -> the forge whose event header is read
FORGES: dict[str, Forge] = {
    "github": GITHUB,
    "gitlab": GITLAB,
    "gitea": GITEA,
    "forgejo": FORGEJO,
    "bitbucket": BITBUCKET,
    # a CI step or Flux-style sender may still say it speaks for GitHub (as before forges)
    "generic-hmac": GITHUB,
    "bearer": GITHUB,
}
#: GitHub (``push``) also sends ``X-Hub-Signature`` (SHA-1); only Bitbucket sends it with sha256
_BITBUCKET_DIGESTS = ("sha256",)


def authenticate(headers: Mapping[str, str], body: bytes, token: bytes) -> str | None:
    """Which scheme proved the request (``github``, ``gitlab``, ``gitea``, ``forgejo``,
    ``bitbucket``, ``generic-hmac``, ``bearer``), or None.

    A token shorter than ``MIN_TOKEN_BYTES`` proves nothing: an HMAC with an empty key is
    one anybody can compute.
    """
    if len(token) < MIN_TOKEN_BYTES:
        return None
    # Forgejo also sends Gitea's headers, and both send GitHub's: the most specific is the sender
    for scheme in ("forgejo", "gitea"):
        signature = headers.get(f"x-{scheme}-signature")
        if signature is not None and proofs.hmac_hex(signature, body, token, "sha256"):
            return scheme
    gitlab = headers.get("x-gitlab-token")
    if gitlab is not None and proofs.same(gitlab, token):
        return "gitlab"
    github = headers.get("x-hub-signature-256")
    if github is not None and proofs.prefixed_hmac(github, body, token, allowed=("sha256",)):
        return "github"
    bitbucket = headers.get("x-hub-signature")
    if bitbucket is not None and proofs.prefixed_hmac(bitbucket, body, token, allowed=_BITBUCKET_DIGESTS):
        return "bitbucket"
    generic = headers.get("x-signature")
    if generic is not None and proofs.prefixed_hmac(generic, body, token, allowed=_HMAC_DIGESTS):
        return "generic-hmac"
    if proofs.bearer(headers.get("authorization", ""), token):
        return "bearer"
    return None


@dataclass(frozen=True)
class Event:
    """What an authenticated hook asks for: a pass, a pong, or nothing."""

    kind: Literal["trigger", "ping", "ignored"]
    #: the pass's reason (trigger) or the answer's message
    text: str


def classify(scheme: str, headers: Mapping[str, str], payload: Any) -> Event:
    forge = FORGES.get(scheme, GITHUB)
    raw = headers.get(forge.event_header, "").strip()
    event = raw.lower()
    if event and event in forge.pings:
        return Event("ping", f"pong: the {forge.label} webhook reaches lockgate; nothing triggered")
    if event and event not in forge.triggers:
        wanted = ", ".join(sorted(forge.triggers))
        return Event("ignored", f"{forge.label} event {raw!r} ignored: only {wanted} trigger")
    if not event:
        return Event("trigger", f"webhook ({scheme})")
    return Event("trigger", f"webhook: {forge.label} {raw}{_pushed(scheme, payload)}")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _at(ref: str, commit: str) -> str:
    """`` refs/heads/main@6d1e2f3a4b5c``, or nothing without a ref."""
    if not ref:
        return ""
    return f" {ref}" + (f"@{commit[:12]}" if commit else "")


def _pushed(scheme: str, payload: Any) -> str:
    """The ref and commit a push names, from each forge's documented payload."""
    if not isinstance(payload, dict):
        return ""
    if scheme == "bitbucket":
        # Server (repo:refs_changed): changes[].ref.id, changes[].toHash;
        # Cloud (repo:push): push.changes[].new.name, push.changes[].new.target.hash
        changes = payload.get("changes")
        if isinstance(changes, list) and changes and isinstance(changes[0], dict):
            ref = changes[0].get("ref")
            return _at(_text(ref.get("id")) if isinstance(ref, dict) else "", _text(changes[0].get("toHash")))
        push = payload.get("push")
        changes = push.get("changes") if isinstance(push, dict) else None
        if isinstance(changes, list) and changes and isinstance(changes[0], dict):
            new = changes[0].get("new")
            if isinstance(new, dict):
                target = new.get("target")
                commit = _text(target.get("hash")) if isinstance(target, dict) else ""
                return _at(_text(new.get("name")), commit)
        return ""
    # GitHub, GitLab, Gitea and Forgejo all name them ref and after; Gitea's and Forgejo's
    # create (a branch or tag made) names the short ref and its commit as sha
    return _at(_text(payload.get("ref")), _text(payload.get("after")) or _text(payload.get("sha")))
