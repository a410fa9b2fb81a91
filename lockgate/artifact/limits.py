"""The bounds an extraction enforces (``extract.extract``), in a module of their own so the
``pull`` command can show the defaults without importing the extractor and its deflate."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    max_total_bytes: int = 1 << 30
    #: entries of every kind: files and directories
    max_files: int = 100_000
    max_ratio: float = 200.0
    #: the ratio is only checked past this many uncompressed bytes (headers dominate tiny layers)
    ratio_floor: int = 16 << 20
