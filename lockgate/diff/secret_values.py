"""Values that are secret by where they came from, carried with an object to its diff.

Pure and shared. A value is secret because of its origin, not because of the kind of
object it lands in: the runner marks what a SOPS decryption produced, what a substitution
from a Secret (``postBuild.substituteFrom``) wrote into an object, and every v1 Secret's
entries. The marks travel with the object (``K8sObject.secret``, then ``Desired.secret``)
to the one place a change set is built (``fields.field_changes``), which masks every
change touching one of them, whatever the kind; the table, ``--output json``, Events,
notifications, logs and the status page are all rendered from the change set, so they
only ever see the masks. ``lockgate diff`` (CI) knows no secret values: it keeps masking
v1 Secrets by kind, which needs none.

Two sets. ``values`` are this object's own leaves from a secret origin, compared whole
and of any length: they are exactly where a secret landed (``url: postgres://u:${PW}@db``
marks the whole string). ``shared`` are the pass's secret strings, looked for inside any
value of any object, so that a secret which moved, or which the live object still holds
after the manifest stopped substituting it, is masked too; only strings of at least
``MIN_SHARED`` characters are shared, shorter ones are words found everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

#: the shortest secret string looked for inside other values
MIN_SHARED: Final = 8
#: the shortest of an object's own secret values taken out of a message about it
MIN_SCRUBBED: Final = 4
MASK: Final = "***"


def spelling(value: Any) -> str:
    """A scalar as compared: strings as they are, numbers and booleans as JSON spells them."""
    return value if isinstance(value, str) else json.dumps(value, default=str)


@dataclass(frozen=True)
class SecretValues:
    values: frozenset[str] = frozenset()
    shared: frozenset[str] = frozenset()

    @classmethod
    def of(cls, values: Iterable[Any]) -> SecretValues:
        """The marks of these leaf values; empty ones say nothing and are left out."""
        return cls(frozenset(spelling(v) for v in values if v is not None and v != ""))

    def __bool__(self) -> bool:
        return bool(self.values or self.shared)

    def union(self, other: SecretValues) -> SecretValues:
        if not other:
            return self
        if not self:
            return other
        return SecretValues(self.values | other.values, self.shared | other.shared)

    def sharing(self, shared: frozenset[str]) -> SecretValues:
        """The same values, looking for the pass's ``shared`` strings too (one set for all objects)."""
        return SecretValues(self.values, self.shared | shared if self.shared else shared)

    def shareable(self) -> set[str]:
        """Those of ``values`` long enough to be looked for everywhere."""
        return {v for v in self.values if len(v) >= MIN_SHARED}

    def holds(self, value: Any) -> bool:
        """Whether ``value``, or any value inside it, is secret."""
        if isinstance(value, dict):
            return any(self.holds(v) for v in value.values())
        if isinstance(value, list):
            return any(self.holds(v) for v in value)
        if value is None:
            return False
        text = spelling(value)
        return text in self.values or any(secret in text for secret in self.shared)

    def scrub(self, text: str) -> str:
        """``text`` (a server's message about the object) with every secret string in it masked."""
        own = {v for v in self.values if len(v) >= MIN_SCRUBBED}
        for secret in sorted(self.shared | own, key=len, reverse=True):
            text = text.replace(secret, MASK)
        return text


NONE: Final = SecretValues()
