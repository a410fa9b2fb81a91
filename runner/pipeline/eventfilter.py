"""Which events a notification provider gets: Flux's Alert filters, a value of the configuration.

``eventSeverity: info`` sends every event, ``error`` only errors; ``inclusionList`` keeps only
events whose message one of its Go regular expressions matches (anywhere in the message, Go's
``MatchString``), ``exclusionList`` drops those one of its expressions matches, and exclusion
wins, as notification-controller decides. Flux compiles the expressions per event and logs a bad
one; here they are compiled (``lockgate.goregex``) when the configuration loads, and a bad one
refuses the file naming the field. Commit statuses report every pass's state, not events: the
filters are for event providers only (``syncdoc`` refuses them elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lockgate import goregex

Severity = Literal["info", "error"]
#: the providers that receive events (the others post commit statuses)
EVENT_PROVIDERS = frozenset({"generic", "slack", "msteams", "alertmanager"})


@dataclass(frozen=True)
class EventFilter:
    severity: Severity = "info"
    inclusion: tuple[str, ...] = ()
    exclusion: tuple[str, ...] = ()

    @property
    def filters(self) -> bool:
        return self.severity != "info" or bool(self.inclusion or self.exclusion)

    def admits(self, severity: Severity, message: str) -> bool:
        """Whether an event of ``severity`` saying ``message`` is sent."""
        if self.severity == "error" and severity != "error":
            return False
        if self.inclusion and not any(goregex.compile(p).matches(message) for p in self.inclusion):
            return False
        return not any(goregex.compile(p).matches(message) for p in self.exclusion)


def problems(event_filter: EventFilter) -> list[str]:
    """The filter's expressions Go's ``regexp`` refuses, each naming its field and index."""
    found = []
    lists = (("inclusionList", event_filter.inclusion), ("exclusionList", event_filter.exclusion))
    for field, patterns in lists:
        for index, pattern in enumerate(patterns):
            try:
                goregex.compile(pattern)
            except goregex.RegexpError as exc:
                found.append(f"{field}[{index}]: {exc.message}")
    return found
