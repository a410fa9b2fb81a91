"""``spec.ignore``: fields another writer owns (an HPA's replicas, a webhook's stamp), in Flux's format.

Pure. A rule is Flux's ``IgnoreRule`` (``fluxcd/kustomize-controller`` ``api/v1``): ``paths``,
JSON Pointers (RFC 6901: ``/`` inside a key is ``~1``, ``~`` is ``~0``), and an optional
``target`` whose ``group``, ``version``, ``kind``, ``name`` and ``namespace`` are Go regular
expressions matched whole, with Kubernetes ``labelSelector`` and ``annotationSelector``; no
target means every object. ``paths_for`` picks the pointers of one object (matched against
the object as the artifact has it, once, in ``runner.plan.desired``).

An ignored path is out of the drift comparison (``without``: the no-op fast path and the
classification both compare what is left), so a change there alone neither applies nor
reports anything. When an object is applied for another reason, ``payload`` settles each
ignored path whose live value differs from the artifact's, as Flux's ``ssa`` does: the field
is left out of what is sent (so its owner keeps it), unless lockgate itself owns it and no
other Apply manager does, where leaving it out would delete it: then the live value is sent
(so it is kept, and still ours). An object being created gets every field: nothing is live.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lockgate import goregex
from runner.plan import applyset, selector, takeover
from runner.plan.objects import ManagedFieldsEntry, managed_fields_of

#: pointers naming the object itself: an ignore rule may not take those away
IDENTITY = ("", "/apiVersion", "/kind", "/metadata", "/metadata/name", "/metadata/namespace")
POINTER_HINT = (
    "a JSON pointer (RFC 6901) starts with '/' and names one field, e.g. /spec/replicas; "
    "write '/' inside a key as ~1 and '~' as ~0 (/metadata/annotations/example.com~1owner)"
)


class RuleError(ValueError):
    """A rule that cannot be used; the message says what is wrong and how to write it, and
    ``field`` is the target's field at fault (``kind``, ``labelSelector``), if any."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Pointer:
    """A parsed JSON Pointer: ``text`` as written, ``tokens`` unescaped."""

    text: str
    tokens: tuple[str, ...]

    def __str__(self) -> str:
        return self.text


def pointer(text: str) -> Pointer:
    """``text`` parsed as a JSON Pointer to a field; raises ``RuleError``."""
    if not text.startswith("/"):
        raise RuleError(f"{text!r} is not a JSON pointer: {POINTER_HINT}")
    tokens = []
    for raw in text[1:].split("/"):
        rest = raw.replace("~0", "").replace("~1", "")
        if "~" in rest:
            raise RuleError(f"{text!r}: '~' must be followed by 0 or 1 (~0 is '~', ~1 is '/')")
        tokens.append(raw.replace("~1", "/").replace("~0", "~"))
    if "-" in tokens:
        raise RuleError(f"{text!r}: '-' (after the last list item) names no field; use an index")
    if text.rstrip("/") in IDENTITY or text in IDENTITY:
        raise RuleError(f"{text!r} names the object's identity, which cannot be ignored")
    return Pointer(text, tuple(tokens))


@dataclass(frozen=True)
class Target:
    """Flux's ``kustomize.Selector``: which objects a rule applies to (every field optional)."""

    group: str | None = None
    version: str | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    label_selector: str | None = None
    annotation_selector: str | None = None
    _regexes: dict[str, goregex.Regexp] = field(default_factory=dict, init=False, compare=False, repr=False)
    _selectors: dict[str, selector.Selector] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        """Compile everything now, so a bad pattern is refused when the configuration loads."""
        for attribute in ("group", "version", "kind", "name", "namespace"):
            text = getattr(self, attribute)
            if text:
                try:
                    goregex.compile(text)  # its errors quote the pattern as written
                    self._regexes[attribute] = goregex.compile(f"^(?:{text})$")
                except goregex.RegexpError as exc:
                    raise RuleError(exc.message, field=attribute) from None
        for attribute in ("label_selector", "annotation_selector"):
            text = getattr(self, attribute)
            if text:
                try:
                    self._selectors[attribute] = selector.parse(text)
                except selector.SelectorError as exc:
                    raise RuleError(f"{text!r}: {exc}", field=_spelled(attribute)) from None

    def matches(self, body: Mapping[str, Any]) -> bool:
        api_version = str(body.get("apiVersion", ""))
        group, _, version = api_version.rpartition("/")
        metadata = body.get("metadata") or {}
        values = {
            "group": group,
            "version": version,
            "kind": str(body.get("kind", "")),
            "name": str(metadata.get("name", "")),
            "namespace": str(metadata.get("namespace", "")),
        }
        if not all(regex.fullmatch(values[a]) is not None for a, regex in self._regexes.items()):
            return False
        for attribute, parsed in self._selectors.items():
            found = metadata.get("labels" if attribute == "label_selector" else "annotations")
            if not parsed.matches({str(k): str(v) for k, v in (found or {}).items()}):
                return False
        return True


