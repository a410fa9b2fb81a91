"""Files under a root directory, reached without following a symlink out of it.

An ``oci-layout://`` directory a Sync names must lie under a root the platform allowed
(``Runner.spec.layoutRoots``), and a symlink inside that root could point anywhere else the
runner may read (another tenant's mirror) or write (an attestation stored with the
artifact). ``Tree`` resolves every path one component at a time from open descriptors,
as Linux's ``openat2(RESOLVE_BENEATH)`` does (which Python does not offer): a symlink is
followed only when where it points stays under the root, else the path is refused naming
the link and its target; each directory is opened with ``O_NOFOLLOW`` from its parent's
descriptor, so a directory swapped for a symlink meanwhile is refused too, and files are
opened, created and renamed relative to the descriptor of the directory that holds them.
``LayoutStore`` does every read and write through one ``Tree``; the command line's is
rooted at ``/``, under which every path lies.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path, PurePath

from lockgate.errors import UsageError

#: as the kernel's limit on symlinks followed in one lookup
MAX_LINKS = 40
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class Escape(UsageError):
    """A path under the root leads out of it (a symlink), or is not under it at all."""


def _inside(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


class Tree:
    """The files under ``root`` (absolute); ``setting`` names what allowed the root, for errors."""

    def __init__(self, root: Path, *, setting: str = "") -> None:
        self.root = Path(os.path.normpath(os.path.abspath(root)))
        #: the root as the kernel finds it: a link target may name it either way
        self.real = Path(os.path.realpath(self.root))
        self.setting = setting

    def _relative(self, path: str) -> list[str] | None:
        """The components of absolute ``path`` under the root (lexically); None when outside."""
        for root in (str(self.root), str(self.real)):
            if _inside(path, root):
                rest = path[len(root) :] if root != "/" else path
                return [part for part in rest.split("/") if part]
        return None

    def _outside(self, path: PurePath, why: str) -> Escape:
        allowed = f" ({self.setting})" if self.setting else ""
        return Escape(f"{path}: {why}, outside {self.root}, the root it must stay under{allowed}")

    def _resolve(self, path: PurePath) -> tuple[int, list[str]]:
        """(descriptor of the deepest existing directory on ``path``, the components left under
        it) with every symlink on the way followed beneath the root; the last component is not
        looked at when it is the only one left. The caller closes the descriptor."""
        wanted = os.path.normpath(os.path.abspath(path))
        parts = self._relative(wanted)
        if parts is None:
            raise self._outside(path, "not under the allowed root")
        links = 0
        fd = os.open(self.root, _DIR)
        done: list[str] = []
        try:
            while len(parts) > 1:
                name = parts[0]
                try:
                    mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                except FileNotFoundError:
                    return fd, parts
                if stat.S_ISLNK(mode):
                    links += 1
                    parts = self._follow(fd, done, name, parts[1:], links, path)
                    os.close(fd)
                    fd, done = os.open(self.root, _DIR), []
                    continue
                try:
                    child = os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=fd)
                except OSError as exc:
                    raise self._outside(
                        path, f"{name} is not a directory we may enter ({exc.strerror})"
                    ) from None
                os.close(fd)
                fd = child
                done.append(name)
                parts = parts[1:]
            return fd, parts
        except BaseException:
            os.close(fd)
            raise

    def _follow(
        self, fd: int, done: list[str], name: str, rest: list[str], links: int, path: PurePath
    ) -> list[str]:
        """The components under the root that the link ``name`` (in ``done``) and ``rest`` lead to."""
        link = self.root.joinpath(*done, name)
        if links > MAX_LINKS:
            raise self._outside(path, f"more than {MAX_LINKS} symlinks on the way (a loop at {link}?)")
        target = os.readlink(name, dir_fd=fd)
        lands = os.path.normpath(os.path.join(self.root.joinpath(*done), target))
        under = self._relative(lands)
        if under is None:
            raise self._outside(path, f"the symlink {link} points to {target}, which is")
        return [*under, *rest]

    @contextmanager
    def directory(self, path: PurePath, *, create: bool = False) -> Iterator[int]:
        """A descriptor of the directory ``path`` (made, with its parents, when ``create``)."""
        fd, parts = self._resolve(PurePath(path) / "_")
        try:
            for name in parts[:-1]:
                if create:
                    with suppress(FileExistsError):
                        os.mkdir(name, dir_fd=fd)
                try:
                    child = os.open(name, _DIR | os.O_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    raise FileNotFoundError(2, "No such file or directory", str(path)) from None
                except OSError as exc:
                    raise self._outside(path, f"{name} is not a directory ({exc.strerror})") from None
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def _final(self, path: PurePath) -> tuple[int, str]:
        """(descriptor of the directory holding ``path``, its last component), links followed."""
        fd, parts = self._resolve(path)
        if len(parts) != 1:
            os.close(fd)
            raise FileNotFoundError(2, "No such file or directory", str(path))
        links = 0
        while True:
            try:
                mode = os.stat(parts[0], dir_fd=fd, follow_symlinks=False).st_mode
            except FileNotFoundError:
                return fd, parts[0]
            if not stat.S_ISLNK(mode):
                return fd, parts[0]
            links += 1
            try:
                under = self._follow(fd, [], parts[0], [], links, path)
            finally:
                os.close(fd)
            fd, parts = self._resolve(self.root.joinpath(*under))
            if len(parts) != 1:
                os.close(fd)
                raise FileNotFoundError(2, "No such file or directory", str(path))

    def open(self, path: PurePath) -> int:
        """A descriptor of the file ``path``, for reading."""
        fd, name = self._final(path)
        try:
            return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        finally:
            os.close(fd)

    def read_bytes(self, path: PurePath) -> bytes:
        with os.fdopen(self.open(path), "rb") as handle:
            return handle.read()

    def is_file(self, path: PurePath) -> bool:
        try:
            fd, name = self._final(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        try:
            return stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            return False
        finally:
            os.close(fd)

    def exists(self, path: PurePath) -> bool:
        try:
            with self.directory(path):
                return True
        except (FileNotFoundError, NotADirectoryError):
            return self.is_file(path)

    def listdir(self, path: PurePath) -> list[str]:
        with self.directory(path) as fd:
            return os.listdir(fd)

    def write_atomic(self, path: PurePath, chunks: Iterable[bytes]) -> None:
        """Write ``chunks`` to a new file beside ``path`` and rename it over ``path`` once whole
        (its directory made when missing). A chunk iterator that raises leaves nothing."""
        with self.directory(path.parent, create=True) as fd:
            temp = f".{path.name}.{secrets.token_hex(6)}"
            out = os.open(
                temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=fd
            )
            try:
                with os.fdopen(out, "wb") as handle:
                    for chunk in chunks:
                        handle.write(chunk)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(temp, path.name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with suppress(FileNotFoundError):
                    os.unlink(temp, dir_fd=fd)
                raise
