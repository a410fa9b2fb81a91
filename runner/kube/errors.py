"""What the API server said, as error classes the runner can act on.

A refusal (4xx) is a ``KubeError``, an ``ApplyError``: the objects or the credentials'
rights are wrong. ``PermissionDenied`` names the verb and resource to grant;
``NotFoundError`` is what a missing object or kind answers. An API server that cannot be
reached or fails (5xx after retries) is a ``ClusterUnreachable`` / ``ClusterFailing``:
a ``ClusterError`` with its own exit code, because nothing was refused.
"""

from __future__ import annotations

from lockgate.errors import ApplyError, ClusterError


class KubeError(ApplyError):
    """The API server refused a request; ``status`` and ``reason`` are its answer."""

    def __init__(self, message: str, *, status: int, reason: str, server_message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.server_message = server_message

    @property
    def is_immutable(self) -> bool:
        return self.reason in ("Conflict", "Invalid") and "immutable" in self.server_message.lower()

    def about(self, message: str) -> KubeError:
        """The same answer with a message that names the object it concerns."""
        return type(self)(message, status=self.status, reason=self.reason, server_message=self.server_message)


class PermissionDenied(KubeError):
    """RBAC said no: the message names the verb and the resource to grant."""


class NotFoundError(KubeError):
    pass


class ClusterUnreachable(ClusterError):
    """No answer: connection refused, DNS, TLS or a timeout."""


class ClusterFailing(ClusterError):
    """The API server answered with server errors (5xx) on every attempt."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status
