"""Send notifications in the background: a bounded queue, one worker, retries with backoff.

A pass only ``submit``s; the worker sends. A delivery that fails with a connection error, a
timeout, a 429 or a 5xx is tried again after ``backoff``, doubled per attempt up to
``max_backoff``, at most ``attempts`` times; a 4xx other than 429 is not retried (the request
itself is wrong), nor is a TLS certificate the provider does not trust. Retries wait in a
schedule, not in the worker, so a provider that is down does not hold up the others. A full
queue drops the new notification. Every notification given up is logged once (provider,
sync, host, reason: never the URL's path or query, which for Slack is the credential, nor a
header) and reported to ``failed`` (the metric). Only an answer's status counts: its body is
never read (the request streams, the connection is closed), so an endpoint answering a
gigabyte, or without end, costs nothing (``lockgate.replies`` caps the session besides).

``serve`` keeps one ``Queue`` for its lifetime; ``reconcile`` (one shot) ``flush``es it with a
short deadline before it exits, and counts what is still undelivered then as failed.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import requests

from lockgate import replies
from lockgate.errors import LockgateError
from lockgate.forge.base import session_trusting
from lockgate.redact import scrub

log = logging.getLogger("lockgate.notify")

ATTEMPTS = 5
BACKOFF = 0.5
MAX_BACKOFF = 30.0
QUEUE_SIZE = 256
TIMEOUT = 10.0


@dataclass(frozen=True)
class Request:
    url: str
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)
    #: PEM CA certificates the server's must chain to (a provider's certSecretRef ``ca.crt``)
    ca: bytes | None = None


class Undeliverable(Exception):
    """A failure not worth retrying (a 4xx answer)."""


@dataclass
class Job:
    """One notification: ``prepare`` builds the request when it is sent (it reads Secrets)."""

    provider: str
    sync: str
    what: str
    prepare: Callable[[], Request]
    attempt: int = 0
    target: str = ""
    #: given up or delivered: counted once
    settled: bool = False
    #: called when it is given up (the notifier forgets it sent it, so the next pass tries again)
    forget: Callable[[], None] | None = None


def host_of(url: str) -> str:
    """``scheme://host[:port]``: what a log may say about a notification's address."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")


