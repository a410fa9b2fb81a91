"""``healthCheckExprs`` as Flux evaluates them: the cases of ``fluxcd/pkg`` ``runtime/cel``'s
tests (expression, status evaluator, status reader), and the cheat sheet's expressions with
the answers cel-go (Flux's CEL, with Flux's options) gives for them."""

from __future__ import annotations

from typing import Any

import pytest

from runner.plan import cel, health, health_exprs
from runner.plan.health_exprs import IN_PROCESS, CustomHealth, ExprError, HealthExprSpec, compile_each
from runner.plan.status import HealthStatus

NOW = 1_700_000_000.0


def compile_all(specs: list[HealthExprSpec]) -> CustomHealth:
    """The expressions as pure tests judge them: in this process (the runner's sandbox is
    tested in tests/unit/runner/sandbox and against the world)."""
    return health_exprs.compile_all(specs, engine=IN_PROCESS)


def evaluator(current: str = "", in_progress: str = "", failed: str = "") -> CustomHealth:
    return compile_all([HealthExprSpec("example.com/v1", current, "Widget", in_progress, failed)])


def judge(custom: CustomHealth, obj: dict[str, Any]) -> tuple[HealthStatus, str]:
    found = custom.evaluator("example.com", "Widget")
    assert found is not None
    said = found.evaluate(obj)
    return said.status, said.message


DATA = {"current": True, "inProgress": False, "failed": False}
READY_IN_PROGRESS = "has(status.observedGeneration) && metadata.generation != status.observedGeneration"
READY_FAILED = "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')"
READY_CURRENT = "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')"

#: TestStatusEvaluator_Evaluate: (name, expressions, object, status, error text or "")
EVALUATE: list[tuple[str, tuple[str, str, str], dict[str, Any], HealthStatus, str]] = [
    (
        "observed generation exists and is different",
        ("true", "", ""),
        {"metadata": {"generation": 2}, "status": {"observedGeneration": 1}},
        HealthStatus.IN_PROGRESS,
        "",
    ),
    (
        "if Current returns an error, the error is returned",
        ("data.currentt", "data.inProgress", "data.failed"),
        {"data": DATA},
        HealthStatus.UNKNOWN,
        "currentt",
    ),
    (
        "if InProgress returns an error, the error is returned",
        ("data.current", "data.inProgresss", "data.failed"),
        {"data": DATA},
        HealthStatus.UNKNOWN,
        "inProgresss",
    ),
    (
        "if Failed returns an error, the error is returned",
        ("data.current", "data.inProgress", "data.failedd"),
        {"data": DATA},
        HealthStatus.UNKNOWN,
        "failedd",
    ),
    (
        "if all expressions evaluate to false then the object is in progress",
        ("data.current", "data.inProgress", "data.failed"),
        {"data": {"current": False, "inProgress": False, "failed": False}},
        HealthStatus.IN_PROGRESS,
        "",
    ),
    (
        "if all expressions evaluate to true then the object is in progress",
        ("data.current", "data.inProgress", "data.failed"),
        {"data": {"current": True, "inProgress": True, "failed": True}},
        HealthStatus.IN_PROGRESS,
        "",
    ),
    (
        "if both Current and Failed evaluate to true, then the object failed",
        ("data.current", "data.inProgress", "data.failed"),
        {"data": {"current": True, "inProgress": False, "failed": True}},
        HealthStatus.FAILED,
        "",
    ),
    (
        "if only Current evaluates to true, then the object is current",
        ("data.current", "data.inProgress", "data.failed"),
        {"data": DATA},
        HealthStatus.CURRENT,
        "",
    ),
    (
        "object without status with inProgress expression",
        (READY_CURRENT, READY_IN_PROGRESS, READY_FAILED),
        {},
        HealthStatus.UNKNOWN,
        "healthCheckExprs[0].inProgress",
    ),
    (
        "object without status without inProgress expression",
        (READY_CURRENT, "", READY_FAILED),
        {},
        HealthStatus.UNKNOWN,
        "healthCheckExprs[0].failed",
    ),
    (
        "object with status without status.conditions with inProgress expression",
        (READY_CURRENT, READY_IN_PROGRESS, READY_FAILED),
        {"status": {}},
        HealthStatus.UNKNOWN,
        "conditions",
    ),
    (
        "object with status without status.conditions without inProgress expression",
        (READY_CURRENT, "", READY_FAILED),
        {"status": {}},
        HealthStatus.UNKNOWN,
        "conditions",
    ),
    (
        "object with status with empty status.conditions with inProgress expression",
        (READY_CURRENT, READY_IN_PROGRESS, READY_FAILED),
        {"status": {"conditions": []}},
        HealthStatus.FAILED,
        "",
    ),
    (
        "object with status with empty status.conditions without inProgress expression",
        (READY_CURRENT, "", READY_FAILED),
        {"status": {"conditions": []}},
        HealthStatus.FAILED,
        "",
    ),
    (
        "object with status.observedGeneration with inProgress expression",
        (READY_CURRENT, READY_IN_PROGRESS, READY_FAILED),
        {"metadata": {"generation": 2}, "status": {"observedGeneration": 1}},
        HealthStatus.IN_PROGRESS,
        "",
    ),
    (
        "object with status.observedGeneration without inProgress expression",
        (READY_CURRENT, "", READY_FAILED),
        {"metadata": {"generation": 2}, "status": {"observedGeneration": 1}},
        HealthStatus.IN_PROGRESS,
        "",
    ),
    (
        "object with non-int64 status.observedGeneration is tolerated and delegated to CEL expressions",
        ("status.observedGeneration == '2'", "", ""),
        {"metadata": {"generation": 2}, "status": {"observedGeneration": "2"}},
        HealthStatus.CURRENT,
        "",
    ),
    (
        "object with non-int64 metadata.generation is tolerated and delegated to CEL expressions",
        ("metadata.generation == '2'", "", ""),
        {"metadata": {"generation": "2"}, "status": {"observedGeneration": 2}},
        HealthStatus.CURRENT,
        "",
    ),
]


