"""The inventory document: what the ApplySet parent Secret ``lockgate-<name>`` holds.

Pure. The parent carries kubectl's ApplySet label and annotations (so ``kubectl apply
--prune --applyset=secret/lockgate-<name>`` sees the same set) and, in ``data``, the exact
member list with each member's API version and the hash of what was applied, the last
applied digest and revision, the last result, the history of revisions and the digests
rolled back from (``runner.plan.history``), the last attempt and what holds the sync
(``runner.plan.attempt``), what deleting the sync needs (``runner.plan.deletion``) and the
drift the last pass left (``runner.plan.drift``). ``body`` renders the Secret to apply and
``from_secret`` reads one back; ``runner.inventory.store`` does the I/O. Crash safety rests
on the order of writes made by the pipeline: the union of old and new members before
applying, the new set only after pruning.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from lockgate import bounded
from lockgate.errors import ApplyError
from lockgate.manifests import ObjectKey
from runner.plan import applyset, drift, history
from runner.plan.attempt import Attempt, Held, Result
from runner.plan.deletion import Recorded
from runner.plan.history import Entry, Summary
from runner.plan.objects import annotations_of, labels_of

DATA_KEY = "inventory.json.gz"
ANNOTATION_PREFIX = "lockgate.dev/"
#: set by ``lockgate sync`` (as ``flux reconcile`` sets ``reconcile.fluxcd.io/requestedAt``)
REQUESTED_AT = ANNOTATION_PREFIX + "requestedAt"
#: set by ``serve`` while the configuration it runs suspends the sync (``lockgate sync`` says so)
SUSPENDED = ANNOTATION_PREFIX + "suspended"
MANAGED_BY = "app.kubernetes.io/managed-by"
#: the health of the applied digest while a pass waits for it (beside the history's words)
PROGRESSING = "Progressing"


@dataclass(frozen=True)
class Member:
    key: ObjectKey
    version: str
    hash: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.key.group}/{self.version}" if self.key.group else self.version


def member_id(key: ObjectKey) -> str:
    """Flux's inventory entry ID: ``<namespace>_<name>_<group>_<kind>``."""
    return f"{key.namespace}_{key.name}_{key.group}_{key.kind}"


def parse_member_id(text: str) -> ObjectKey:
    namespace, name, group, kind = text.split("_")
    return ObjectKey(group=group, kind=kind, namespace=namespace, name=name)


@dataclass
class Inventory:
    name: str
    namespace: str
    members: dict[ObjectKey, Member] = field(default_factory=dict)
    digest: str = ""
    revision: str = ""
    source: str = ""
    last_result: dict[str, Any] = field(default_factory=dict)
    #: newest first, at most ``runner.plan.history.MAX_ENTRIES``
    history: list[Entry] = field(default_factory=list)
    #: digests rolled back from, newest first: passes do not apply them unless a person asks
    rejected: list[str] = field(default_factory=list)
    #: the ``requestedAt`` value of the last pass a person asked for (Flux's lastHandledReconcileAt)
    handled_request: str = ""
    #: read from the parent's annotation; never written by the runner
    requested_at: str = ""
    #: read from the parent's annotation, which ``serve`` keeps (``runner.inventory.suspended``)
    suspended: bool = False
    #: a newer digest that lacks the attestations ``spec.verify.attestations`` require, and why
    waiting: str = ""
    #: the outcome of the last full pass, whatever it was (``runner.plan.attempt``)
    last_attempt: Attempt | None = None
    #: what keeps ``serve`` from running a pass (suspended, a dependency, the source); a pass clears it
    held: Held | None = None
    #: what deleting the sync needs (its deletionPolicy...), as its last pass recorded it
    deletion: Recorded | None = None
    #: the runner namespace of the ``serve`` whose configuration runs the sync: only that
    #: ``serve`` deletes the sync when it leaves its configuration ("" : never ``serve``)
    served_by: str = ""
    #: the drift the last pass left (``driftDetection.mode: warn``), HelmRelease's Drifted condition
    drift: drift.Record | None = None
    exists: bool = False

    @property
    def parent(self) -> str:
        return applyset.parent_name(self.name)

    @property
    def request_pending(self) -> bool:
        """``lockgate sync`` asked for a pass that has not run yet."""
        return bool(self.requested_at) and self.requested_at != self.handled_request

    @property
    def health(self) -> str:
        """The health of the revision the parent shows (``digest``), never another digest's:
        ``Progressing`` while a pass waits for it, else the last verdict of that digest's history
        entry (``Unknown`` after a pass that was interrupted before it decided), ``Unknown``
        when the digest has no entry."""
        last = self.last_attempt
        if last is not None and last.result is Result.PROGRESSING and last.digest == self.digest:
            return PROGRESSING
        entry = history.find(self.history, self.digest) if self.digest else None
        return entry.health.value if entry is not None else Summary.UNKNOWN.value

    @property
    def verified_by(self) -> str:
        """Who signed the revision shown, as its pass verified it ("" when not recorded)."""
        entry = history.find(self.history, self.digest) if self.digest else None
        if entry is not None:
            return entry.verified_by
        last = self.last_attempt
        return last.verified_by if last is not None and last.digest == self.digest else ""

    @property
    def set_id(self) -> str:
        return applyset.applyset_id(self.parent, self.namespace)

    def document(self) -> dict[str, Any]:
        return {
            "members": [
                {"id": member_id(m.key), "v": m.version, "h": m.hash}
                for m in sorted(self.members.values(), key=lambda m: member_id(m.key))
            ],
            "digest": self.digest,
            "revision": self.revision,
            "source": self.source,
            "lastResult": self.last_result,
            "history": [e.to_json() for e in self.history],
            "rejected": list(self.rejected),
            "lastHandledRequestedAt": self.handled_request,
            **({"waiting": self.waiting} if self.waiting else {}),
            **({"lastAttempt": self.last_attempt.to_json()} if self.last_attempt else {}),
            **({"held": self.held.to_json()} if self.held else {}),
            **({"deletion": self.deletion.to_json()} if self.deletion else {}),
            **({"servedBy": self.served_by} if self.served_by else {}),
            **({"drifted": self.drift.to_json()} if self.drift else {}),
        }

    def body(self) -> dict[str, Any]:
        labels, annotations = applyset.parent_metadata(self.parent, self.namespace, self.members)
        labels[MANAGED_BY] = "lockgate"
        annotations.update(
            {
                ANNOTATION_PREFIX + "digest": self.digest,
                ANNOTATION_PREFIX + "revision": self.revision,
                ANNOTATION_PREFIX + "source": self.source,
                ANNOTATION_PREFIX + "last-result": str(self.last_result.get("summary", "")),
                ANNOTATION_PREFIX + "members": str(len(self.members)),
            }
        )
        raw = gzip.compress(json.dumps(self.document(), separators=(",", ":")).encode(), mtime=0)
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": self.parent,
                "namespace": self.namespace,
                "labels": labels,
                "annotations": annotations,
            },
            "type": "Opaque",
            "data": {DATA_KEY: base64.b64encode(raw).decode()},
        }


