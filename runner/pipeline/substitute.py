"""postBuild variable substitution of one pass: after loading the objects, before placement.

As kustomize-controller's postBuild: the variables are the entries of the ``substituteFrom``
ConfigMaps and Secrets in order (a later source wins over an earlier one), then the inline
``substitute`` map over all of them, every value with its newlines stripped. Each object is
rendered to YAML, substituted as text with ``lockgate.envsubst`` (strict: an undefined
variable without a default fails) and parsed again, unless it is labelled or annotated
``kustomize.toolkit.fluxcd.io/substitute: disabled`` or ``lockgate.dev/substitute: disabled``.
As in Flux, nothing is substituted when no variable is defined at all, unless
``substituteStrategy: Always``. The ConfigMaps and
Secrets are read from the runner namespace through the runner's own client at each pass
(they change) and their values stay in memory; errors name the source or the object and the
variable, never a value. A value that a variable from a Secret went into, whole or in part
(``url: postgres://u:${PASSWORD}@db``, ``${TOKEN^^}``), is marked secret on the object
(``K8sObject.secret``), so its diffs mask it whatever the kind.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

import yaml

from lockgate import envsubst, fastyaml, manifests
from lockgate.diff.secret_values import SecretValues
from lockgate.errors import LockgateError, RenderError, UsageError
from lockgate.manifests import K8sObject
from runner.kube.client import Kube
from runner.kube.discovery import CONFIGMAP, SECRET

OPT_OUT_KEYS = ("kustomize.toolkit.fluxcd.io/substitute", "lockgate.dev/substitute")
DISABLED = "disabled"
FIELD = "spec.postBuild.substituteFrom"


@dataclass(frozen=True)
class Source:
    kind: str  # "ConfigMap" or "Secret"
    name: str
    optional: bool = False


@dataclass(frozen=True)
class PostBuild:
    substitute: Mapping[str, str]
    substitute_from: Sequence[Source] = ()
    #: ``substituteStrategy: Always``: substitute even when no variable is defined
    always: bool = False

    @property
    def wanted(self) -> bool:
        return bool(self.substitute or self.substitute_from or self.always)


@dataclass(frozen=True)
class Variables:
    values: dict[str, str]
    #: the names whose value came from a Secret (a later ConfigMap or ``substitute`` clears it)
    secret: frozenset[str] = frozenset()


def load_variables(post_build: PostBuild, kube: Kube, namespace: str) -> Variables:
    """The variables of a pass, in Flux's precedence, values without newlines."""
    found: dict[str, str] = {}
    secret: set[str] = set()
    for index, source in enumerate(post_build.substitute_from):
        where = f"{source.kind}/{namespace}/{source.name} ({FIELD}[{index}])"
        resource = CONFIGMAP if source.kind == "ConfigMap" else SECRET
        body = kube.get(resource, namespace, source.name)
        if body is None:
            if source.optional:
                continue
            raise UsageError(f"{where}: not found (set optional: true to allow it to be missing)")
        data = body.get("data") or {}
        for key, value in data.items() if isinstance(data, dict) else ():
            if source.kind == "Secret":
                try:
                    text = base64.b64decode(str(value), validate=True).decode("utf-8", "surrogateescape")
                except binascii.Error:
                    raise UsageError(f"{where}: entry {key!r} is not base64") from None
                secret.add(str(key))
            else:
                text = str(value)
                secret.discard(str(key))
            found[str(key)] = envsubst.clean_value(text)
    for key, value in post_build.substitute.items():
        found[key] = envsubst.clean_value(value)
        secret.discard(key)
    return Variables(found, frozenset(secret))


def _disabled(obj: K8sObject) -> bool:
    metadata = obj.body.get("metadata") or {}
    for part in ("labels", "annotations"):
        values = metadata.get(part) or {}
        if isinstance(values, dict) and any(values.get(key) == DISABLED for key in OPT_OUT_KEYS):
            return True
    return False


def _where(obj: K8sObject) -> str:
    shown = f"{obj.kind}/{obj.namespace}/{obj.name}" if obj.namespace else f"{obj.kind}/{obj.name}"
    return f"{shown} ({obj.origin})"


def substitute_object(
    obj: K8sObject, variables: Mapping[str, str], *, always: bool = False, secret: Set[str] = frozenset()
) -> K8sObject:
    """``obj`` with its variables substituted (Flux: per object, on its YAML, parsed again);
    every value a ``secret`` variable went into is marked secret on the result."""
    if _disabled(obj) or not (variables or always):
        return obj
    where = _where(obj)
    try:
        envsubst.check_names(variables)
        if not _mentions_dollar(obj.body):
            # nothing to substitute: the text would come back as it went (the round trip through
            # YAML keeps every value), so the dump and the parse are saved
            return obj
        # no line folding: a folded ${...} would carry the fold into the template
        text = yaml.safe_dump(obj.body, sort_keys=True, allow_unicode=True, width=2**31 - 1)
        output, spans = envsubst.evaluate_marked(text, variables, secret)
    except envsubst.SubstitutionError as exc:
        raise RenderError(f"{where}: postBuild substitution failed: {exc.message}") from None
    try:
        found = manifests.load_text(output, obj.file)
    except LockgateError as exc:
        raise RenderError(f"{where}: after postBuild substitution: {exc.message}") from None
    if len(found) != 1:
        raise RenderError(f"{where}: after postBuild substitution the text holds {len(found)} objects")
    marked = obj.secret.union(SecretValues.of(_scalars_in(output, spans))) if spans else obj.secret
    return K8sObject(body=found[0].body, file=obj.file, line=obj.line, secret=marked)


def _mentions_dollar(node: Any) -> bool:
    """Whether any key or string of ``node`` holds a ``$`` (only then can envsubst change it)."""
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if "$" in item:
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _scalars_in(text: str, spans: Sequence[tuple[int, int]]) -> list[Any]:
    """The scalars of the YAML ``text`` that overlap a span, as written and as read."""
    found: list[Any] = []
    constructor = yaml.SafeLoader("")
    pending = [yaml.compose(text, Loader=fastyaml.Loader)]  # libyaml's marks count characters too
    while pending:
        node = pending.pop()
        if isinstance(node, yaml.MappingNode):
            pending.extend(part for pair in node.value for part in pair)
        elif isinstance(node, yaml.SequenceNode):
            pending.extend(node.value)
        elif isinstance(node, yaml.ScalarNode):
            start, end = node.start_mark.index, node.end_mark.index
            if any(s < end and start < e for s, e in spans):
                found.extend((node.value, constructor.construct_object(node)))
    return found


def apply(objects: list[K8sObject], variables: Variables, *, always: bool = False) -> list[K8sObject]:
    return [
        substitute_object(obj, variables.values, always=always, secret=variables.secret) for obj in objects
    ]
