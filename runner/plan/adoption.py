"""``lockgate adopt``'s decisions: may a sync take over what Flux applied, and from which revision.

Pure. Flux's Kustomization says what it applied (``status.inventory``: the same ``<namespace>
_<name>_<group>_<kind>`` IDs as lockgate's inventory, so seeding is a copy) and from which
artifact (``status.lastAppliedRevision``, ``<tag>@sha256:<hex>``): adopt applies exactly that
digest, so the handover changes nothing that runs; the sync's next pass moves on to its tag.
It refuses while the Kustomization, or a Kustomization that applies it (its parent, e.g. the
``flux-system`` of a bootstrap: found by Flux's owner labels on it and by the parents'
inventories), is not suspended, and when the pre-flight dry run of that digest would create
or recreate an object, change anything but ownership labels, or when lockgate's rendering and
Flux's inventory are not the same set of objects: each refusal names the object and why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lockgate.diff import fields
from lockgate.diff.changeset import Action, Entry
from lockgate.manifests import ObjectKey
from runner.plan import applyset
from runner.plan.inventory import Member, member_id, parse_member_id
from runner.plan.objects import labels_of, metadata_of

GROUP = "kustomize.toolkit.fluxcd.io"
API_VERSION = f"{GROUP}/v1"
#: the Sync annotation ``lockgate import`` writes: the Kustomization behind the sync
ANNOTATION = "lockgate.dev/flux-kustomization"
OWNER_NAME = f"{GROUP}/name"
OWNER_NAMESPACE = f"{GROUP}/namespace"
#: the field manager whose fields adopt takes over (Flux's ``--override-manager`` for it)
FLUX_MANAGER = "kustomize-controller"
#: what the adopting pass may change on an object Flux applied: ownership, nothing that runs
_OWNERSHIP_LABELS = (OWNER_NAME, OWNER_NAMESPACE, applyset.PART_OF_LABEL)
ALLOWED_CHANGES = frozenset(fields.child("metadata.labels", key) for key in _OWNERSHIP_LABELS)


@dataclass(frozen=True)
class Ref:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"Kustomization {self.namespace}/{self.name}"

    @property
    def member(self) -> ObjectKey:
        return ObjectKey(GROUP, "Kustomization", self.namespace, self.name)


def parse_ref(value: str | None) -> Ref | None:
    namespace, slash, name = (value or "").partition("/")
    return Ref(namespace, name) if slash and namespace and name else None


def ref_of(ks: Mapping[str, Any]) -> Ref:
    meta = metadata_of(ks)
    return Ref(str(meta.get("namespace", "")), str(meta.get("name", "")))


def suspended(ks: Mapping[str, Any]) -> bool:
    return bool((ks.get("spec") or {}).get("suspend"))


def inventory_of(ks: Mapping[str, Any]) -> dict[ObjectKey, Member]:
    """Flux's inventory as lockgate members (no hash: every object is applied once by adopt)."""
    entries = ((ks.get("status") or {}).get("inventory") or {}).get("entries") or []
    members: dict[ObjectKey, Member] = {}
    for entry in entries:
        if not isinstance(entry, Mapping) or str(entry.get("id", "")).count("_") != 3:
            continue
        key = parse_member_id(str(entry["id"]))
        members[key] = Member(key, str(entry.get("v", "")))
    return members


def applied_digest(ks: Mapping[str, Any]) -> str | None:
    """``sha256:<hex>`` of the artifact Flux last applied (``lastAppliedRevision``), if any."""
    revision = str((ks.get("status") or {}).get("lastAppliedRevision") or "")
    digest = revision.rpartition("@")[2]
    return digest if digest.startswith("sha256:") and len(digest) == 71 else None


def pinned_url(url: str, digest: str) -> str:
    """The sync's repository at ``digest`` (its tag, or a digest it had, dropped)."""
    base = url.split("@", 1)[0]
    scheme, sep, rest = base.partition("://")
    path = rest if sep else scheme
    last = path.rsplit("/", 1)
    if ":" in last[-1]:  # a tag, not a registry port
        path = path[: len(path) - len(last[-1])] + last[-1].split(":", 1)[0]
    return f"{scheme}://{path}@{digest}" if sep else f"{path}@{digest}"


