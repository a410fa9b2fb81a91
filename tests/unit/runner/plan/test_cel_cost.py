"""The estimated cost of ``healthCheckExprs`` at load: Flux's cheat sheet loads, what is costly by
its shape (nested comprehensions growing strings) is refused, and the runtime's one bound the
estimate leans on (10,000 comprehension iterations per evaluation) is still there."""

from __future__ import annotations

import pytest

from runner.plan import cel, cel_ast, cel_cost
from runner.plan.health_exprs import HealthExprSpec, compile_each
from tests.unit.runner.plan.test_health_exprs import CEL_GO, READY_CURRENT, READY_FAILED, READY_IN_PROGRESS

GROW = '.replace("x","xxxxxxxx")'
TEN = "[0,1,2,3,4,5,6,7,8,9]"
#: the attack of docs/security.md §19: 272 characters, 49 s and 2.3 GB in one evaluation
ATTACK = f'{TEN}.all(a, {TEN}.all(b, {TEN}.all(c, "x"{GROW * 7}.size() > 0)))'

#: the cheat sheet's entries and the corners the tests of health_exprs evaluate
LOADS = [
    READY_IN_PROGRESS,
    READY_FAILED,
    READY_CURRENT,
    *(text for _, text, _, _ in CEL_GO),
    "status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'True')",
    "status.conditions.exists(c, c.message.contains('quota'))",
    "status.conditions.map(c, c.type).join(',').contains('Ready')",
    "'a' in status.tags && 'b' in status.tags",
    "status.phase == 'Running' && status.replicas == status.readyReplicas",
]

REFUSED = {
    "attack": ATTACK,
    "comparing every element with every other": "spec.a.all(x, spec.a.all(y, spec.a.all(z, x == y)))",
    "joining strings of every pair": "status.c.all(a, status.c.all(b, a.message + b.message != ''))",
    "a string grown from the object": "spec.s" + '.replace("a", "aaaaaaaaaaaaaaaa")' * 3 + ".size() > 0",
}


def cost(text: str) -> float:
    return cel.estimated_cost(cel.compile_expression(text))


@pytest.mark.parametrize("text", sorted(set(LOADS)))
def test_what_flux_users_write_is_under_the_limit(text: str) -> None:
    try:
        estimated = cost(text)
    except cel.CelError:
        pytest.skip("does not compile (a case of the compile tests)")
    assert estimated <= cel_cost.LIMIT, (text, estimated)


@pytest.mark.parametrize("text", list(REFUSED.values()), ids=list(REFUSED))
def test_what_is_costly_by_its_shape_is_over_the_limit(text: str) -> None:
    assert cost(text) > cel_cost.LIMIT, text


def test_the_refusal_names_the_field_and_the_estimate() -> None:
    (error,) = compile_each([HealthExprSpec("example.com/v1", "true", "Widget", "", ATTACK)])
    assert error.field == "[0].failed"
    assert error.message.startswith("estimated cost 269,652,661 is over the limit of 10,000,000"), (
        error.message
    )


def test_growth_is_what_costs() -> None:
    """Each nesting multiplies, each growth multiplies: the estimate follows both."""
    one = cost(f'{TEN}.all(a, "x"{GROW * 3}.size() > 0)')
    assert cost(f'{TEN}.all(b, {TEN}.all(a, "x"{GROW * 3}.size() > 0))') > 9 * one
    assert cost(f'{TEN}.all(a, "x"{GROW * 4}.size() > 0)') > 6 * one


def test_the_runtime_stops_at_10000_iterations() -> None:
    """The estimate assumes it (``cel_cost.ITERATIONS``): a new cel-expr-python that drops the
    budget fails here, and the estimate must then bound iterations by the object's size alone."""
    within = cel.compile_expression("spec.a.all(x, spec.a.all(y, y >= 0))")
    assert within.evaluate(cel.bind({"spec": {"a": list(range(99))}})) is True  # 99 + 9,801
    with pytest.raises(cel.CelError, match="Iteration budget exceeded"):
        within.evaluate(cel.bind({"spec": {"a": list(range(100))}}))  # 100 + 10,000
    assert cel_cost.ITERATIONS == 10_000


def test_the_parse_is_read_as_the_runtime_expands_it() -> None:
    node = cel_ast.decode(
        cel.compile_expression("[1, 2].exists(x, x > 1.5) || a.?b == b'z'").program.serialize()
    )
    assert isinstance(node, cel_ast.Call) and node.function == "_||_"
    loop, other = node.args
    assert isinstance(loop, cel_ast.Comprehension) and loop.iter_var == "x"
    assert loop.iter_range == cel_ast.ListOf((cel_ast.Const(1), cel_ast.Const(2)))
    assert isinstance(other, cel_ast.Call) and other.args[1] == cel_ast.Const(b"z")
    with pytest.raises(cel_ast.AstError):
        cel_ast.decode(b"\n\x05other")
