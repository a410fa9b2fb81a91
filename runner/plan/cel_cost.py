"""The estimated cost of a CEL expression, refused at load above ``LIMIT`` (as Kubernetes does).

Pure. Kubernetes refuses a CRD validation rule whose estimated cost is over 10,000,000
(``StaticEstimatedCostLimit``), with cel-go's estimator: every node costs about one unit, a
string or list traversed costs 0.1 per character or element, a comprehension costs its body
times its iterations, and a value whose size no schema bounds is assumed as large as the
largest request (3 MiB). We have no schema (Flux's expressions are not type-checked), so:

- object data (``metadata``, ``spec``, ``status``... and anything selected or indexed from them)
  is a value of at most ``OBJECT_BYTES``; iterated, it has at most half that many elements;
- the runtime evaluates at most ``ITERATIONS`` comprehension iterations in one evaluation
  (cel-expr-python's fixed budget; ``test_cel_cost`` pins it), so a comprehension nested in
  others iterates at most ``ITERATIONS`` over the product of theirs;
- elements of object data share its bytes: a list of n elements has elements of about
  ``OBJECT_BYTES / n`` bytes each, so a body is costed at both ends (many small elements, one
  large one) and the dearer end counts, which bounds a body linear or polynomial in its
  element's size;
- literals have their exact sizes, and sizes grow through ``+``, ``replace``, ``join``,
  ``format``, ``map``..., which is what makes string growth in nested comprehensions cost.

Nested comprehensions over lists that grow strings (the shape of the attack in
docs/security.md §19) cost hundreds of millions; the expressions of Flux's cheat sheet cost
around a hundred thousand. One gap is known and left to the run-time limit
(``runner.sandbox``): the runtime copies a comprehension's list at each ``map``/``filter``
step, which cel-go's model (followed here) counts once per step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from runner.plan import cel_ast
from runner.plan.cel_ast import Call, Comprehension, Const, Ident, ListOf, MapOf, Node, Select

#: Kubernetes' StaticEstimatedCostLimit for one expression
LIMIT = 10_000_000
#: the largest object the estimate assumes (Kubernetes' MaxRequestSizeBytes)
OBJECT_BYTES = 3 * 1024 * 1024
#: comprehension iterations cel-expr-python evaluates in one evaluation before it stops with
#: "Iteration budget exceeded"
ITERATIONS = 10_000
#: cel-go's cost of traversing one character or element, and of a regular expression's
TRAVERSAL = 0.1
REGEX_TRAVERSAL = 0.25
LIST_CREATE, MAP_CREATE = 10, 30

#: the namespaces of the loaded extensions' global functions (``sets.contains(...)`` parses
#: as a call on an identifier ``sets``)
NAMESPACES = frozenset({"sets", "base64", "strings", "optional", "math"})


@dataclass(frozen=True)
class Shape:
    """What is known of a value's size: ``length`` characters, elements or entries (1 for a
    scalar), each element as ``item``; ``data`` when it comes from the object (no schema)."""

    length: int = 1
    item: Shape | None = None
    data: bool = False


SCALAR = Shape()


def data(size: int) -> Shape:
    return Shape(max(1, size), None, True)


def _join(a: Shape, b: Shape) -> Shape:
    """The larger of two possible values (a conditional's branches)."""
    item = a.item if b.item is None else b.item if a.item is None else _join(a.item, b.item)
    return Shape(max(a.length, b.length), item, a.data or b.data)


def _count(of: Shape) -> int:
    """Elements of a list (a list from the object has at most one per two bytes)."""
    return max(1, of.length // 2) if of.data else of.length


def _bytes(of: Shape) -> int:
    return of.length * (_bytes(of.item) if of.item is not None else 1)


def _either(a: Shape, b: Shape) -> Shape:
    """The results of a comprehension's two ends: object data of the larger total when they differ."""
    if a == b:
        return a
    if a.item is None and b.item is None and not (a.data or b.data):
        return _join(a, b)
    return data(max(_bytes(a), _bytes(b)))


def _item(of: Shape) -> Shape:
    if of.item is not None:
        return of.item
    return data(of.length) if of.data else SCALAR


@dataclass(frozen=True)
class Estimate:
    cost: float
    shape: Shape


@dataclass(frozen=True)
class _Scope:
    """Comprehension variables in scope and the iterations left to a nested comprehension."""

    variables: Mapping[str, Shape] = field(default_factory=dict)
    iterations: int = ITERATIONS

    def bind(self, names: Mapping[str, Shape], iterations: int) -> _Scope:
        return _Scope({**self.variables, **names}, iterations)


def estimate(node: Node) -> Estimate:
    """The worst-case cost and result size of one parsed expression."""
    return _estimate(node, _Scope())


def estimate_serialized(serialized: bytes) -> Estimate:
    return estimate(cel_ast.decode(serialized))


def _estimate(node: Node, scope: _Scope) -> Estimate:
    if isinstance(node, Const):
        value = node.value
        size = len(value) if isinstance(value, str | bytes) else 1
        return Estimate(0, Shape(max(1, size)))
    if isinstance(node, Ident):
        found = scope.variables.get(node.name)
        return Estimate(1, found if found is not None else data(OBJECT_BYTES))
    if isinstance(node, Select):
        operand = _estimate(node.operand, scope)
        return Estimate(operand.cost + 1, SCALAR if node.test_only else _member(operand.shape))
    if isinstance(node, ListOf):
        parts = [_estimate(e, scope) for e in node.elements]
        item: Shape | None = None
        for part in parts:
            item = part.shape if item is None else _join(item, part.shape)
        return Estimate(LIST_CREATE + sum(p.cost for p in parts), Shape(max(1, len(parts)), item))
    if isinstance(node, MapOf):
        pairs = [(_estimate(k, scope), _estimate(v, scope)) for k, v in node.entries]
        largest: Shape | None = None
        for _, v in pairs:
            largest = v.shape if largest is None else _join(largest, v.shape)
        cost = MAP_CREATE + sum(k.cost + v.cost for k, v in pairs)
        return Estimate(cost, Shape(max(1, len(pairs)), largest))
    if isinstance(node, Comprehension):
        return _comprehension(node, scope)
    return _call(node, scope)


def _member(of: Shape) -> Shape:
    """A field or element of a value: data stays data of at most its size."""
    return data(of.length) if of.data else _item(of)


def _ranges(of: Shape, iterations: int) -> list[tuple[int, Shape]]:
    """(iterations, element) at the ends worth costing: object data shares its bytes among its
    elements (many small or one large); a value built by the expression has its own sizes."""
    if not of.data:
        return [(max(0, min(of.length, iterations)), _item(of))]
    most = max(1, min(iterations, of.length // 2))
    return [(most, data(of.length // most)), (1, data(of.length))]


def _comprehension(node: Comprehension, scope: _Scope) -> Estimate:
    iter_range = _estimate(node.iter_range, scope)
    init = _estimate(node.accu_init, scope)
    worst: Estimate | None = None
    for count, element in _ranges(iter_range.shape, scope.iterations):
        names = {node.iter_var: element}
        if node.iter_var2:  # two-variable forms: the index or key, and the value
            names = {node.iter_var: SCALAR, node.iter_var2: element}
        inner = scope.bind({**names, node.accu_var: init.shape}, max(1, scope.iterations // max(1, count)))
        first = _estimate(node.loop_step, inner)
        grows = max(0, first.shape.length - init.shape.length)
        item = init.shape.item if first.shape.item is None else first.shape.item
        accu = Shape(init.shape.length + count * grows, item, init.shape.data)
        body = inner.bind({node.accu_var: accu}, inner.iterations)
        step = _estimate(node.loop_step, body)
        condition = _estimate(node.loop_condition, body)
        result = _estimate(node.result, body)
        cost = iter_range.cost + init.cost + count * (step.cost + condition.cost) + result.cost
        shape = result.shape if worst is None else _either(worst.shape, result.shape)
        worst = Estimate(max(cost, worst.cost if worst is not None else 0), shape)
    assert worst is not None
    return worst


def _traverse(*lengths: int) -> float:
    return math.ceil(TRAVERSAL * sum(lengths))


def _call(node: Call, scope: _Scope) -> Estimate:
    name = node.function
    target = node.target
    if isinstance(target, Ident) and target.name in NAMESPACES and target.name not in scope.variables:
        name, target = f"{target.name}.{name}", None
    parts = [_estimate(a, scope) for a in ((target,) if target is not None else ()) + node.args]
    cost = sum(p.cost for p in parts)
    shapes = [p.shape for p in parts]
    extra, shape = _function(name, shapes, node, scope)
    return Estimate(cost + extra, shape)


def _accumulating(node: Call, scope: _Scope) -> bool:
    """``@result + [x]``: a macro's append to its accumulator (counted once, as cel-go does)."""
    first = node.args[0] if node.args else None
    return isinstance(first, Ident) and first.name.startswith("@") and first.name in scope.variables


def _function(name: str, args: list[Shape], node: Call, scope: _Scope) -> tuple[float, Shape]:
    """The cost of the call itself (its arguments already counted) and its result's size."""
    first = args[0] if args else SCALAR
    second = args[1] if len(args) > 1 else SCALAR
    if name in ("_&&_", "_||_", "!_", "@not_strictly_false", "@not_strictly_false_or", "-_", "_?_:_"):
        return 1, _join(second, args[2]) if name == "_?_:_" and len(args) == 3 else SCALAR
    if name in ("_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"):
        return 1 + _traverse(min(first.length, second.length)), SCALAR
    if name == "_+_":
        if _accumulating(node, scope):
            return 1 + _traverse(second.length), Shape(
                first.length + second.length, second.item or first.item
            )
        if first.length == 1 and second.length == 1 and first.item is None and second.item is None:
            return 1, Shape(2 if first.data or second.data else 1, None, first.data or second.data)
        length = first.length + second.length
        item = (
            first.item
            if second.item is None
            else second.item
            if first.item is None
            else _join(first.item, second.item)
        )
        return 1 + _traverse(length), Shape(length, item, first.data or second.data)
    if name in ("_-_", "_*_", "_/_", "_%_"):
        return 1, SCALAR
    if name in ("_[_]", "_[?_]", "_?._"):
        return 1 + _traverse(second.length), _member(first)
    if name in ("@in", "_in_"):
        return 1 + _count(second) * (1 + _traverse(first.length)), SCALAR
    if name in ("size", "hasValue", "value", "optional.none", "type", "int", "uint", "double", "bool"):
        return 1 + _traverse(first.length if name in ("int", "uint", "double", "bool") else 0), (
            first if name == "value" else SCALAR
        )
    if name in ("contains", "startsWith", "endsWith", "indexOf", "lastIndexOf"):
        return 1 + _traverse(first.length, second.length), SCALAR
    if name == "matches":
        return 1 + math.ceil(REGEX_TRAVERSAL * first.length * max(1, second.length / 8)), SCALAR
    if name == "replace":
        new = args[2] if len(args) > 2 else SCALAR
        old_length = _literal_length(node.args[0] if node.args else None)
        grows = (
            first.length * max(1, math.ceil(new.length / old_length))
            if old_length
            else (first.length * (new.length + 1) + new.length)
        )
        return 1 + _traverse(first.length, grows), Shape(grows, None, first.data)
    if name == "split":
        return 1 + _traverse(first.length), Shape(first.length + 1, None, True)
    if name == "join":
        separator = second.length if len(args) > 1 else 0
        item = _item(first)
        length = first.length * (item.length + separator)
        if first.data:  # the elements share the list's bytes
            length = first.length + _count(first) * separator
        return 1 + _traverse(length), Shape(length, None, first.data)
    if name in ("format", "strings.quote", "quote", "base64.encode", "string", "bytes"):
        grows = {"format": 0, "base64.encode": 2}.get(name, 6)
        length = (
            first.length * grows + sum(a.length * 8 for a in args[1:]) + 16
            if name == "format"
            else (first.length * grows + 16)
        )
        return 1 + _traverse(first.length, length), Shape(length, None, first.data)
    if name in ("sets.contains", "sets.equivalent", "sets.intersects"):
        # Python callbacks comparing every pair (runner.plan.cel); both ways for equivalent
        pairs = _count(first) * _count(second) * (2 if name == "sets.equivalent" else 1)
        return 1 + pairs * (1 + _traverse(min(_item(first).length, _item(second).length))), SCALAR
    if name in ("optional.of", "optional.ofNonZeroValue", "or", "orValue", "dyn", "trim", "lowerAscii",
                "upperAscii", "reverse", "substring", "charAt", "base64.decode"):  # fmt: skip
        result = _join(first, second) if name in ("or", "orValue") else first
        return 1 + _traverse(first.length), result
    # timestamps, durations and their accessors, math, anything not listed: the traversal of
    # every argument, and a result no larger than the largest
    largest = SCALAR
    for arg in args:
        largest = _join(largest, arg)
    return 1 + _traverse(*(a.length for a in args)), largest


def _literal_length(node: Node | None) -> int:
    """The length of a string literal argument (``replace``'s ``old``), 0 if not a literal."""
    if isinstance(node, Const) and isinstance(node.value, str):
        return len(node.value)
    return 0
