"""The resource manager: one Kubernetes client, one field manager, one ApplySet, a thread pool.

Flux's ``ssa.ResourceManager`` in Python: the verbs live in their own modules (``apply``,
``wait``, ``prune``) and take a ``Manager``; this module holds only what they share.
Objects to send are ``runner.plan.desired.Desired`` values.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from lockgate.errors import LockgateError
from runner.kube.client import Kube
from runner.kube.discovery import Resource
from runner.plan import applyset

FIELD_MANAGER = "lockgate"
DEFAULT_CONCURRENCY = 8

T = TypeVar("T")
R = TypeVar("R")


class Manager:
    def __init__(
        self,
        kube: Kube,
        *,
        set_id: str,
        field_manager: str = FIELD_MANAGER,
        concurrency: int = DEFAULT_CONCURRENCY,
        override_managers: tuple[str, ...] = (),
    ) -> None:
        self.kube = kube
        self.set_id = set_id
        self.field_manager = field_manager
        #: other managers whose fields become ours, as Flux's ``--override-manager``
        #: (``lockgate adopt``: ``kustomize-controller``)
        self.override_managers = override_managers
        self.concurrency = max(1, concurrency)

    @property
    def member_selector(self) -> str:
        return f"{applyset.PART_OF_LABEL}={self.set_id}"

    @property
    def foreign_selector(self) -> str:
        """Objects of another ApplySet: the part-of label is there and names a different set."""
        return f"{applyset.PART_OF_LABEL},{applyset.PART_OF_LABEL}!={self.set_id}"

    def resource(self, api_version: str, kind: str) -> Resource:
        return self.kube.resource(api_version, kind)

    def each(self, func: Callable[[T], R], items: Sequence[T]) -> list[R | LockgateError]:
        """``func`` over ``items`` on the pool, in order; a ``LockgateError`` is returned, not raised."""

        def guarded(item: T) -> R | LockgateError:
            try:
                return func(item)
            except LockgateError as exc:
                return exc

        if len(items) <= 1 or self.concurrency == 1:
            return [guarded(item) for item in items]
        return _in_threads(guarded, items, min(self.concurrency, len(items)))


def _in_threads(func: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """``func`` over ``items`` in ``workers`` threads that take the next index from a shared
    counter: no future, queue or condition per item (a thread pool's bookkeeping cost a
    5,000-object pass more CPU than building its requests). ``func`` must not raise but
    for a bug; the first such exception is raised here after the threads end."""
    results: list[R | None] = [None] * len(items)
    claim = iter(range(len(items)))
    lock = threading.Lock()
    failures: list[BaseException] = []

    def work() -> None:
        while not failures:
            with lock:
                index = next(claim, None)
            if index is None:
                return
            try:
                results[index] = func(items[index])
            except BaseException as exc:  # a bug, not a refusal: stop the others and re-raise
                failures.append(exc)
                return

    threads = [threading.Thread(target=work, name=f"lockgate-apply-{n}", daemon=True) for n in range(workers)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    except BaseException as exc:  # Ctrl-C or a signal's exception: take no further item
        failures.append(exc)
        raise
    if failures:
        raise failures[0]
    return results  # type: ignore[return-value]  # every index was filled