@pytest.mark.parametrize(("name", "exprs", "obj", "status", "said"), EVALUATE, ids=[c[0] for c in EVALUATE])
def test_flux_status_evaluator_cases(
    name: str, exprs: tuple[str, str, str], obj: dict[str, Any], status: HealthStatus, said: str
) -> None:
    current, in_progress, failed = exprs
    got, message = judge(evaluator(current, in_progress, failed), obj)
    assert got is status, message
    assert said in message


#: TestExpression_EvaluateBoolean (evaluation in Flux's environment: parsed, not checked)
BOOLEAN: list[tuple[str, str, dict[str, Any], bool | None]] = [
    ("inexistent field", "foo", {}, None),
    ("boolean field true", "foo", {"foo": True}, True),
    ("boolean field false", "foo", {"foo": False}, False),
    ("nested boolean field true", "foo.bar", {"foo": {"bar": True}}, True),
    ("nested boolean field false", "foo.bar", {"foo": {"bar": False}}, False),
    ("boolean literal true", "true", {}, True),
    ("boolean literal false", "false", {}, False),
    ("non-boolean literal", "'some-value'", {}, None),
    ("non-boolean field", "foo", {"foo": "some-value"}, None),
    ("nested non-boolean field", "foo.bar", {"foo": {"bar": "some-value"}}, None),
    ("complex expression evaluating true", "foo && bar", {"foo": True, "bar": True}, True),
    ("complex expression evaluating false", "foo && bar", {"foo": True, "bar": False}, False),
]


@pytest.mark.parametrize(("name", "text", "data", "want"), BOOLEAN, ids=[c[0] for c in BOOLEAN])
def test_flux_expression_boolean_cases(name: str, text: str, data: dict[str, Any], want: bool | None) -> None:
    expression = cel.compile_expression(text)
    if want is None:
        with pytest.raises(cel.CelError):
            expression.evaluate(cel.bind(data))
    else:
        assert expression.evaluate(cel.bind(data)) is want


def certificate(status: dict[str, Any] | None, generation: int = 1) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "web-tls", "namespace": "web", "generation": generation},
        "spec": {"secretName": "web-tls", "issuerRef": {"name": "le"}},
    }
    if status is not None:
        obj["status"] = status
    return obj


def ready(*types: tuple[str, str]) -> dict[str, Any]:
    return {"observedGeneration": 1, "conditions": [{"type": t, "status": s} for t, s in types]}


