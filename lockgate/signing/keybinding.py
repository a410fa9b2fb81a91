"""Attesting keys bound to the clusters they may attest for: one runner's key is not every cluster's.

A quorum (``lockgate.signing.quorum``) counts clusters, but a key set (a Secret of ``*.pub``
entries, as Flux's ``verify.secretRef``) says only "any of these keys": without a binding, the
key of one compromised runner could sign "healthy" as every other cluster and make the whole
quorum. The entry's name is the binding: ``<clusterName>.pub`` binds its key to that cluster,
and ``attest.judge`` refuses an attestation whose ``cluster`` is another ("signed by the key
for staging-eu-1 (...), claims staging-us-2"), wherever attestations are read (a pass,
``lockgate fleet``, the status page).

Which entries are bound follows a requirement's ``bindKeysToClusters`` (``bind``):

- unset (the default): an entry whose name the requirement selects (its ``cluster``, or a
  name its ``clusters`` patterns match, the runner's own included) is bound; another
  (``fleet.pub``, ``cosign.pub``) stays unbound, trusted for any cluster as before, and
  ``unbound_warning`` says so once when that matters (a quorum, or a set that mixes both);
- ``true``: every entry is bound to its name (an entry named after no selected cluster can
  never count: nothing is trusted for every cluster);
- ``false``: none is (every key for every cluster: one key shared by a stage's runners).

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


def bound_to(entry: str, *, bind: bool | None, selects: Callable[[str], bool]) -> str | None:
    """The cluster the key of Secret entry ``entry`` may attest for; None: any."""
    if bind is False:
        return None
    name = entry_cluster(entry)
    return name if bind is True or selects(name) else None


def key_set(
    pems: dict[str, bytes], *, source: str, bind: bool | None, selects: Callable[[str], bool]
) -> KeySetPolicy:
    """One key per entry, in name order, each named ``source[entry]`` and bound as ``bound_to`` says."""
    return KeySetPolicy(
        tuple(
            KeyPolicy(
                KeyPolicy.from_bytes(pems[entry], source=f"{source}[{entry}]").key,
                source=f"{source}[{entry}]",
                cluster=bound_to(entry, bind=bind, selects=selects),
            )
            for entry in sorted(pems)
        ),
        source=source,
    )


def unbound_warning(policy: KeySetPolicy, *, quorum: bool, bind: bool | None) -> str | None:
    """What to tell the operator when unbound keys can speak for clusters they do not belong to:
    in a quorum any unbound key does; for one cluster, an unbound key beside keys bound by name
    does (a set with no binding at all is one attester's keys, e.g. before and after a rotation).
    Nothing when ``bindKeysToClusters: false`` asked for exactly that."""
    if bind is False:
        return None
    unbound = [key.source for key in policy.keys if key.cluster is None]
    if not unbound or (not quorum and len(unbound) == len(policy.keys)):
        return None
    which = ", ".join(unbound)
    return (
        f"{which} {'is' if len(unbound) == 1 else 'are'} bound to no cluster: "
        f"{'it is' if len(unbound) == 1 else 'each is'} trusted to attest for every cluster, so the runner "
        "holding it can attest healthy as all of them; name each entry <clusterName>.pub after the "
        f"cluster whose runner holds the key, or set {FIELD}: true ({FIELD}: false keeps one shared key "
        "and says nothing)"
    )
