"""A sync's ``healthCheckExprs``: CEL expressions that decide the health of custom resources.

Pure. The format and the semantics are Flux's (kustomize-controller's ``healthCheckExprs``,
``fluxcd/pkg`` ``runtime/cel``, RFC-0009), so the expressions of Flux's CEL cheat sheet work
unchanged:

- an entry names ``apiVersion`` (only its group is matched) and optionally ``kind``; without
  a kind it applies to every kind of the group, and an entry with the kind wins over it; two
  entries for the same group and kind are refused;
- ``current`` is required, ``inProgress`` and ``failed`` optional;
- an integer ``status.observedGeneration`` that differs from an integer ``metadata.generation``
  is InProgress before any expression runs; then ``inProgress``, ``failed`` and ``current`` are
  evaluated in that order and the first that is true decides; none true is InProgress;
- an evaluation error (a field the object lacks, a result that is not a bool) is Unknown, so
  the wait goes on until its timeout and then names the object, the expression and the error.

Expressions are compiled when the config is loaded (``compile_all``), so a syntax error is
reported there with the file, line and field. ``health.compute`` asks ``CustomHealth.evaluator``
for each object; Flux's Job reader still comes first for Jobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.plan import cel
from runner.plan.status import Health, HealthStatus

#: Flux's order (RFC-0009): the first true expression decides
ORDER = (
    ("inProgress", HealthStatus.IN_PROGRESS),
    ("failed", HealthStatus.FAILED),
    ("current", HealthStatus.CURRENT),
)


@dataclass(frozen=True)
class HealthExprSpec:
    """One ``healthCheckExprs`` entry as written (Flux's ``CustomHealthCheck``)."""

    api_version: str
    current: str
    kind: str = ""
    in_progress: str = ""
    failed: str = ""

    @property
    def group(self) -> str:
        return self.api_version.rsplit("/", 1)[0] if "/" in self.api_version else ""

    def text(self, name: str) -> str:
        return {"current": self.current, "inProgress": self.in_progress, "failed": self.failed}[name]


class ExprError(ValueError):
    """A ``healthCheckExprs`` entry that cannot be used: entry ``index``, its field ``name``
    ("" for the entry as a whole); ``field`` spells both (``[1].current``)."""

    def __init__(self, index: int, name: str, message: str) -> None:
        super().__init__(message)
        self.index, self.name, self.message = index, name, message

    @property
    def field(self) -> str:
        return f"[{self.index}]" + (f".{self.name}" if self.name else "")


def _integer(section: Any, name: str) -> int:
    """An integer field of a mapping, else -1 (read directly: this runs for every object, twice a second)."""
    value = section.get(name) if isinstance(section, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else -1


@dataclass(frozen=True)
class Evaluator:
    """The compiled expressions of one entry; ``evaluate`` is Flux's ``StatusEvaluator.Evaluate``."""

    index: int
    spec: HealthExprSpec
    expressions: tuple[tuple[str, HealthStatus, cel.Expression], ...] = field(compare=False, repr=False)

    def evaluate(self, obj: dict[str, Any]) -> Health:
        generation = _integer(obj.get("metadata"), "generation")
        observed = _integer(obj.get("status"), "observedGeneration")
        if observed != -1 and generation != -1 and observed != generation:
            return Health(
                HealthStatus.IN_PROGRESS,
                f"generation is {generation}, but latest observed generation is {observed}",
                "LatestGenerationNotObserved",
            )
        try:
            bound = cel.bind(obj)
        except cel.CelError as exc:
            return Health(HealthStatus.UNKNOWN, f"healthCheckExprs[{self.index}]: {exc}", "EvaluationError")
        for name, status, expression in self.expressions:
            try:
                if expression.evaluate(bound):
                    said = "" if status is HealthStatus.CURRENT else f" {expression.text!r}"
                    return Health(status, f"healthCheckExprs[{self.index}].{name}{said} is true", "")
            except cel.CelError as exc:
                return Health(
                    HealthStatus.UNKNOWN,
                    f"healthCheckExprs[{self.index}].{name} {expression.text!r} failed: {exc}",
                    "EvaluationError",
                )
        return Health(
            HealthStatus.IN_PROGRESS,
            f"healthCheckExprs[{self.index}]: no expression is true yet",
            "NoExpressionTrue",
        )


@dataclass(frozen=True)
class CustomHealth:
    """The sync's entries by (group, kind); kind "" is a whole group. Equal when written the same."""

    specs: tuple[HealthExprSpec, ...]
    by_kind: dict[tuple[str, str], Evaluator] = field(compare=False, repr=False, hash=False)

    def __hash__(self) -> int:
        return hash(self.specs)

    def evaluator(self, group: str, kind: str) -> Evaluator | None:
        return self.by_kind.get((group, kind)) or self.by_kind.get((group, ""))


def compile_all(specs: Sequence[HealthExprSpec]) -> CustomHealth:
    """Compile every entry; the first problem raises ``ExprError`` naming its field, as
    Flux refuses the Kustomization (``compile_each`` reports all of them)."""
    errors = compile_each(specs)
    if errors:
        raise errors[0]
    return _build(specs)


def compile_each(specs: Sequence[HealthExprSpec]) -> list[ExprError]:
    """Every problem of the entries, each naming its field (``[0].current``)."""
    errors: list[ExprError] = []
    seen: dict[tuple[str, str], int] = {}
    for index, spec in enumerate(specs):
        key = (spec.group, spec.kind)
        if key in seen:
            what = f"{spec.kind}.{spec.group}" if spec.kind else f"every kind of group {spec.group or 'core'}"
            errors.append(
                ExprError(index, "", f"duplicate entry for {what} (first at healthCheckExprs[{seen[key]}])")
            )
        seen.setdefault(key, index)
        if not spec.current.strip():
            errors.append(ExprError(index, "current", "required: the expression that says Current"))
        if (spec.group, spec.kind) == ("batch", "Job"):
            errors.append(
                ExprError(
                    index,
                    "kind",
                    "Jobs are read by Flux's Job reader, before any expression (as in Flux): this entry "
                    "would never be asked; remove it",
                )
            )
        for name in ("current", "inProgress", "failed"):  # as the fields are written
            text = spec.text(name)
            if text.strip():
                try:
                    cel.compile_expression(text)
                except cel.CelError as exc:
                    errors.append(ExprError(index, name, f"does not compile: {exc}"))
    return errors


def _build(specs: Sequence[HealthExprSpec]) -> CustomHealth:
    by_kind: dict[tuple[str, str], Evaluator] = {}
    for index, spec in enumerate(specs):
        compiled = tuple(
            (name, status, cel.compile_expression(spec.text(name)))
            for name, status in ORDER
            if spec.text(name).strip()
        )
        by_kind[(spec.group, spec.kind)] = Evaluator(index, spec, compiled)
    return CustomHealth(tuple(specs), by_kind)
