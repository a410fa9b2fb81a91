"""JSON from outside within the parsing bounds: registry documents, signatures, credentials, bodies.

The same bounds as YAML (``lockgate.parselimits``): a size given by the caller and the depth
bound. Kept apart from ``lockgate.bounded`` (the YAML entry points) so that what reads only
JSON, the registry client and signature verification, never imports PyYAML: ``verify --key``
stays a quick command. ``lockgate.bounded`` re-exports ``json_value`` for callers of both.
"""

from __future__ import annotations

import json
from typing import Any

from lockgate import parselimits
from lockgate.errors import ExitCode
from lockgate.parselimits import DEFAULT, Exceeded, LimitExceeded, Limits

__all__ = ["LimitExceeded", "json_value"]


def _exceeded(where: str, exceeded: Exceeded, exit_code: ExitCode) -> LimitExceeded:
    return LimitExceeded(parselimits.message(where, exceeded), limit=exceeded.limit, exit_code=exit_code)


def json_value(
    data: bytes | str,
    where: str,
    *,
    max_bytes: int,
    limits: Limits = DEFAULT,
    exit_code: ExitCode = ExitCode.RENDER,
) -> Any:
    """``json.loads(data)`` within ``max_bytes`` and the depth bound.

    Malformed JSON raises what ``json.loads`` raises (``ValueError``), for the caller to
    word; over a bound raises ``LimitExceeded`` naming ``where``.
    """
    if len(data) > max_bytes:
        detail = f"{len(data):,} bytes is over the {max_bytes:,} allowed"
        raise _exceeded(where, Exceeded("size", detail), exit_code)
    try:
        value = json.loads(data)
    except RecursionError:
        value = _TOO_DEEP
    # a value deeper than the bound needs that many brackets: most documents are spared the walk
    if value is _TOO_DEEP or (_brackets(data) > limits.max_depth and _depth(value) > limits.max_depth):
        detail = f"nests deeper than {limits.max_depth} levels of objects and arrays"
        raise _exceeded(where, Exceeded("depth", detail), exit_code)
    return value


_TOO_DEEP: Any = object()


def _brackets(data: bytes | str) -> int:
    if isinstance(data, bytes):
        return data.count(b"[") + data.count(b"{")
    return data.count("[") + data.count("{")


def _depth(value: Any) -> int:
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            node = node.values()
        elif not isinstance(node, list):
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in node if isinstance(child, dict | list))
    return deepest
