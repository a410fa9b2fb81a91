"""SOPS decryption of one pass: after loading the objects, before postBuild substitution.

As kustomize-controller's ``spec.decryption`` (provider ``sops``): the age identities are
every ``*.agekey`` entry of ``secretRef``, a Secret of the runner namespace read at each
pass through the runner's own client (keys rotate) and kept in memory only; each object is
then decrypted by ``runner.plan.sops.objects`` (pure). A missing Secret, a Secret without
identities for the file, a tampered value or MAC fail the pass before anything is applied,
as a ``VerificationError`` (decryption fails closed) naming the object, its file and line,
never a value. A pass without decryption refuses objects that carry a ``sops`` block.
"""

from __future__ import annotations

from dataclasses import dataclass

from lockgate.errors import VerificationError
from lockgate.manifests import K8sObject
from runner.kube.client import Kube
from runner.pipeline import source
from runner.pipeline.secretrefs import SecretReader
from runner.plan.sops import keys, objects

PROVIDER = "sops"
FIELD = "spec.decryption.secretRef.name"
KEY_SUFFIX = ".agekey"


@dataclass(frozen=True)
class Decryption:
    """``spec.decryption``: the provider (``sops``) and the Secret holding the age identities."""

    secret_ref: str | None = None
    provider: str = PROVIDER
    #: check whole objects' MACs; None: for objects read from files, not for those kustomize
    #: rebuilt (it reorders keys, so their MAC cannot match; Flux never checks it)
    check_mac: bool | None = None


def _check_mac(decryption: Decryption, obj: K8sObject) -> bool:
    if decryption.check_mac is not None:
        return decryption.check_mac
    return not obj.file.startswith(source.KUSTOMIZE_ORIGIN)


def load_identities(decryption: Decryption, kube: Kube, namespace: str) -> keys.Identities:
    """The identities of the Secret's ``*.agekey`` entries (none without a secretRef)."""
    reader = SecretReader(kube, namespace)
    if decryption.secret_ref is None:
        return keys.Identities(source=f"the sync ({FIELD} is not set)", keys=())
    where = reader.where(decryption.secret_ref, FIELD)
    data = reader.read(decryption.secret_ref, field=FIELD, error=VerificationError)
    entries = {name: value for name, value in data.items() if name.endswith(KEY_SUFFIX)}
    try:
        return keys.parse(entries, source=where)
    except keys.AgeError as exc:
        raise VerificationError(str(exc)) from None


def apply(
    found: list[K8sObject], decryption: Decryption | None, kube: Kube, namespace: str
) -> list[K8sObject]:
    """The objects of a pass, decrypted; without ``decryption`` encrypted ones are refused."""
    try:
        if decryption is None:
            objects.refuse_encrypted(found)
            return found
        identities = load_identities(decryption, kube, namespace)
        return [objects.decrypt(obj, identities, check_mac=_check_mac(decryption, obj)) for obj in found]
    except objects.DecryptionFailed as exc:
        raise VerificationError(f"decryption failed: {exc.message}") from None
