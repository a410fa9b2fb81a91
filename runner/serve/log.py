"""Structured logs for ``serve``: one line per event, as text or JSON (``--log-format``).

Events carry their fields as ``logging`` extras (``sync``, ``revision``, ``digest``,
``outcome``, ``seconds``, ``reason``...); the JSON form is one object per line, the way
Flux's controllers log, so log pipelines can filter by sync. The handler sits on the root
logger, so every line on stderr is in the chosen format: ours, the HTTP server's, and
Python warnings (routed through ``logging``, one event each). A text line stays one line
and safe for a terminal: newlines in a message, a field or a traceback are written as
``\\n``, and every other control character as its escape (``lockgate.terminal.shown``: a
field may carry a tenant's words, an object's status message). JSON escapes by itself.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

from lockgate import terminal
from lockgate.redact import scrub

#: attributes every LogRecord has; anything else on a record is an event field
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}
#: our loggers, at the level asked for; libraries log their warnings and errors only
OURS = ("lockgate", "runner")


def fields_of(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **fields_of(record),
        }
        if record.exc_info:
            doc["error"] = self.formatException(record.exc_info)
        # a field may hold a URL or a server's message: no credential reaches the log
        return scrub(json.dumps(doc, default=str, separators=(",", ":")))


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        fields = fields_of(record)
        if record.exc_info:
            fields["error"] = self.formatException(record.exc_info)
        extra = " ".join(f"{k}={terminal.shown(str(v))}" for k, v in fields.items())
        line = f"{stamp} {record.levelname.lower():5} {terminal.shown(record.getMessage())}"
        return scrub(line + (f"  {extra}" if extra else ""))


def configure(log_format: str, *, level: int = logging.INFO) -> None:
    """Send every log line and warning of the process to stderr in ``log_format`` (``text`` or ``json``)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    for name in OURS:
        ours = logging.getLogger(name)
        ours.handlers.clear()
        ours.setLevel(level)
        ours.propagate = True
    logging.captureWarnings(True)
