"""YAML documents that remember where each value was written, for errors that name a line.

A configuration error is only useful when it says where to look: ``syncs.yaml:14:``, not
"document 3". ``documents`` composes each document with PyYAML's safe loader, builds the
value as usual and records the 1-based line of every mapping key and sequence item by its
path (``("spec", "dependsOn", 0)``). A key written twice in one mapping is an error here,
because YAML loaders silently keep the last one and a user never means that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from lockgate import bounded
from lockgate.errors import UsageError

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Document:
    """One YAML document of ``file``: its value, its start line and the line of each path."""

    file: str
    line: int
    value: Any
    lines: dict[Path, int] = field(default_factory=dict)

    def line_of(self, path: Path) -> int:
        """The line of ``path``, or of its nearest written ancestor (a missing field's parent)."""
        for end in range(len(path), 0, -1):
            found = self.lines.get(path[:end])
            if found is not None:
                return found
        return self.line


def dotted(path: Path) -> str:
    """``("spec", "healthChecks", 0, "kind")`` -> ``spec.healthChecks[0].kind``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _walk(node: yaml.Node, path: Path, lines: dict[Path, int], file: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue  # a complex key: the validator refuses it by type
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen:
                raise UsageError(
                    f"{file}:{line}: {dotted((*path, key))}: written twice in one mapping "
                    f"(first at line {seen[key]})"
                )
            seen[key] = line
            lines[(*path, key)] = line
            _walk(value_node, (*path, key), lines, file)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _walk(item, (*path, index), lines, file)


def documents(text: str, file: str) -> list[Document]:
    """Every non-empty document of ``text``; invalid YAML is a ``UsageError`` naming file:line:column.

    The text is checked against the parsing bounds first (``lockgate.bounded``): the walk over
    the composed nodes would follow every alias of a bomb."""
    bounded.scan_yaml(text, file, error=UsageError)
    loader = yaml.SafeLoader(text)
    found: list[Document] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            lines: dict[Path, int] = {}
            _walk(node, (), lines, file)
            value = loader.construct_document(node)
            if value is not None:
                found.append(Document(file=file, line=node.start_mark.line + 1, value=value, lines=lines))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{file}:{mark.line + 1}:{mark.column + 1}" if mark else file
        raise UsageError(f"{where}: invalid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{file}: invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    return found


def line_maps(text: str, file: str) -> list[dict[Path, int]]:
    """The line of every key and item of each document of ``text``, in order (empty documents
    included), for a reader that loads the values itself (the image automation files). Same
    checks as ``documents``: the bounds first, a key written twice is a ``UsageError`` naming
    file:line."""
    bounded.scan_yaml(text, file, error=UsageError)
    loader = yaml.SafeLoader(text)
    found: list[dict[Path, int]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            lines: dict[Path, int] = {}
            _walk(node, (), lines, file)
            found.append(lines)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{file}:{mark.line + 1}:{mark.column + 1}" if mark else file
        raise UsageError(f"{where}: invalid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{file}: invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    return found


def parse_dotted(text: str) -> Path:
    """``spec.images[0].exclude`` -> ``("spec", "images", 0, "exclude")`` (``dotted`` reversed)."""
    path: list[str | int] = []
    for part in text.split("."):
        name, *indexes = part.split("[")
        if name:
            path.append(name)
        path.extend(int(index.rstrip("]")) for index in indexes if index.rstrip("]").isdigit())
    return tuple(path)