STALLED = (
    "status.conditions.exists(e, e.type == 'Stalled' && e.status == 'True' "
    "&& e.observedGeneration == metadata.generation)"
)

#: cheat-sheet expressions and the corners health expressions touch, with cel-go's answers
#: (None: an evaluation error) as Flux's environment gives them
CEL_GO: list[tuple[str, str, dict[str, Any], bool | None]] = [
    ("readyTrue", READY_CURRENT, certificate(ready(("Ready", "True"))), True),
    ("readyFalseIsNotCurrent", READY_CURRENT, certificate(ready(("Ready", "False"))), False),
    ("readyFalseIsFailed", READY_FAILED, certificate(ready(("Ready", "False"))), True),
    ("noReadyConditionIsVacuouslyTrue", READY_CURRENT, certificate(ready(("Issuing", "True"))), True),
    ("noConditionsField", READY_CURRENT, certificate({"notAfter": "2030-01-01T00:00:00Z"}), None),
    ("noStatus", READY_CURRENT, certificate(None), None),
    ("hasGuardsNested", "has(status.attribute) && status.attribute.ready", certificate({}), False),
    ("hasNeedsTheParent", "has(status.attribute) && status.attribute.ready", certificate(None), None),
    ("orAbsorbsAnError", "status.missing == 1 || true", certificate(None), True),
    ("andAbsorbsAnError", "status.missing == 1 && false", certificate({}), False),
    (
        "fluxOperatorStalled",
        STALLED,
        certificate({"conditions": [{"type": "Stalled", "status": "True", "observedGeneration": 1}]}),
        True,
    ),
    (
        "conditionWithoutObservedGeneration",
        STALLED,
        certificate({"conditions": [{"type": "Stalled", "status": "True"}]}),
        None,
    ),
    (
        "cephHealth",
        "status.ceph.health == 'HEALTH_OK'",
        {"status": {"ceph": {"health": "HEALTH_WARN"}}},
        False,
    ),
    ("crossTypeNumbers", "status.replicas > 1.5", {"status": {"replicas": 2}}, True),
    ("heterogeneousEquality", "status.replicas == 2.0", {"status": {"replicas": 2}}, True),
    ("stringIsNotInt", "status.observedGeneration == 3", {"status": {"observedGeneration": "3"}}, False),
    (
        "timestamps",
        "timestamp(status.t) < timestamp('2025-01-01T00:00:00Z')",
        {"status": {"t": "2024-05-01T10:00:00Z"}},
        True,
    ),
    (
        "stringsExtension",
        "metadata.name.split('-')[0].lowerAscii() == 'ab'",
        {"metadata": {"name": "AB-cd"}},
        True,
    ),
    ("optionalTypes", "status.?missing.orValue(5) == 5", {"status": {}}, True),
    ("setsExtension", "sets.contains(status.tags, ['a'])", {"status": {"tags": ["a", "b"]}}, True),
    ("setsKeepBoolsApart", "sets.contains([1], [true])", {}, False),
    ("encoders", "base64.encode(b'hi') == 'aGk='", {}, True),
    ("overflow", "status.big + 1 > 0", {"status": {"big": 9223372036854775807}}, None),
    ("indexOutOfRange", "status.tags[5] == 'a'", {"status": {"tags": ["a"]}}, None),
    ("unknownFunction", "nosuch(status)", {"status": {}}, None),
]


@pytest.mark.parametrize(("name", "text", "obj", "want"), CEL_GO, ids=[c[0] for c in CEL_GO])
def test_answers_as_cel_go(name: str, text: str, obj: dict[str, Any], want: bool | None) -> None:
    expression = cel.compile_expression(text)
    if want is None:
        with pytest.raises(cel.CelError):
            expression.evaluate(cel.bind(obj))
    else:
        assert expression.evaluate(cel.bind(obj)) is want


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("data.", "Syntax error"),
        ("has(status)", "has() argument must be a field selection"),
        ("status.conditions.filter(e, e.type == 'Ready'", "Syntax error"),
    ],
)
def test_an_expression_that_does_not_compile(text: str, why: str) -> None:
    with pytest.raises(cel.CelError, match=r"(?s).*" + why.replace("(", r"\(").replace(")", r"\)")):
        cel.compile_expression(text)


