"""A watch as a closable stream of events, so a waiter never touches the HTTP library.

``close`` may be called from another thread and unblocks a read in progress at once:
closing the response itself would wait for the reader's lock, i.e. until the server ends
the watch (``timeoutSeconds``), which made every ``--wait`` last the whole watch window.
A stream that breaks (connection reset, closed, a malformed line) ends with
``StreamBroken``; the caller lists again and watches from there.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import urllib3

if TYPE_CHECKING:
    from runner.kube.transport import Reply


class StreamBroken(Exception):
    """The watch ended without the server closing it cleanly; not a user-facing error."""


@dataclass(frozen=True)
class WatchEvent:
    type: str  #: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR
    object: dict[str, Any]


class WatchStream:
    def __init__(self, response: Reply) -> None:
        self._response = response
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[WatchEvent]:
        try:
            for line in self._response.iter_lines():
                if self._closed.is_set():
                    return
                if line:
                    event = json.loads(line)
                    yield WatchEvent(str(event.get("type")), dict(event.get("object") or {}))
        except (urllib3.exceptions.HTTPError, OSError, AttributeError, ValueError) as exc:
            # AttributeError: urllib3 reading from a connection that ``close`` shut down
            if self._closed.is_set():
                return
            raise StreamBroken(type(exc).__name__) from None
        finally:
            self._response.close()

    def close(self) -> None:
        """End the stream now, from any thread."""
        self._closed.set()
        connection = getattr(self._response.raw, "connection", None)
        sock = getattr(connection, "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed by the server
                sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
