"""Attesting keys bound to the clusters they may attest for: one runner's key is not every cluster's.

A quorum (``lockgate.signing.quorum``) counts clusters, but a key set (a Secret of ``*.pub``
entries, as Flux's ``verify.secretRef``) says only "any of these keys": without a binding, the
key of one compromised runner could sign "healthy" as every other cluster and make the whole
quorum. The entry's name is the binding: ``<clusterName>.pub`` binds its key to that cluster,
and ``attest.judge`` refuses an attestation whose ``cluster`` is another ("signed by the key
for staging-eu-1 (...), claims staging-us-2"), wherever attestations are read (a pass,
``lockgate fleet``, the status page).

Which entries are bound follows a requirement's ``bindKeysToClusters`` (``bind``):

- unset (the default): a Secret in which any entry is named after a cluster the requirement
  selects (its ``cluster``, or a name its ``clusters`` patterns match, the runner's own
  included) is a Secret of cluster keys, and every entry is bound to the name it has (a
  ``fleet.pub`` beside them then attests for a cluster ``fleet`` only); a Secret in which none
  is (one ``cosign.pub``, or keys named after people) stays unbound, any key for any cluster;
  for a quorum of more than one cluster that is refused (``unbound_refusal``: one key could
  make the quorum alone), and for a quorum of one ``unbound_warning`` says so;
- ``true``: every entry is bound to its name, whatever the names;
- ``false``: none is (every key for every cluster: one key shared by a stage's runners), said
  in so many words, so a quorum over it is neither refused nor warned about.

Pure: the Secret's entries in, policies and words out; the caller reads the Secret.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence

from lockgate.signing.policy import KeyPolicy, KeySetPolicy

SUFFIX = ".pub"
#: the field, as a Sync spells it
FIELD = "bindKeysToClusters"


def entry_cluster(entry: str) -> str:
    """The clusterName an entry ``<clusterName>.pub`` names."""
    return entry.removesuffix(SUFFIX)


def selector(*, cluster: str | None = None, clusters: Sequence[str] = ()) -> Callable[[str], bool]:
    """Whether a requirement selects a clusterName: its one ``cluster``, or a name or glob of
    its ``clusters`` (as ``quorum.Selection`` matches them, but with the runner's own name:
    the key of the runner's own cluster is that cluster's all the same)."""

    def selects(name: str) -> bool:
        return name == cluster or any(fnmatch.fnmatchcase(name, entry) for entry in clusters)

    return selects


def bound_to(
    entries: Sequence[str], *, bind: bool | None, selects: Callable[[str], bool]
) -> dict[str, str | None]:
    """The cluster the key of each Secret entry may attest for; None: any."""
    if bind is None:
        bind = any(selects(entry_cluster(entry)) for entry in entries)
    return {entry: entry_cluster(entry) if bind else None for entry in entries}


def key_set(
    pems: dict[str, bytes], *, source: str, bind: bool | None, selects: Callable[[str], bool]
) -> KeySetPolicy:
    """One key per entry, in name order, each named ``source[entry]`` and bound as ``bound_to`` says."""
    clusters = bound_to(list(pems), bind=bind, selects=selects)
    return KeySetPolicy(
        tuple(
            KeyPolicy(
                KeyPolicy.from_bytes(pems[entry], source=f"{source}[{entry}]").key,
                source=f"{source}[{entry}]",
                cluster=clusters[entry],
            )
            for entry in sorted(pems)
        ),
        source=source,
    )


def unbound_warning(policy: KeySetPolicy, *, quorum: bool, bind: bool | None) -> str | None:
    """What to tell the operator when a quorum is checked against keys bound to no cluster:
    each of them can attest for every cluster of it. Nothing for one cluster (its attester's
    keys, e.g. before and after a rotation), nor when ``bindKeysToClusters: false`` asked for
    exactly that."""
    if bind is False or not quorum:
        return None
    unbound = [key.source for key in policy.keys if key.cluster is None]
    if not unbound:
        return None
    one = len(unbound) == 1
    return (
        f"{', '.join(unbound)} {'is' if one else 'are'} bound to no cluster: {'it is' if one else 'each is'} "
        "trusted to attest for every cluster of the quorum, so the runner holding it can attest healthy "
        "as all of them; name each entry <clusterName>.pub after the cluster whose runner holds the key, "
        f"or set {FIELD}: true ({FIELD}: false keeps one shared key and says nothing)"
    )


def unbound_refusal(policy: KeySetPolicy, *, min_clusters: int, bind: bool | None) -> str | None:
    """Why a quorum of ``min_clusters`` > 1 may not be checked against ``policy``: a key bound to
    no cluster can attest healthy as every cluster of it, so one runner's key would make the
    quorum alone. Nothing when every key is bound, or ``bindKeysToClusters: false`` said so."""
    if bind is False or min_clusters <= 1:
        return None
    unbound = [key.source for key in policy.keys if key.cluster is None]
    if not unbound:
        return None
    entries = ", ".join(source.rpartition("[")[2].rstrip("]") for source in unbound)
    one = len(unbound) == 1
    return (
        f"{policy.source}: {'its entry' if one else 'its entries'} {entries} "
        f"{'is' if one else 'are'} named after no cluster this quorum selects, so "
        f"{'that key is' if one else 'each of those keys is'} trusted to attest healthy for every cluster "
        f"of it and one runner's key could make all {min_clusters} alone; rename each entry "
        "<clusterName>.pub after the cluster whose runner holds the key (kubectl create secret generic "
        f"--from-file=<clusterName>.pub), or set {FIELD}: true, or {FIELD}: false to accept one key "
        "shared by the stage's runners"
    )
