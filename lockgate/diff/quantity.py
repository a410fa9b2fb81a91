"""Kubernetes resource quantities, compared by value as the API server stores them.

Pure. The API server keeps a quantity in its canonical spelling: ``cpu: 1000`` (or ``"1000"``)
comes back as ``"1k"``, ``memory: 1024Mi`` as ``"1Gi"``. Compared as text, the desired and the
live object would always differ (a drift report or a change on every pass), and a change would
show the server's spelling rather than the one in the manifest. So where a field holds a
quantity (``resources.limits`` and ``requests``, a ResourceQuota's ``hard``, a LimitRange's
bounds, ``overhead``, ``emptyDir.sizeLimit``) two spellings of one value are equal, and
``spelled_as`` puts the manifest's spelling back into what the server answered.
``apimachinery/pkg/api/resource`` is the reference for the grammar.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

#: mapping keys whose values are quantities
PARENTS = frozenset(
    {
        "limits",
        "requests",
        "hard",
        "overhead",
        "default",
        "defaultRequest",
        "max",
        "min",
        "maxLimitRequestRatio",
    }
)
#: fields that are themselves quantities
FIELDS = frozenset({"sizeLimit"})

_SUFFIXES = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    **{
        suffix: Fraction(2 ** (10 * (i + 1))) for i, suffix in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))
    },
}
_QUANTITY = re.compile(
    r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:([eE][+-]?\d{1,3})|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$"
)


def value(quantity: Any) -> Fraction | None:
    """The exact value of a quantity (a string, or a YAML number), or None when it is not one."""
    if isinstance(quantity, bool):
        return None
    if isinstance(quantity, int):
        return Fraction(quantity)
    if isinstance(quantity, float):
        return Fraction(str(quantity))
    if not isinstance(quantity, str):
        return None
    match = _QUANTITY.match(quantity.strip())
    if match is None:
        return None
    number, exponent, suffix = match.groups()
    amount = Fraction(number)
    if exponent:
        return amount * Fraction(10) ** int(exponent[1:])
    return amount * _SUFFIXES[suffix or ""]


def same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are one quantity spelled two ways."""
    left, right = value(a), value(b)
    return left is not None and left == right


def spelled_as(answered: Any, manifest: Any, *, quantities: bool = False) -> Any:
    """``answered`` (the server's object) with each quantity the manifest spells differently, but
    equal in value, spelled as in the manifest; the rest as answered (copied only where changed)."""
    if isinstance(answered, dict) and isinstance(manifest, dict):
        out = answered
        for key, item in answered.items():
            if key not in manifest:
                continue
            if quantities or key in FIELDS:
                new = manifest[key] if item != manifest[key] and same(item, manifest[key]) else item
            else:
                new = spelled_as(item, manifest[key], quantities=key in PARENTS)
            if new is not item:
                out = dict(out) if out is answered else out
                out[key] = new
        return out
    if isinstance(answered, list) and isinstance(manifest, list) and len(answered) == len(manifest):
        items = [spelled_as(a, m) for a, m in zip(answered, manifest, strict=True)]
        return items if any(i is not a for i, a in zip(items, answered, strict=True)) else answered
    return answered