class Queue:
    def __init__(
        self,
        *,
        attempts: int = ATTEMPTS,
        backoff: float = BACKOFF,
        max_backoff: float = MAX_BACKOFF,
        size: int = QUEUE_SIZE,
        timeout: float = TIMEOUT,
        failed: Callable[[str, str], None] | None = None,
        sent: Callable[[str, str], None] | None = None,
    ) -> None:
        self.attempts, self.backoff, self.max_backoff = attempts, backoff, max_backoff
        self.size, self.timeout = size, timeout
        self._failed, self._sent = failed, sent
        self._cond = threading.Condition()
        self._due: list[tuple[float, int, Job]] = []
        self._seq = itertools.count()
        self._inflight: list[Job] = []
        self._closed = False
        self._session = replies.session()
        self._thread: threading.Thread | None = None

    # ---- the pass's side ------------------------------------------------------------
    def submit(self, job: Job) -> bool:
        """Queue ``job`` to be sent now; False (and counted as failed) when the queue is full."""
        with self._cond:
            if self._closed or len(self._due) + len(self._inflight) >= self.size:
                full = True
            else:
                full = False
                heapq.heappush(self._due, (time.monotonic(), next(self._seq), job))
                self._cond.notify()
        if full:
            self._give_up(job, f"the notification queue is full ({self.size})")
            return False
        self._ensure_worker()
        return True

    def flush(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for every queued notification; count the rest as failed.

        Returns how many were given up. The queue takes nothing after a flush.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while (self._due or self._inflight) and time.monotonic() < deadline:
                self._cond.wait(min(0.1, max(0.0, deadline - time.monotonic())))
            left = [job for _, _, job in self._due] + self._inflight
            self._due.clear()
            self._closed = True
            self._cond.notify_all()
        for job in left:
            self._give_up(job, f"still undelivered when the pass ended ({timeout:g}s deadline)")
        return len(left)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._due.clear()
            self._cond.notify_all()

    # ---- the worker -------------------------------------------------------------------
    def _ensure_worker(self) -> None:
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="lockgate-notify", daemon=True)
                self._thread.start()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (not self._due or self._due[0][0] > time.monotonic()):
                    wait = self._due[0][0] - time.monotonic() if self._due else None
                    self._cond.wait(wait)
                if self._closed and not self._due:
                    return
                _, _, job = heapq.heappop(self._due)
                self._inflight.append(job)
            try:
                self._attempt(job)
            finally:
                with self._cond:
                    if job in self._inflight:
                        self._inflight.remove(job)
                    self._cond.notify_all()

    def _attempt(self, job: Job) -> None:
        job.attempt += 1
        try:
            request = job.prepare()
            job.target = host_of(request.url)
            self._send(request)
        except Undeliverable as exc:
            self._give_up(job, str(exc))
            return
        except (requests.RequestException, LockgateError, OSError, ValueError) as exc:
            reason = _describe(exc)
            if job.attempt >= self.attempts:
                self._give_up(job, f"{reason} (after {job.attempt} attempts)")
                return
            delay = min(self.max_backoff, self.backoff * 2 ** (job.attempt - 1))
            with self._cond:
                closed = self._closed
                if not closed:
                    self._inflight.remove(job)
                    heapq.heappush(self._due, (time.monotonic() + delay, next(self._seq), job))
                    self._cond.notify()
            if closed:
                return  # flush has counted it
            log.warning(
                f"notification to {job.provider} for sync {job.sync} failed, "
                f"retrying in {delay:g}s: {reason}",
                extra=self._fields(job, reason),
            )
            return
        with self._cond:
            job.settled = True
        log.info(f"notified {job.provider} for sync {job.sync}: {job.what}", extra=self._fields(job, ""))
        if self._sent is not None:
            self._sent(job.provider, job.sync)

    def _send(self, request: Request) -> None:
        session = session_trusting(request.ca) if request.ca else self._session
        try:
            response = session.post(
                request.url,
                data=request.body,
                headers={"Content-Type": "application/json", **request.headers},
                timeout=self.timeout,
                allow_redirects=False,
                stream=True,  # only the status counts: the body is never read
            )
            status = response.status_code
            response.close()
        except requests.exceptions.SSLError as exc:
            # an untrusted certificate stays untrusted: not retried (as Flux's retrying client)
            raise Undeliverable(f"{_describe(exc)} (not retried)") from None
        finally:
            if session is not self._session:
                session.close()
        if status < 300:
            return
        if status == 429 or status >= 500:
            raise _Retryable(f"HTTP {status}")
        raise Undeliverable(f"HTTP {status} (not retried)")

    def _give_up(self, job: Job, reason: str) -> None:
        with self._cond:
            if job.settled:
                return
            job.settled = True
        if job.forget is not None:
            job.forget()
        log.error(
            f"notification to {job.provider} for sync {job.sync} failed: {reason}",
            extra=self._fields(job, reason),
        )
        if self._failed is not None:
            self._failed(job.provider, job.sync)

    @staticmethod
    def _fields(job: Job, reason: str) -> dict[str, object]:
        fields: dict[str, object] = {
            "provider": job.provider,
            "sync": job.sync,
            "notification": job.what,
            "attempt": job.attempt,
        }
        if job.target:
            fields["target"] = job.target
        if reason:
            fields["reason"] = reason
        return fields


class _Retryable(requests.RequestException):
    """A 429 or 5xx answer."""


def _describe(exc: BaseException) -> str:
    """A failure without the URL (a Slack URL's path is its credential) or a header."""
    if isinstance(exc, LockgateError):
        return scrub(exc.message)  # whole: a LockgateError carries no URL or header
    if isinstance(exc, _Retryable):
        return str(exc)
    if isinstance(exc, requests.Timeout):
        return "timed out"
    if isinstance(exc, requests.exceptions.SSLError):
        return "TLS verification failed (set certSecretRef: a Secret whose ca.crt the server's chains to)"
    if isinstance(exc, UnicodeDecodeError):
        return "a Secret entry is not UTF-8 text"
    if isinstance(exc, requests.ConnectionError):
        text = str(exc)
        for known in ("Connection refused", "Name or service not known", "No route to host", "reset by peer"):
            if known in text:
                return f"connection failed: {known.lower()}"
        return "connection failed"
    return type(exc).__name__
