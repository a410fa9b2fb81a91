"""Which of a chart's templates call ``lookup``, the one Helm function that reads the live cluster.

Pure (over ``chartfiles``' files). Under ``helm template`` (CI has no cluster) ``lookup``
returns an empty map, so a chart that reads a live Secret or ConfigMap renders something
else than it would in the cluster, silently; ``push --render`` refuses it unless asked.

A call counts when the template that holds it is rendered: each template file of the chart
and its subcharts (a name not starting with ``_``; ``NOTES.txt`` is never in the manifests)
is a root, and a ``define``d template counts once a counted one reaches it by ``include`` or
``template`` (or a ``block``), through any number of others, in any chart of the set (Helm
renders the chart and its subcharts as one template set). An ``include`` of a name computed
at render time reaches every ``define``: then any of them calling ``lookup`` counts. Calls are
found among each action's tokens (``gotemplate``), so a comment, a string or a field
``.Values.lookup`` never counts. A value is a template too once a rendered template passes it
to ``tpl``: then every string value (the charts' ``values.yaml``, ``--values`` files, ``--set``)
holding an action that calls ``lookup`` counts, named by its file, line and key.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lockgate import located
from lockgate.errors import LockgateError
from lockgate.helm import gotemplate
from lockgate.helm.chartfiles import ChartFile
from lockgate.helm.gotemplate import Kind

LOOKUP = "lookup"
TPL = "tpl"
_OPENS = frozenset({"if", "range", "with", "define", "block"})
_NOT_RENDERED = "NOTES.txt"


@dataclass(frozen=True)
class Call:
    """A use of a named template: its name (None: computed at render time) and where."""

    name: str | None
    file: str
    line: int


@dataclass
class Unit:
    """A file's top level, or one ``define`` (``block``) body."""

    file: str
    define: str | None = None
    lookups: list[int] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    #: lines calling ``tpl``: a value rendered as a template
    tpls: list[int] = field(default_factory=list)

    @property
    def shown(self) -> str:
        return f'define "{self.define}" ({self.file})' if self.define is not None else self.file


@dataclass(frozen=True)
class Finding:
    """A ``lookup`` call that is rendered: where it is, and how a rendered template reaches it."""

    file: str
    line: int
    define: str | None
    #: the first rendered template's use that reaches it, e.g. ``templates/secret.yaml:4``
    used_by: str | None = None
    #: for a value rendered by ``tpl``: its key (``db.password``)
    value: str | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}: {LOOKUP}" if self.line else f"{self.file}: {LOOKUP}"
        if self.value is not None:
            return where + f", in the value {self.value}, rendered by tpl at {self.used_by}"
        if self.define is None:
            return where
        return where + f', in define "{self.define}"' + (f", used by {self.used_by}" if self.used_by else "")


def units(chart_file: ChartFile) -> list[Unit]:
    """The top level and the ``define`` bodies of one template file."""
    top = Unit(chart_file.shown)
    found = [top]
    stack: list[Unit | None] = []  # a Unit for each open define/block, None for if/range/with
    for action in gotemplate.actions(chart_file.text, chart_file.shown):
        current = next((unit for unit in reversed(stack) if unit is not None), top)
        keyword = action.keyword
        if keyword == "end":
            if stack:
                stack.pop()
            continue
        if keyword in ("define", "block"):
            name = _string_after(action.tokens, 0)
            body = Unit(chart_file.shown, define=name or "?")
            found.append(body)
            if keyword == "block" and name is not None:
                current.calls.append(Call(name, chart_file.shown, action.line))
            _scan(action, current if keyword == "block" else body)
            stack.append(body)
            continue
        _scan(action, current)
        if keyword in _OPENS:
            stack.append(None)
    return found


def _string_after(tokens: tuple[gotemplate.Token, ...], index: int) -> str | None:
    following = tokens[index + 1] if index + 1 < len(tokens) else None
    return following.value if following is not None and following.kind is Kind.STRING else None


