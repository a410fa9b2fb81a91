"""A sync's decryption and postBuild without the cluster: what CI can know, and the rest named.

A pass decrypts SOPS documents with the age keys of a Secret and substitutes the variables of
``substituteFrom`` ConfigMaps and Secrets (``reconcile.prepare_fetched``): all in the cluster,
which a preview never reads. Here the same steps run with what CI has: inline ``substitute``
values as they are, and every other variable, and every encrypted value, as the text
``(from Secret NAME)`` (or ``(from ConfigMap NAME)``; several sources are all named, since CI
cannot tell which holds it), substituted by the runner's own substitution
(``substitute.substitute_object``, Flux's rules) and placed where the value would be. Nothing
is decrypted and nothing fails for lack of a key: the same placeholder on both sides of a
preview compares equal, so only what the pull request changes shows. A value derived from a
Secret's variable is marked secret, as a pass marks it, so its changes are masked the same way.
The common metadata and the pass's shared secret strings follow, as in a pass.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections.abc import Iterator, Mapping, Set
from typing import Any

from lockgate.diff.secret_values import SecretValues
from lockgate.errors import VerificationError
from lockgate.manifests import K8sObject
from runner.pipeline import decrypt, substitute
from runner.pipeline.options import SyncOptions
from runner.plan import overlay, secret_origin
from runner.plan.sops import cipher, objects, stores, tree


def placeholder(sources: tuple[substitute.Source, ...]) -> str:
    return "(from " + " or ".join(f"{s.kind} {s.name}" for s in sources) + ")"


class Variables(Mapping[str, str]):
    """The inline variables, and for any other name the placeholder of the sync's sources.

    Truthy when any variable may be defined (Flux substitutes nothing when none is), so a sync
    whose only variables come from the cluster is substituted as a pass would."""

    def __init__(self, post_build: substitute.PostBuild) -> None:
        self.known = {name: value.replace("\n", "") for name, value in post_build.substitute.items()}
        sources = tuple(post_build.substitute_from)
        self.fallback = placeholder(sources) if sources else None
        self.from_secret = any(s.kind == "Secret" for s in sources)

    def __getitem__(self, name: str) -> str:
        if name in self.known:
            return self.known[name]
        if self.fallback is None:
            raise KeyError(name)
        return self.fallback

    def __iter__(self) -> Iterator[str]:
        return iter(self.known)

    def __len__(self) -> int:
        return len(self.known) + (1 if self.fallback is not None else 0)


class SecretNames(Set[str]):
    """The variables a Secret may define: any name not given inline, when a source is a Secret."""

    def __init__(self, variables: Variables) -> None:
        self.variables = variables

    def __contains__(self, name: object) -> bool:
        return self.variables.from_secret and isinstance(name, str) and name not in self.variables.known

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _seal_values(node: Any, text: str) -> Any:
    if cipher.is_encrypted(node):
        return text
    if isinstance(node, dict):
        return {key: _seal_values(value, text) for key, value in node.items()}
    if isinstance(node, list):
        return [_seal_values(value, text) for value in node]
    return node


def _seal_entries(body: dict[str, Any], text: str) -> dict[str, Any] | None:
    """A v1 Secret whose entries hold SOPS documents, each entry replaced by ``text``."""
    changed = False
    out = dict(body)
    for field in ("data", "stringData"):
        values = body.get(field)
        if not isinstance(values, dict):
            continue
        entries = dict(values)
        for key, value in values.items():
            if not isinstance(value, str):
                continue
            try:
                raw = base64.b64decode(value, validate=True) if field == "data" else value.encode()
            except binascii.Error:
                continue
            if stores.detect(raw) is None:
                continue
            entries[key] = base64.b64encode(text.encode()).decode() if field == "data" else text
            changed = True
        out[field] = entries
    return out if changed else None


def seal(found: list[K8sObject], decryption: decrypt.Decryption | None) -> tuple[list[K8sObject], int]:
    """The objects with every SOPS-encrypted value as ``(from Secret NAME)``; how many were."""
    if decryption is None:
        try:
            objects.refuse_encrypted(found)  # a pass refuses them too
        except objects.DecryptionFailed as exc:
            raise VerificationError(f"decryption failed: {exc.message}") from None
        return found, 0
    text = f"(from Secret {decryption.secret_ref})" if decryption.secret_ref else "(encrypted)"
    sealed: list[K8sObject] = []
    count = 0
    for obj in found:
        body: dict[str, Any] | None = None
        if objects.disabled(obj):
            pass
        elif objects.is_document(obj):
            body = _seal_values({k: v for k, v in obj.body.items() if k != tree.METADATA_KEY}, text)
        elif obj.body.get("kind") == "Secret" and obj.body.get("apiVersion") == "v1":
            body = _seal_entries(obj.body, text)
        if body is None:
            sealed.append(obj)
        else:
            count += 1
            sealed.append(K8sObject(body=body, file=obj.file, line=obj.line, secret=obj.secret))
    return sealed, count


class Memo:
    """The substitutions made so far in one preview: the same object with the same variables
    (a cluster's two revisions share most objects, every sync of a cluster its values) is
    substituted once. Substitution is a function of the object's body, its secret marks and
    the sync's ``postBuild``; the cached result keeps only those, never the object's origin."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: dict[tuple[str, str, SecretValues], tuple[dict[str, Any], SecretValues]] = {}

    def substitute(
        self, obj: K8sObject, variables: Variables, names: SecretNames, *, always: bool, key: str
    ) -> K8sObject:
        wanted = (key, json.dumps(obj.body, sort_keys=True, default=str), obj.secret)
        with self._lock:
            known = self._done.get(wanted)
        if known is None:
            made = substitute.substitute_object(obj, variables, always=always, secret=names)
            known = (made.body, made.secret)
            with self._lock:
                self._done[wanted] = known
        return K8sObject(body=known[0], file=obj.file, line=obj.line, secret=known[1])


def _key(post_build: substitute.PostBuild) -> str:
    sources = [(s.kind, s.name, s.optional) for s in post_build.substitute_from]
    return json.dumps([sorted(post_build.substitute.items()), sources, post_build.always])


def prepare(
    found: list[K8sObject], options: SyncOptions, memo: Memo | None = None
) -> tuple[list[K8sObject], tuple[str, ...]]:
    """``reconcile.prepare_fetched`` without the cluster; with what a person should know."""
    memo = memo or Memo()
    notes: list[str] = []
    prepared, sealed = seal(found, options.decryption)
    if sealed:
        notes.append(
            f"{sealed} SOPS-encrypted objects are shown with (from Secret ...) for their encrypted "
            "values: CI has no key, so a change of their plaintext does not show"
        )
    post_build = options.post_build
    if post_build is not None and post_build.wanted:
        variables = Variables(post_build)
        names = SecretNames(variables)
        key = _key(post_build)
        prepared = [
            memo.substitute(obj, variables, names, always=post_build.always, key=key) for obj in prepared
        ]
        if variables.fallback is not None:
            notes.append(
                f"variables not given inline (spec.postBuild.substitute) read {variables.fallback}: "
                "their values live in the cluster and are not shown"
            )
    if options.common_metadata is not None:
        prepared = overlay.with_common_metadata(prepared, options.common_metadata)
    return secret_origin.share(prepared), tuple(notes)