def parents(child: Mapping[str, Any], kustomizations: Iterable[Mapping[str, Any]]) -> list[Ref]:
    """The Kustomizations that apply ``child``: named by Flux's owner labels on it, or listing
    it in their inventory."""
    ref = ref_of(child)
    found: set[Ref] = set()
    labels = labels_of(dict(child))
    if labels.get(OWNER_NAME) and labels.get(OWNER_NAMESPACE):
        found.add(Ref(labels[OWNER_NAMESPACE], labels[OWNER_NAME]))
    wanted = member_id(ref.member)
    for other in kustomizations:
        entries = ((other.get("status") or {}).get("inventory") or {}).get("entries") or []
        if any(isinstance(e, Mapping) and e.get("id") == wanted for e in entries):
            found.add(ref_of(other))
    found.discard(ref)
    return sorted(found, key=str)


def ancestry(
    ks: Mapping[str, Any], kustomizations: Mapping[Ref, Mapping[str, Any]]
) -> list[tuple[Ref, Mapping[str, Any] | None]]:
    """Every Kustomization above ``ks`` (parents, theirs, ...), each once, with its object
    (None when it is named by a label but no longer exists)."""
    seen: list[Ref] = []
    todo = [ks]
    while todo:
        current = todo.pop()
        for parent in parents(current, kustomizations.values()):
            if parent not in seen:
                seen.append(parent)
                found = kustomizations.get(parent)
                if found is not None:
                    todo.append(found)
    return [(ref, kustomizations.get(ref)) for ref in seen]


def suspension_problems(ks: Mapping[str, Any], kustomizations: Mapping[Ref, Mapping[str, Any]]) -> list[str]:
    """What must be suspended before adopting ``ks``, each with the command that does it."""
    problems: list[str] = []
    ref = ref_of(ks)
    if not suspended(ks):
        problems.append(
            f"{ref} is not suspended: its next reconcile would fight the adoption "
            f"(flux suspend kustomization {ref.name} -n {ref.namespace})"
        )
    for parent, obj in ancestry(ks, kustomizations):
        if obj is not None and not suspended(obj):
            problems.append(
                f"{parent}, which applies {ref}, is not suspended: it could re-apply or prune it "
                f"while lockgate takes over (flux suspend kustomization {parent.name} -n {parent.namespace})"
            )
    return problems


def _ownership_only(change: fields.FieldChange) -> bool:
    """A change the adopting pass may make: ownership labels; or an annotation that is new on
    the object (a controller writing it between the pre-flight's read and its dry run, as the
    Deployment controller writes ``deployment.kubernetes.io/revision``: the dry run answers
    with the server's object of a moment later; an object's own annotations change nothing
    that runs)."""
    if change.path in ALLOWED_CHANGES:
        return True
    return change.path.startswith("metadata.annotations") and change.before is fields.ABSENT


@dataclass(frozen=True)
class Refusal:
    key: ObjectKey
    why: str

    def __str__(self) -> str:
        return f"{self.key}: {self.why}"


def refusals(
    entries: Sequence[Entry], desired: Iterable[ObjectKey], flux: Mapping[ObjectKey, Member], ref: Ref
) -> list[Refusal]:
    """Why the adopting pass must not run, from its dry run (``entries``), the objects lockgate
    renders (``desired``, applied ones) and Flux's inventory (``flux``)."""
    found: list[Refusal] = []
    wanted = set(desired)
    for entry in entries:
        if entry.action is Action.CREATED:
            why = (
                f"would be created: the cluster has no such object, so lockgate renders something {ref} "
                "did not apply (the rendering differs from Flux's)"
            )
            found.append(Refusal(entry.key, why))
        elif entry.action is Action.CONFIGURED and "recreated" in entry.reason:
            found.append(Refusal(entry.key, f"would be recreated: {entry.reason}"))
        elif entry.action is Action.CONFIGURED:
            changed = [str(c) for c in entry.changes if not _ownership_only(c)]
            if changed:
                why = "would change what runs (the rendering differs from Flux's): " + "; ".join(changed)
                found.append(Refusal(entry.key, why))
    refused = {r.key for r in found}
    for key in sorted(wanted - set(flux) - refused, key=str):
        found.append(
            Refusal(key, f"rendered by lockgate but not in the inventory of {ref}: another owner's object")
        )
    for key in sorted(set(flux) - wanted, key=str):
        found.append(
            Refusal(
                key, f"in the inventory of {ref} but not rendered by lockgate from the revision Flux applied"
            )
        )
    return found