#: the largest inventory read back (JSON, uncompressed): a Secret in the runner namespace is
#: input like any other, and a gzip bomb in it must not take the runner down
MAX_BYTES = bounded.DEFAULT.max_bytes


def _inflate(data: bytes) -> bytes:
    """``gzip.decompress`` that stops past ``MAX_BYTES``."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    raw = inflater.decompress(data, MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise ValueError(f"more than {MAX_BYTES:,} bytes once decompressed")
    return raw


def _decode(secret: dict[str, Any], where: str) -> dict[str, Any]:
    data = (secret.get("data") or {}).get(DATA_KEY)
    if not data:
        return {}
    try:
        value = bounded.json_value(_inflate(base64.b64decode(data)), where, max_bytes=MAX_BYTES)
    except (ValueError, OSError, zlib.error, bounded.LimitExceeded) as exc:
        raise ApplyError(
            f"{where}: the inventory is unreadable ({exc}); delete the Secret to start over"
        ) from None
    return value if isinstance(value, dict) else {}


def from_secret(secret: dict[str, Any], name: str, namespace: str) -> Inventory:
    """The inventory stored in the parent ``secret`` of sync ``name``."""
    inventory = Inventory(name=name, namespace=namespace)
    where = f"Secret/{namespace}/{inventory.parent}"
    found = labels_of(secret).get(applyset.ID_LABEL)
    if found != inventory.set_id:
        raise ApplyError(
            f"{where} exists but is not the ApplySet parent of sync {name!r} (label "
            f"{applyset.ID_LABEL}={found!r}); rename the sync or remove that Secret"
        )
    doc = _decode(secret, where)
    for entry in doc.get("members") or []:
        key = parse_member_id(str(entry["id"]))
        inventory.members[key] = Member(key, str(entry.get("v", "")), str(entry.get("h", "")))
    inventory.digest = str(doc.get("digest", ""))
    inventory.revision = str(doc.get("revision", ""))
    inventory.source = str(doc.get("source", ""))
    inventory.last_result = dict(doc.get("lastResult") or {})
    # older inventories have neither field
    inventory.history = [Entry.from_json(e) for e in doc.get("history") or [] if isinstance(e, dict)]
    inventory.rejected = [str(d) for d in doc.get("rejected") or []]
    inventory.handled_request = str(doc.get("lastHandledRequestedAt", ""))
    inventory.requested_at = str(annotations_of(secret).get(REQUESTED_AT, ""))
    inventory.suspended = annotations_of(secret).get(SUSPENDED) == "true"
    inventory.waiting = str(doc.get("waiting", ""))
    inventory.last_attempt = Attempt.from_json(doc.get("lastAttempt"))
    inventory.held = Held.from_json(doc.get("held"))
    inventory.deletion = Recorded.from_json(doc.get("deletion"))
    inventory.served_by = str(doc.get("servedBy") or "")
    inventory.drift = drift.Record.from_json(doc.get("drifted"))
    inventory.exists = True
    return inventory
