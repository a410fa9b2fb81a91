"""GitHub's workflow-command syntax: ``::add-mask::``, ``::error file=...::``, ``GITHUB_OUTPUT``.

Pure text: escaping as the runner's toolkit does (``%``, CR and LF in data; also ``:`` and
``,`` in properties), and the ``name<<DELIMITER`` form for outputs, with a delimiter that
the value cannot contain.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping

from action.github.report import Annotation
from lockgate import terminal


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def mask(value: str) -> str:
    return f"::add-mask::{escape_data(value)}"


def annotation(item: Annotation) -> str:
    """The workflow command, control characters escaped (``lockgate.terminal``) before
    GitHub's own escapes: the runner's log viewer obeys ANSI codes."""
    props = []
    for key, value in (("file", item.file), ("line", item.line), ("col", item.col), ("title", item.title)):
        if value is not None:
            props.append(f"{key}={escape_property(terminal.shown(str(value)))}")
    head = f"::{item.level}" + (" " + ",".join(props) if props else "")
    return f"{head}::{escape_data(terminal.lines(item.message))}"


def output_file_text(values: Mapping[str, str], *, delimiter: str | None = None) -> str:
    """``GITHUB_OUTPUT`` lines: ``name<<DELIM``, the value, ``DELIM``, for every value."""
    chunks = []
    for name, value in values.items():
        mark = delimiter or f"ghadelimiter_{secrets.token_hex(16)}"
        if mark in value:
            raise ValueError(f"output {name} contains its delimiter")
        chunks.append(f"{name}<<{mark}\n{value}\n{mark}\n")
    return "".join(chunks)
