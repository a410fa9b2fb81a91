"""The bounds an extraction enforces (``extract.extract``), in a module of their own so the
``pull`` and ``reconcile`` commands can show the defaults (``options``, their flags) without
importing the extractor and its deflate."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click


@dataclass(frozen=True)
class Limits:
    max_total_bytes: int = 1 << 30
    #: entries of every kind: files and directories
    max_files: int = 100_000
    max_ratio: float = 200.0
    #: the ratio is only checked past this many uncompressed bytes (headers dominate tiny layers)
    ratio_floor: int = 16 << 20


F = TypeVar("F", bound=Callable[..., Any])


def options(func: F) -> F:
    """``--max-size``, ``--max-files``, ``--max-ratio``: the same flags, defaults and help
    wherever an artifact is extracted (``pull``, ``reconcile``), so a runner's limits read
    as ``pull``'s."""
    func = click.option(
        "--max-ratio",
        type=click.FloatRange(min=0, min_open=True),
        default=Limits.max_ratio,
        show_default=True,
        help="Refuse a layer that unpacks to more than this many times its compressed size (past 16 MiB).",
    )(func)
    func = click.option(
        "--max-files",
        type=click.IntRange(min=1),
        default=Limits.max_files,
        show_default=True,
        help="Refuse a layer with more entries than this, files and directories.",
    )(func)
    return click.option(
        "--max-size",
        type=click.IntRange(min=1),
        default=Limits.max_total_bytes,
        show_default=True,
        help="Refuse a layer that unpacks to more bytes than this.",
    )(func)