def _spelled(attribute: str) -> str:
    head, *rest = attribute.split("_")
    return head + "".join(part.title() for part in rest)


@dataclass(frozen=True)
class Rule:
    paths: tuple[Pointer, ...]
    target: Target | None = None

    def matches(self, body: Mapping[str, Any]) -> bool:
        return self.target is None or self.target.matches(body)


def paths_for(rules: Sequence[Rule], body: Mapping[str, Any]) -> tuple[Pointer, ...]:
    """The pointers ignored on the object ``body``, each once, in rule order."""
    found: dict[str, Pointer] = {}
    for rule in rules:
        if rule.matches(body):
            for path in rule.paths:
                found.setdefault(path.text, path)
    return tuple(found.values())


# ---- reading and editing bodies at a pointer --------------------------------------------
_MISSING = object()


def _index(node: list[Any], token: str) -> int | None:
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        return None
    number = int(token)
    return number if number < len(node) else None


def lookup(body: Any, path: Pointer) -> Any:
    """The value at ``path``, or ``_MISSING``."""
    node = body
    for token in path.tokens:
        if isinstance(node, dict):
            if token not in node:
                return _MISSING
            node = node[token]
        elif isinstance(node, list):
            index = _index(node, token)
            if index is None:
                return _MISSING
            node = node[index]
        else:
            return _MISSING
    return node


def _parent(body: Any, path: Pointer, *, create: bool) -> tuple[Any, str] | None:
    node = body
    for token in path.tokens[:-1]:
        if isinstance(node, dict):
            if token not in node or node[token] is None:
                if not create:
                    return None
                node[token] = {}
            node = node[token]
        elif isinstance(node, list) and (index := _index(node, token)) is not None:
            node = node[index]
        else:
            return None
    return node, path.tokens[-1]


def _remove(body: dict[str, Any], path: Pointer) -> None:
    """Remove the field at ``path``, and the maps that leaves empty (sending ``annotations: {}``
    would claim the whole map)."""
    chain: list[tuple[Any, Any]] = []  # (container, key or index) from the root down
    node: Any = body
    for token in path.tokens:
        if isinstance(node, dict) and token in node:
            chain.append((node, token))
        elif isinstance(node, list) and (index := _index(node, token)) is not None:
            chain.append((node, index))
        else:
            return
        node = chain[-1][0][chain[-1][1]]
    for container, key in reversed(chain):
        del container[key]
        if container or container is body or isinstance(container, list):
            return


def _put(body: dict[str, Any], path: Pointer, value: Any) -> bool:
    found = _parent(body, path, create=True)
    if found is None:
        return False
    node, token = found
    if isinstance(node, dict):
        node[token] = copy.deepcopy(value)
        return True
    if isinstance(node, list) and (index := _index(node, token)) is not None:
        node[index] = copy.deepcopy(value)
        return True
    return False


def _dropped(node: Any, tokens: tuple[str, ...]) -> Any:
    """``node`` without the field at ``tokens``: new containers along the path only, the rest
    shared (the no-op fast path runs this for every object with ignored fields, every pass)."""
    token, rest = tokens[0], tokens[1:]
    if isinstance(node, dict) and token in node:
        child = _dropped(node[token], rest) if rest else _MISSING
        if child is node[token]:
            return node
        copied = dict(node)
        if child is _MISSING or child == {}:
            del copied[token]  # as ``_remove``: a map left empty goes too
        else:
            copied[token] = child
        return copied
    if isinstance(node, list) and (index := _index(node, token)) is not None:
        if not rest:
            return node[:index] + node[index + 1 :]
        child = _dropped(node[index], rest)
        return node if child is node[index] else [*node[:index], child, *node[index + 1 :]]
    return node


