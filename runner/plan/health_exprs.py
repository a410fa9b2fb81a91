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
reported there with the file, line and field, and so is an expression whose estimated cost is
over Kubernetes' limit (``runner.plan.cel_cost``). ``health.compute`` asks
``CustomHealth.evaluator`` for each object; Flux's Job reader still comes first for Jobs.
The expressions run in an ``Engine``: the runner's is ``runner.sandbox`` (worker processes
that stop an evaluation over its time or memory limit, so no expression holds the runner's
GIL); an expression stopped so makes its object Failed, naming it (as Kubernetes refuses an
object whose rule ran over its cost limit).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from runner.plan import cel, cel_ast, cel_cost
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
class Outcome:
    """What one entry's expressions said of one object, in Flux's order: ``decided`` is the
    index (in ``Evaluator.expressions``) of the expression that was true (``TRUE``), failed
    (``ERROR``) or was stopped by a limit (``LIMIT``); -1 when none was true. ``UNJUDGED``: the
    object was not evaluated (its look's budget was spent on others)."""

    decided: int = -1
    kind: str = ""
    said: str = ""

    TRUE: ClassVar[str] = "true"
    ERROR: ClassVar[str] = "error"
    LIMIT: ClassVar[str] = "limit"
    UNJUDGED: ClassVar[str] = "unjudged"


@dataclass(frozen=True)
class Work:
    """One object to judge with one entry's expressions (their texts in Flux's order)."""

    texts: tuple[str, ...]
    obj: dict[str, Any]


class Engine(Protocol):
    """Where expressions run: ``IN_PROCESS`` here, or ``runner.sandbox``'s worker processes,
    which stop an evaluation over its limits. One call judges many objects (a wait's look)."""

    def run(self, work: Sequence[Work]) -> list[Outcome]: ...


def run_in_order(
    texts: Sequence[str], obj: dict[str, Any], *, started: Callable[[int], None] | None = None
) -> Outcome:
    """Flux's ``StatusEvaluator.Evaluate`` over one object: the first expression that is true or
    fails decides. ``started(i)`` is told before each evaluation (``-1``: before the object's
    conversion), so a watcher knows which expression a stopped evaluation was running."""
    if started is not None:
        started(-1)
    try:
        bound = cel.bind(obj)
    except cel.CelError as exc:
        return Outcome(-1, Outcome.ERROR, str(exc))
    for index, text in enumerate(texts):
        if started is not None:
            started(index)
        try:
            if cel.compiled(text).evaluate(bound):
                return Outcome(index, Outcome.TRUE)
        except cel.CelError as exc:
            return Outcome(index, Outcome.ERROR, str(exc))
    return Outcome()


class _InProcess:
    """Expressions run in this process, holding the GIL: for tests and tools that judge known
    objects; the runner judges live objects in ``runner.sandbox``."""

    def run(self, work: Sequence[Work]) -> list[Outcome]:
        return [run_in_order(w.texts, w.obj) for w in work]


IN_PROCESS: Engine = _InProcess()


@dataclass(frozen=True)
class Evaluator:
    """The expressions of one entry; ``evaluate`` is Flux's ``StatusEvaluator.Evaluate``."""

    index: int
    spec: HealthExprSpec
    #: (field name, the status it says, the text), in Flux's order, only those written
    expressions: tuple[tuple[str, HealthStatus, str], ...] = field(compare=False, repr=False)
    engine: Engine = field(default=IN_PROCESS, compare=False, repr=False)

    #: the object's top-level fields the expressions may read (the others are not sent)
    reads: frozenset[str] = field(default=frozenset(), compare=False, repr=False)

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(text for _, _, text in self.expressions)

    def work(self, obj: dict[str, Any]) -> Work:
        """The object as its expressions see it: only the fields they name."""
        return Work(self.texts, {k: v for k, v in obj.items() if k in self.reads})

    def before(self, obj: dict[str, Any]) -> Health | None:
        """What is decided before any expression runs (a generation not yet observed)."""
        generation = _integer(obj.get("metadata"), "generation")
        observed = _integer(obj.get("status"), "observedGeneration")
        if observed != -1 and generation != -1 and observed != generation:
            return Health(
                HealthStatus.IN_PROGRESS,
                f"generation is {generation}, but latest observed generation is {observed}",
                "LatestGenerationNotObserved",
            )
        return None

    def health(self, outcome: Outcome) -> Health:
        """The health an outcome says, naming the expression that decided."""
        if outcome.kind == Outcome.UNJUDGED:
            return Health(
                HealthStatus.UNKNOWN, f"healthCheckExprs[{self.index}]: {outcome.said}", "NotJudged"
            )
        if outcome.decided < 0:
            if outcome.kind == Outcome.ERROR:
                return Health(
                    HealthStatus.UNKNOWN, f"healthCheckExprs[{self.index}]: {outcome.said}", "EvaluationError"
                )
            if outcome.kind == Outcome.LIMIT:
                return Health(
                    HealthStatus.FAILED,
                    f"healthCheckExprs[{self.index}]: {outcome.said}",
                    "CostLimitExceeded",
                )
            return Health(
                HealthStatus.IN_PROGRESS,
                f"healthCheckExprs[{self.index}]: no expression is true yet",
                "NoExpressionTrue",
            )
        name, status, text = self.expressions[outcome.decided]
        where = f"healthCheckExprs[{self.index}].{name}"
        if outcome.kind == Outcome.LIMIT:
            # Kubernetes refuses the object whose rule ran over its cost limit: here the object fails
            return Health(HealthStatus.FAILED, f"{where} {text!r} {outcome.said}", "CostLimitExceeded")
        if outcome.kind == Outcome.ERROR:
            return Health(HealthStatus.UNKNOWN, f"{where} {text!r} failed: {outcome.said}", "EvaluationError")
        said = "" if status is HealthStatus.CURRENT else f" {text!r}"
        return Health(status, f"{where}{said} is true", "")

    def evaluate(self, obj: dict[str, Any]) -> Health:
        decided = self.before(obj)
        if decided is not None:
            return decided
        return self.health(self.engine.run([self.work(obj)])[0])