def _scan(action: gotemplate.Action, unit: Unit) -> None:
    tokens = action.tokens
    for index, token in enumerate(tokens):
        if token.kind is Kind.IDENTIFIER and token.value == LOOKUP:
            unit.lookups.append(token.line)
        elif token.kind is Kind.IDENTIFIER and token.value == TPL:
            unit.tpls.append(token.line)
        elif (token.kind is Kind.IDENTIFIER and token.value == "include") or (
            token.kind is Kind.KEYWORD and token.value == "template"
        ):
            unit.calls.append(Call(_string_after(tokens, index), unit.file, token.line))


def _rendered(chart_file: ChartFile) -> bool:
    base = chart_file.name.rsplit("/", 1)[-1]
    return not base.startswith("_") and chart_file.name != f"templates/{_NOT_RENDERED}"


def find(
    chart_files: list[ChartFile],
    *,
    values: Sequence[tuple[str, str]] = (),
    set_values: Sequence[str] = (),
) -> list[Finding]:
    """Every rendered ``lookup`` call of the chart, in file and line order; ``values`` are the
    user's values files (how they are named, their text) and ``set_values`` the ``--set`` pairs,
    read when a rendered template calls ``tpl``."""
    roots: list[Unit] = []
    defines: dict[str, list[Unit]] = {}
    for chart_file in chart_files:
        if not chart_file.name.startswith("templates/"):
            continue
        file_units = units(chart_file)
        if _rendered(chart_file):
            roots.append(file_units[0])
        for unit in file_units[1:]:
            defines.setdefault(str(unit.define), []).append(unit)
    # breadth first, so each define is reported with the shortest way a rendered file reaches it
    reached: dict[int, str | None] = {id(unit): None for unit in roots}
    queue = deque(roots)
    every_define = False
    while queue:
        unit = queue.popleft()
        for call in unit.calls:
            targets = defines.get(call.name, []) if call.name is not None else []
            if call.name is None and not every_define:
                every_define = True
                targets = [d for units_ in defines.values() for d in units_]
            for target in targets:
                if id(target) not in reached:
                    used_by = reached[id(unit)] or f"{call.file}:{call.line}"
                    reached[id(target)] = used_by
                    queue.append(target)
    counted = [u for u in [*roots, *(d for units_ in defines.values() for d in units_)] if id(u) in reached]
    findings = [
        Finding(unit.file, line, unit.define, reached[id(unit)]) for unit in counted for line in unit.lookups
    ]
    tpl = next((f"{unit.file}:{line}" for unit in counted for line in unit.tpls), None)
    if tpl is not None:
        charts_values = [(f.shown, f.text) for f in chart_files if f.name == "values.yaml"]
        findings += _in_values([*charts_values, *values], set_values, tpl)
    return sorted(set(findings), key=lambda f: (f.file, f.line))


def _in_values(files: Sequence[tuple[str, str]], set_values: Sequence[str], tpl: str) -> list[Finding]:
    """The string values that call ``lookup`` once ``tpl`` renders them. A file that does not
    parse is left to helm, which names its error; a string that is no template is no call."""
    found: list[Finding] = []
    for shown, text in files:
        try:
            documents = located.documents(text, shown)
        except LockgateError:
            continue
        for document in documents:
            for path, string in _strings(document.value, ()):
                if _calls_lookup(string, shown):
                    key = located.dotted(path)
                    found.append(Finding(shown, document.line_of(path), None, tpl, value=key))
    for pair in set_values:
        key, _, string = pair.partition("=")
        if _calls_lookup(string, "--set"):
            found.append(Finding("--set", 0, None, tpl, value=key))
    return found


def _strings(value: Any, path: located.Path) -> Iterator[tuple[located.Path, str]]:
    if isinstance(value, str):
        if "{{" in value:
            yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))


def _calls_lookup(text: str, shown: str) -> bool:
    try:
        actions = gotemplate.actions(text, shown)
    except gotemplate.TemplateSyntaxError:
        return False
    return any(t.kind is Kind.IDENTIFIER and t.value == LOOKUP for a in actions for t in a.tokens)