def _order(path: Pointer) -> tuple[tuple[int, int, str], ...]:
    """Indexes compared as numbers (item 10 after item 9)."""
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in path.tokens)


def without(body: Mapping[str, Any], paths: Sequence[Pointer]) -> dict[str, Any]:
    """``body`` without the fields at ``paths`` (what the drift comparison sees); ``body`` is
    not changed, and what is not on a path is shared with it."""
    result: Any = body
    # list items from the last: removing one must not shift another path's index
    for path in sorted(paths, key=_order, reverse=True):
        result = _dropped(result, path.tokens)
    return dict(result)


# ---- who owns a path (managedFields) -----------------------------------------------------
def _member(node: dict[str, Any], item: Any) -> str | None:
    """The FieldsV1 key (``k:{...}`` or ``v:...``) naming list item ``item`` in ``node``."""
    for key in node:
        if not key.startswith(("k:", "v:")):
            continue
        try:
            named = json.loads(key[2:])
        except ValueError:
            continue
        if key.startswith("v:") and named == item:
            return key
        keyed = key.startswith("k:") and isinstance(named, dict) and isinstance(item, dict)
        if keyed and all(item.get(k) == v for k, v in named.items()):
            return key
    return None


def _owns(fields: dict[str, Any], live: Any, path: Pointer) -> bool:
    """Whether one FieldsV1 set covers ``path``; owning a field above it whole (an atomic map
    or list, recorded with no children) counts."""
    node, value = fields, live
    for token in path.tokens:
        if not node and node is not fields:
            return True
        if isinstance(value, list):
            index = _index(value, token)
            key = None if index is None else _member(node, value[index])
            value = None if index is None else value[index]
        else:
            key = f"f:{token}"
            value = value.get(token) if isinstance(value, dict) else None
        child = node.get(key) if key is not None else None
        if not isinstance(child, dict):
            return False
        node = child
    return True


def _entries(live: Mapping[str, Any]) -> list[ManagedFieldsEntry]:
    return [e for e in managed_fields_of(dict(live)) if not e.get("subresource")]


def keeps_ours(
    live: Mapping[str, Any], path: Pointer, *, manager: str, takes_over: bool, overrides: Collection[str] = ()
) -> bool:
    """Whether leaving ``path`` out of the apply would delete it: lockgate owns it (its Apply
    entry, or kubectl's entries it is about to take over) and no other Apply manager does."""
    ours = False
    for entry in _entries(live):
        name = str(entry.get("manager", ""))
        if not _owns(entry.get("fieldsV1") or {}, live, path):
            continue
        if takes_over and takeover.taken_over(entry, manager, overrides):
            ours = True  # kubectl's, ours once the takeover patch has run
        elif entry.get("operation") == "Apply":
            if name != manager:
                return False  # another Apply manager keeps it when we let go
            ours = True
    return ours


def payload(
    body: Mapping[str, Any],
    live: Mapping[str, Any],
    paths: Sequence[Pointer],
    *,
    manager: str,
    takes_over: bool,
    overrides: Collection[str] = (),
) -> dict[str, Any]:
    """What to send for an existing object: ``body`` with each ignored path that differs from
    ``live`` left out, or set to the live value where leaving it out would delete it."""
    result: dict[str, Any] | None = None
    for path in paths:
        wanted, found = lookup(body, path), lookup(live, path)
        if wanted == found:
            continue
        result = result if result is not None else copy.deepcopy(dict(body))
        kept = found is not _MISSING and keeps_ours(
            live, path, manager=manager, takes_over=takes_over, overrides=overrides
        )
        if not (kept and _put(result, path, found)):
            _remove(result, path)
    if result is None:
        return dict(body)
    # the member label is what makes the object ours: it is always sent
    member = (body.get("metadata") or {}).get("labels", {}).get(applyset.PART_OF_LABEL)
    if member is not None:
        result.setdefault("metadata", {}).setdefault("labels", {})[applyset.PART_OF_LABEL] = member
    return result
