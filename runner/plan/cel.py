"""CEL expressions over Kubernetes objects, as Flux's ``runtime/cel`` evaluates them.

Pure. The language is the CEL team's own C++ runtime (``cel-expr-python``; the README says
why this one). The environment is Flux's: expressions are parsed, not type-checked (custom
resources follow no schema the checker could know), the object's top-level fields are the
variables (``metadata``, ``spec``, ``status``...), and the strings, optional-types and
encoders extensions are loaded. Flux also loads cel-go's sets extension, which the Python
binding does not ship: ``sets.contains``, ``sets.equivalent`` and ``sets.intersects`` are
defined here with CEL's equality. A missing field is an evaluation error, as in Flux, and
so is a result that is not a bool.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.plan import cel_ast, cel_cost


class CelError(Exception):
    """An expression that does not compile, or an evaluation that failed; the message says why."""


def _equal(a: Any, b: Any) -> bool:
    """CEL's equality over plain values: a bool is never a number, numbers compare by value."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return len(a) == len(b) and all(
            any(_equal(k, j) and _equal(v, w) for j, w in b.items()) for k, v in a.items()
        )
    return type(a) is type(b) and bool(a == b)


def _contains(items: list[Any], wanted: list[Any]) -> bool:
    return all(any(_equal(x, y) for y in items) for x in wanted)


def _equivalent(a: list[Any], b: list[Any]) -> bool:
    return _contains(a, b) and _contains(b, a)


def _intersects(a: list[Any], b: list[Any]) -> bool:
    return any(any(_equal(x, y) for y in b) for x in a)


@functools.cache
def _cel() -> Any:
    """The runtime, imported on first use: only a sync with ``healthCheckExprs`` pays for it."""
    from cel_expr_python import cel

    return cel


def _sets() -> Any:
    """cel-go's ``ext.Sets()``, which Flux loads; overload ids of our own (see the module doc)."""
    cel = _cel()
    lists = [cel.Type.List(cel.Type.DYN), cel.Type.List(cel.Type.DYN)]
    functions = [
        cel.FunctionDecl(
            f"sets.{name}", [cel.Overload(f"lockgate_sets_{name}", cel.Type.BOOL, lists, impl=impl)]
        )
        for name, impl in (("contains", _contains), ("equivalent", _equivalent), ("intersects", _intersects))
    ]
    return cel.CelExtension("lockgate_sets", functions)


@functools.cache
def _environment() -> Any:
    from cel_expr_python.ext import ext_encoders, ext_optional, ext_strings

    return _cel().NewEnv(
        extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional(), ext_encoders.ExtEncoders(), _sets()]
    )


def _said(error: Exception | str) -> str:
    """The library's words without its status-code prefix (``INVALID_ARGUMENT: ``) and suffix."""
    text = str(error).strip()
    head, sep, rest = text.partition(": ")
    if sep and head.isupper() and head.replace("_", "").isalpha():
        text = rest
    return text.removesuffix(" [INVALID_ARGUMENT]").strip()


@dataclass(frozen=True)
class Expression:
    """One parsed expression; ``evaluate`` it over a ``bind``-ed object."""

    text: str
    program: Any = field(compare=False, repr=False)

    def evaluate(self, bound: Bound) -> bool:
        """The expression's value over the object; ``CelError`` when it fails or is not a bool."""
        try:
            value = self.program.eval(bound.activation)
        except Exception as exc:  # the binding raises for what it cannot convert
            raise CelError(_said(exc)) from None
        result = value.value()
        if isinstance(result, bool):  # only a BOOL value converts to one
            return result
        kind = value.type()
        if kind == _cel().Type.ERROR:
            raise CelError(_said(str(result)))
        raise CelError(f"the result is {kind.name().lower()}, not a bool")


@dataclass(frozen=True)
class Bound:
    """An object's top-level fields as the expressions' variables (converted once per object)."""

    activation: Any


def bind(obj: Mapping[str, Any]) -> Bound:
    """``CelError`` when a value has no CEL type (an integer beyond 64 bits)."""
    try:
        return Bound(_environment().Activation(dict(obj)))
    except Exception as exc:
        raise CelError(_said(exc)) from None


def compile_expression(text: str) -> Expression:
    """Parse ``text`` as Flux does (no type check); ``CelError`` with the library's message."""
    try:
        program = _environment().compile(text, disable_check=True)
    except Exception as exc:  # the binding raises RuntimeError with the parser's report
        raise CelError(_parse_report(_said(exc))) from None
    return Expression(text, program)


@functools.lru_cache(maxsize=1024)
def compiled(text: str) -> Expression:
    """``compile_expression``, once per text: the same expressions judge every object."""
    return compile_expression(text)


def identifiers(expression: Expression) -> frozenset[str]:
    """The names the expression reads (``cel_ast.identifiers``): the object's other top-level
    fields need not be converted for it."""
    return cel_ast.identifiers(cel_ast.decode(expression.program.serialize()))


def estimated_cost(expression: Expression) -> float:
    """The worst-case cost of the expression (``runner.plan.cel_cost``), read from the
    runtime's own parse; ``cel_ast.AstError`` when that parse is not one the reader knows."""
    return cel_cost.estimate_serialized(expression.program.serialize()).cost


def _parse_report(text: str) -> str:
    """The parser's errors on one line each joined (``at 1:5: has() argument must be...``),
    without the source excerpt it draws under each (the config error names the field)."""
    found = [line.removeprefix("ERROR: <input>:") for line in text.splitlines() if line.startswith("ERROR: ")]
    return "; ".join(f"at {line}" for line in found) if found else text
