"""Typed access to one configuration document, collecting errors that name their field.

``config`` and ``native`` read documents through ``Fields`` so that every problem reads
``<file>:<line>: document <n>: <field path>: <what is wrong>`` (the line of the field,
or of its nearest written parent) and a run reports all of them at
once instead of stopping at the first. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from action.images import policy
from lockgate import goregex, located

_MISSING = object()


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    operator: str  #: In, NotIn, Exists, DoesNotExist
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelSelector:
    """A Kubernetes label selector, as ``policySelector`` uses it."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    expressions: tuple[LabelRequirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        for req in self.expressions:
            present = req.key in labels
            ok = {
                "In": present and labels.get(req.key) in req.values,
                "NotIn": not present or labels.get(req.key) not in req.values,
                "Exists": present,
                "DoesNotExist": not present,
            }[req.operator]
            if not ok:
                return False
        return True


@dataclass(frozen=True)
class Where:
    """A document of a file, and where its fields were written (``file:line: document N``)."""

    file: str
    document: int  #: 0-based index of the document in its file
    #: the document's first line (0: not known)
    line: int = 0
    #: the line of each key and item, by path (``lockgate.located.line_maps``)
    lines: Mapping[located.Path, int] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __str__(self) -> str:
        # people count documents from one
        return (
            f"{self.file}:{self.line}: document {self.document + 1}"
            if self.line
            else (f"{self.file}: document {self.document + 1}")
        )

    def at(self, path: str) -> str:
        """``file:line: document N`` of the field ``path`` (``spec.images[0].exclude``), or of
        its nearest written parent."""
        if not self.line:
            return str(self)
        wanted = located.parse_dotted(path)
        for end in range(len(wanted), 0, -1):
            found = self.lines.get(wanted[:end])
            if found is not None:
                return f"{self.file}:{found}: document {self.document + 1}"
        return str(self)


class Fields:
    def __init__(self, doc: Mapping[str, Any], where: Where, *, prefix: str = "") -> None:
        self.doc = doc
        self.where = where
        self.prefix = prefix
        self.problems: list[str] = []

    def fail(self, path: str, message: str) -> None:
        self.problems.append(f"{self.where.at(self.prefix + path)}: {self.prefix}{path}: {message}")

    def raw(self, path: str) -> Any:
        node: Any = self.doc
        for part in path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return _MISSING
            node = node[part]
        return _MISSING if node is None else node

    def sub(self, path: str) -> Fields | None:
        """A nested mapping as its own ``Fields`` (sharing the problem list), or None."""
        value = self.raw(path)
        if value is _MISSING:
            return None
        if not isinstance(value, Mapping):
            self.fail(path, f"expected a mapping, got {type(value).__name__}")
            return None
        child = Fields(value, self.where, prefix=f"{self.prefix}{path}.")
        child.problems = self.problems
        return child

    def string(self, path: str, *, required: bool = False) -> str:
        value = self.raw(path)
        if value is _MISSING:
            if required:
                self.fail(path, "required field is missing")
            return ""
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.fail(path, f"expected a string, got {type(value).__name__}")
            return ""
        return str(value)

    def boolean(self, path: str) -> bool:
        value = self.raw(path)
        if value is _MISSING:
            return False
        if not isinstance(value, bool):
            self.fail(path, f"expected true or false, got {value!r}")
            return False
        return value

    def enum(self, path: str, allowed: tuple[str, ...], *, default: str) -> str:
        value = self.string(path) or default
        if value not in allowed:
            self.fail(path, f"must be one of {', '.join(allowed)}, got {value!r}")
            return default
        return value

    def str_list(self, path: str) -> list[str]:
        value = self.raw(path)
        if value is _MISSING:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(path, "expected a list of strings")
            return []
        return list(value)

    def str_map(self, path: str) -> dict[str, str]:
        value = self.raw(path)
        if value is _MISSING:
            return {}
        if not isinstance(value, Mapping) or not all(
            isinstance(v, str | int | float) for v in value.values()
        ):
            self.fail(path, "expected a mapping of strings")
            return {}
        return {str(k): str(v) for k, v in value.items()}

    def check_regexp(self, path: str, pattern: str) -> None:
        try:
            goregex.compile(pattern)
        except goregex.RegexpError as exc:
            self.fail(path, f"invalid regular expression '{pattern}': {exc}")

    def choice(self, path: str) -> policy.Choice:
        """Exactly one of ``semver.range``, ``alphabetical.order``, ``numerical.order``."""
        present = [
            name
            for name in ("semver", "alphabetical", "numerical")
            if self.raw(f"{path}.{name}") is not _MISSING
        ]
        if len(present) != 1:
            self.fail(
                path,
                f"exactly one of semver, alphabetical, numerical is required (found {present or 'none'})",
            )
            return policy.AlphabeticalChoice()
        name = present[0]
        try:
            if name == "semver":
                choice: policy.Choice = policy.SemverChoice(
                    self.string(f"{path}.semver.range", required=True)
                )
                policy.validate(choice)
                return choice
            order = policy.parse_order(self.string(f"{path}.{name}.order"))
        except policy.InvalidPolicyError as exc:
            self.fail(f"{path}.{name}", exc.message)
            return policy.AlphabeticalChoice()
        return policy.AlphabeticalChoice(order) if name == "alphabetical" else policy.NumericalChoice(order)

    def tag_filter(self, path: str) -> policy.TagFilter | None:
        if self.raw(path) is _MISSING:
            return None
        tag_filter = policy.TagFilter(self.string(f"{path}.pattern"), self.string(f"{path}.extract"))
        try:
            policy.validate(policy.AlphabeticalChoice(), tag_filter)
        except policy.InvalidPolicyError as exc:
            self.fail(f"{path}.pattern", exc.message)
            return None
        return tag_filter

    def selector(self, path: str) -> LabelSelector | None:
        """A Kubernetes label selector (``matchLabels``, ``matchExpressions``), or None."""
        if self.raw(path) is _MISSING:
            return None
        requirements = []
        expressions = self.raw(f"{path}.matchExpressions")
        for i, expr in enumerate(expressions if isinstance(expressions, list) else []):
            where = f"{path}.matchExpressions[{i}]"
            if not isinstance(expr, Mapping) or expr.get("operator") not in (
                "In",
                "NotIn",
                "Exists",
                "DoesNotExist",
            ):
                self.fail(where, "expected key, operator (In, NotIn, Exists, DoesNotExist) and values")
                continue
            values = tuple(str(v) for v in expr.get("values") or ())
            if expr["operator"] in ("In", "NotIn") and not values:
                self.fail(f"{where}.values", f"must be non-empty for operator {expr['operator']}")
            requirements.append(LabelRequirement(str(expr.get("key", "")), str(expr["operator"]), values))
        return LabelSelector(self.str_map(f"{path}.matchLabels"), tuple(requirements))