def test_compile_errors_name_their_field() -> None:
    """TestNewStatusEvaluator, TestNewStatusReader_*: required current, bad syntax, duplicates."""
    errors = compile_each(
        [
            HealthExprSpec("example.com/v1", "data.current", "Widget", "data.", ""),
            HealthExprSpec("example.com/v1", "data.current", "Widget", "", "data."),
            HealthExprSpec("bitnami.com/v1alpha1", "", ""),
            HealthExprSpec("bitnami.com/v1alpha1", "true", ""),
            HealthExprSpec("batch/v1", "true", "Job"),
        ]
    )
    said = [(e.field, e.message.split(":")[0]) for e in errors]
    assert said == [
        ("[0].inProgress", "does not compile"),
        ("[1]", "duplicate entry for Widget.example.com (first at healthCheckExprs[0])"),
        ("[1].failed", "does not compile"),
        ("[2].current", "required"),
        ("[3]", "duplicate entry for every kind of group bitnami.com (first at healthCheckExprs[2])"),
        ("[4].kind", "Jobs are read by Flux's Job reader, before any expression (as in Flux)"),
    ]
    with pytest.raises(ExprError):
        compile_all([HealthExprSpec("v1", "data.", "ConfigMap")])


def test_group_only_entries_and_kind_precedence() -> None:
    """TestStatusReader_Supports, _GroupOnlyHealthCheck, _SpecificKindOverridesGroupOnly."""
    custom = compile_all(
        [
            HealthExprSpec("bitnami.com/v1alpha1", "false", "", "", "true"),
            HealthExprSpec("bitnami.com/v1alpha1", "true", "SealedSecret"),
            HealthExprSpec("test/v1", "data.current", "Test"),
        ]
    )
    assert custom.evaluator("test", "Test") is not None
    assert custom.evaluator("test", "Unsupported") is None
    assert custom.evaluator("other", "AnyKind") is None

    def status_of(api_version: str, kind: str) -> HealthStatus:
        return health.compute({"apiVersion": api_version, "kind": kind}, now=NOW, custom=custom).status

    # the version is not matched, only the group
    assert status_of("bitnami.com/v1beta9", "SealedSecret") is HealthStatus.CURRENT
    assert status_of("bitnami.com/v1alpha1", "OtherKind") is HealthStatus.FAILED
    # outside the entries, kstatus decides as before
    assert status_of("other.com/v1", "Foo") is HealthStatus.CURRENT


def test_expressions_replace_kstatus_for_their_kind_but_not_for_jobs() -> None:
    """Flux's readers: the Job reader first, then the CEL reader, then kstatus."""
    custom = compile_all(
        [HealthExprSpec("v1", "data.current == 'true'", "ConfigMap"), HealthExprSpec("batch/v1", "true")]
    )
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"current": "false"}}
    assert health.compute(config_map, now=NOW).status is HealthStatus.CURRENT
    assert health.compute(config_map, now=NOW, custom=custom).status is HealthStatus.IN_PROGRESS
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {}, "status": {}}
    assert health.compute(job, now=NOW, custom=custom).reason == "JobNotStarted"
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {}}
    assert health.compute(cron, now=NOW, custom=custom).message == "healthCheckExprs[1].current is true"


def test_an_evaluation_error_names_the_expression() -> None:
    custom = compile_all(
        [HealthExprSpec("cert-manager.io/v1", READY_CURRENT, "Certificate", "", READY_FAILED)]
    )
    said = health.compute(certificate({"notAfter": "x"}), now=NOW, custom=custom)
    assert said.status is HealthStatus.UNKNOWN
    assert said.message.startswith(f"healthCheckExprs[0].failed {READY_FAILED!r} failed: "), said
    assert "conditions" in said.message
    failed = health.compute(certificate(ready(("Ready", "False"))), now=NOW, custom=custom)
    assert (failed.status, failed.message) == (
        HealthStatus.FAILED,
        f"healthCheckExprs[0].failed {READY_FAILED!r} is true",
    )


def test_equal_when_written_the_same() -> None:
    """A reloaded config with the same expressions gives equal sync options."""
    spec = [HealthExprSpec("example.com/v1", "true", "Widget")]
    assert compile_all(spec) == compile_all(spec)
    assert compile_all(spec) != compile_all([HealthExprSpec("example.com/v1", "false", "Widget")])
