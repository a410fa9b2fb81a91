"""Checks of the paths a command will write, made before any work starts.

Every command that writes a file or creates a directory checks its destination here
first, so a typo in ``-o`` fails at once with exit 2 (usage) and a message naming the
path, instead of after a push or a download, and never as a traceback. What cannot be
checked in advance (a file that turns unreadable mid-walk) is caught by the CLI root,
which maps ``OSError`` to the same kind of message (``os_error_message``).
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from lockgate.errors import ExitCode, UsageError

#: errors that are about the path the user gave, not about the machine
_PATH_ERRNOS = {
    errno.ENOENT,
    errno.EACCES,
    errno.EPERM,
    errno.EISDIR,
    errno.ENOTDIR,
    errno.EEXIST,
    errno.EROFS,
    errno.ENAMETOOLONG,
    errno.ELOOP,
}


def _writable_parent(path: Path, what: str, *, create_parents: bool = False) -> None:
    parent = path.absolute().parent
    if create_parents:
        # the command creates missing parents (as ``flux pull -o`` does): the first one
        # that exists must let us
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
    elif not parent.exists():
        raise UsageError(f"{what} {path}: directory {parent} does not exist; create it first")
    if not parent.is_dir():
        raise UsageError(f"{what} {path}: {parent} is not a directory")
    # a real probe, not os.access: root passes access() on /proc and read-only mounts
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".lockgate-probe-", dir=parent))
    except OSError as exc:
        reason = (exc.strerror or "not writable").lower()
        raise UsageError(f"{what} {path}: cannot create anything in {parent}: {reason}") from None


def require_writable_file(path: Path, what: str) -> None:
    """Raise ``UsageError`` unless ``path`` can be created or replaced as a regular file."""
    if path.is_dir():
        raise UsageError(f"{what} {path}: is a directory; give a file name")
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"{what} {path}: the file is not writable")
    _writable_parent(path, what)


def require_new_directory(path: Path, what: str) -> None:
    """Raise ``UsageError`` unless ``path`` is absent (or an empty directory) and creatable.

    Missing parents are allowed: the first existing ancestor must be a writable directory.
    """
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"{what} {path}: exists and is not a directory")
        if any(path.iterdir()):
            raise UsageError(f"{what} {path}: directory is not empty; choose a new one")
    _writable_parent(path, what, create_parents=True)


def os_error_message(exc: OSError) -> tuple[str, ExitCode]:
    """A one-line message and exit code for an ``OSError`` no command turned into its own."""
    reason = (exc.strerror or exc.__class__.__name__).lower()
    names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
    where = " -> ".join(names)
    message = f"{where}: {reason}" if where else reason
    if exc.errno in _PATH_ERRNOS:
        return f"{message}; check the path and its permissions", ExitCode.USAGE
    return message, ExitCode.FAILURE


def umask() -> int:
    """The process umask, read without setting it (``os.umask`` would race other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o777  # unknown: as if every bit were masked (owner-only is the safe failure)