@dataclass(frozen=True)
class CustomHealth:
    """The sync's entries by (group, kind); kind "" is a whole group. Equal when written the same."""

    specs: tuple[HealthExprSpec, ...]
    by_kind: dict[tuple[str, str], Evaluator] = field(compare=False, repr=False, hash=False)
    engine: Engine = field(default=IN_PROCESS, compare=False, repr=False, hash=False)

    def __hash__(self) -> int:
        return hash(self.specs)

    def evaluator(self, group: str, kind: str) -> Evaluator | None:
        return self.by_kind.get((group, kind)) or self.by_kind.get((group, ""))

    def judge(self, pairs: Sequence[tuple[Evaluator, dict[str, Any]]]) -> list[Health]:
        """The health of each object by its entry: one call to the engine for all of them."""
        said: list[Health | None] = [evaluator.before(obj) for evaluator, obj in pairs]
        pending = [i for i, decided in enumerate(said) if decided is None]
        outcomes = self.engine.run([pairs[i][0].work(pairs[i][1]) for i in pending]) if pending else []
        for i, outcome in zip(pending, outcomes, strict=True):
            said[i] = pairs[i][0].health(outcome)
        return [h for h in said if h is not None]


def compile_all(specs: Sequence[HealthExprSpec], *, engine: Engine) -> CustomHealth:
    """Compile every entry; the first problem raises ``ExprError`` naming its field, as
    Flux refuses the Kustomization (``compile_each`` reports all of them). ``engine``: where
    the expressions will run (``IN_PROCESS``, or the runner's sandbox)."""
    errors = compile_each(specs)
    if errors:
        raise errors[0]
    return _build(specs, engine)


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
                    expression = cel.compiled(text)
                except cel.CelError as exc:
                    errors.append(ExprError(index, name, f"does not compile: {exc}"))
                    continue
                refused = _too_costly(expression)
                if refused:
                    errors.append(ExprError(index, name, refused))
    return errors


def _too_costly(expression: cel.Expression) -> str:
    """Why the expression's estimated cost refuses it ("" when it does not), as Kubernetes
    refuses a CRD rule over its estimated cost limit (``runner.plan.cel_cost``)."""
    try:
        cost = cel.estimated_cost(expression)
    except cel_ast.AstError as exc:  # fail closed: an expression we cannot estimate is not run
        return f"its cost cannot be estimated ({exc}); this version of cel-expr-python is not supported"
    if cost <= cel_cost.LIMIT:
        return ""
    return (
        f"estimated cost {cost:,.0f} is over the limit of {cel_cost.LIMIT:,} (Kubernetes' limit for "
        "one CEL rule): comprehensions nested in each other, and strings or lists grown inside "
        "them, multiply the cost; judge fewer elements or build less inside the loops"
    )


def _build(specs: Sequence[HealthExprSpec], engine: Engine) -> CustomHealth:
    by_kind: dict[tuple[str, str], Evaluator] = {}
    for index, spec in enumerate(specs):
        written = tuple((name, status, spec.text(name)) for name, status in ORDER if spec.text(name).strip())
        reads = frozenset().union(*(cel.identifiers(cel.compiled(text)) for _, _, text in written))
        by_kind[(spec.group, spec.kind)] = Evaluator(index, spec, written, engine, reads)
    return CustomHealth(tuple(specs), by_kind, engine)
