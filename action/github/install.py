"""The action's install step: lockgate's dependencies from the checked-in lock, in a cached
venv that is checked against the lock before every use.

Run as a script with the runner's Python (standard library only: nothing is installed yet),
in isolated mode (``-I``). What it trusts is the action's own checkout (this file, lockgate's
sources, ``requirements.lock``) and that interpreter; nothing in the tool cache, which an
earlier job on a self-hosted runner, or a cache restored from elsewhere, may have written.

- The venv holds only the third-party dependencies: pip installs ``requirements.lock`` with
  ``--require-hashes --no-deps --only-binary=:all:``, so every wheel's sha256 is one the lock
  lists. lockgate itself runs from the action's checkout (``PYTHONPATH``), never from the cache.
- The wheels pip installed are kept beside the venv. Before the venv is used, each wheel's
  sha256 must be one the lock lists for its name, and every file in the venv must be a file of
  one of those wheels with the hash the wheel's RECORD gives it, or one of the files pip and
  venv write themselves (``INSTALLER``, ``REQUESTED``, ``RECORD``; the interpreter links and
  ``pyvenv.cfg``, compared with what venv writes for this interpreter). Byte code is derived:
  it is deleted (the run step writes its own under the job's temporary directory). A changed,
  added or missing file and the venv is rebuilt from nothing, with a warning; a stamp file
  only says which venv was used last (pruning), it never makes one trusted.

The venv is ``$RUNNER_TOOL_CACHE/lockgate/deps-<key>`` (else under ``$RUNNER_TEMP``), the key
hashing the lock and the interpreter; its wheels are in ``deps-<key>.wheels``. A lock file
serialises installers (the run step holds it shared while lockgate runs); the ``KEEP`` most
recently used venvs stay. Writes ``python=<venv python>`` to ``$GITHUB_OUTPUT`` and, to
``$GITHUB_PATH``, a directory in ``$RUNNER_TEMP`` holding only a ``lockgate`` launcher.
"""

from __future__ import annotations

import base64
import csv
import fcntl
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import venv as venv_mod
import zipfile
from collections.abc import Mapping
from pathlib import Path

LOCK = "requirements.lock"
MINIMUM_PYTHON = (3, 11)
#: venvs kept in the cache (the one in use included)
KEEP = 3
#: files pip writes into a dist-info directory itself; None: any content (RECORD is never run)
PIP_WRITES: dict[str, bytes | None] = {"INSTALLER": b"pip\n", "REQUESTED": b"", "RECORD": None}
_PIP = ["-m", "pip", "-q", "--disable-pip-version-check", "--no-input"]
_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*[^\s;\\]+")
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


class Poisoned(Exception):
    """The cached venv is not what the lock makes; the message says what differs."""


class InstallError(Exception):
    """Installing failed; the message says where and what to do."""


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_hashes(text: str) -> dict[str, frozenset[str]]:
    """``name -> sha256 hex digests`` of a pip requirements lock (every entry pinned and hashed)."""
    found: dict[str, set[str]] = {}
    for line in text.replace("\\\n", " ").splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        match = _REQUIREMENT.match(line)
        hashes = _HASH.findall(line)
        if match is None or not hashes:
            raise InstallError(f"{LOCK}: {line[:80]!r} is not 'name==version --hash=sha256:...'")
        found.setdefault(normalize(match[1]), set()).update(hashes)
    return {name: frozenset(values) for name, values in found.items()}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _record_hash(path: Path) -> str:
    """A file's sha256 as a wheel's RECORD writes it (urlsafe base64, no padding)."""
    raw = bytes.fromhex(sha256_file(path))
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def site_packages() -> str:
    """Where the venv's third-party packages live, relative to the venv (POSIX layout)."""
    return f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"


def wheel_files(wheel: Path, site: str) -> tuple[str, dict[str, str]]:
    """The dist-info directory a wheel installs and ``venv path -> RECORD hash`` of its files
    (those pip puts in site-packages; scripts, headers and data are removed after install)."""
    with zipfile.ZipFile(wheel) as archive:
        records = [n for n in archive.namelist() if n.count("/") == 1 and n.endswith(".dist-info/RECORD")]
        if len(records) != 1:
            raise Poisoned(f"{wheel.name}: not a wheel (no single .dist-info/RECORD)")
        text = archive.read(records[0]).decode()
    files: dict[str, str] = {}
    for row in csv.reader(io.StringIO(text)):
        if len(row) < 2 or not row[1]:
            continue  # RECORD itself (pip rewrites it)
        path, (algorithm, _, value) = row[0], row[1].partition("=")
        if algorithm != "sha256" or path.startswith(("/", "..")):
            raise Poisoned(f"{wheel.name}: RECORD entry {path!r} is not a sha256 of a file in the wheel")
        data = re.match(r"^[^/]+\.data/(purelib|platlib|[^/]+)/(.*)$", path)
        if data is not None:
            if data[1] not in ("purelib", "platlib"):
                continue
            path = data[2]
        files[f"{site}/{path}"] = value
    return records[0].split("/")[0], files


def _venv_skeleton(scratch: Path) -> tuple[dict[str, str], dict[str, bytes], dict[str, str]]:
    """What venv writes for this interpreter: ``link -> target``, the files outside ``bin``
    (``.gitignore`` since 3.13) and pyvenv.cfg's settings."""
    venv_mod.EnvBuilder(symlinks=True, with_pip=False).create(scratch)
    links: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for path in sorted(scratch.rglob("*")):
        relative = str(path.relative_to(scratch))
        if path.is_symlink():
            links[relative] = os.readlink(path)
        elif path.is_file() and path.parts[len(scratch.parts)] != "bin" and relative != "pyvenv.cfg":
            files[relative] = path.read_bytes()
    return links, files, _settings(scratch / "pyvenv.cfg")


def _settings(path: Path) -> dict[str, str]:
    pairs = (line.partition("=") for line in path.read_text().splitlines() if "=" in line)
    # ``command`` records where the venv was made: informational only
    return {k.strip(): v.strip() for k, _, v in pairs if k.strip() != "command"}


def verify(target: Path, wheels: Path, hashes: Mapping[str, frozenset[str]]) -> None:
    """Raise ``Poisoned`` unless ``target`` holds exactly the files of the locked ``wheels``
    (see the module note); byte code is deleted on the way, it is never trusted."""
    site = site_packages()
    expected: dict[str, set[str]] = {}
    dist_infos: set[str] = set()
    if not wheels.is_dir() or not (target / "pyvenv.cfg").is_file():
        raise Poisoned("the venv or its wheels are missing")
    for wheel in sorted(wheels.iterdir()):
        if wheel.suffix != ".whl" or not wheel.is_file() or wheel.is_symlink():
            raise Poisoned(f"{wheel.name}: not a wheel pip downloaded")
        name = normalize(wheel.name.split("-", 1)[0])
        if sha256_file(wheel) not in hashes.get(name, frozenset()):
            raise Poisoned(f"{wheel.name}: its sha256 is not one {LOCK} lists for {name}")
        dist_info, files = wheel_files(wheel, site)
        dist_infos.add(f"{site}/{dist_info}")
        for installed, value in files.items():
            expected.setdefault(installed, set()).add(value)
    with tempfile.TemporaryDirectory(prefix="lockgate-venv-") as scratch:
        links, own_files, settings = _venv_skeleton(Path(scratch) / "venv")
    if _settings(target / "pyvenv.cfg") != settings:
        raise Poisoned("pyvenv.cfg is not what venv writes for this interpreter")
    seen: set[str] = set()
    for root, dirs, names in os.walk(target):
        here = Path(root)
        for name in list(dirs):
            if name == "__pycache__":
                shutil.rmtree(here / name)
                dirs.remove(name)
        for name in [*names, *(d for d in dirs if (here / d).is_symlink())]:
            path = here / name
            relative = str(path.relative_to(target))
            if path.is_symlink():
                if links.get(relative) != os.readlink(path):
                    raise Poisoned(f"{relative}: a link venv does not make")
                seen.add(relative)
            elif not path.is_file():
                raise Poisoned(f"{relative}: not a regular file")
            elif relative == "pyvenv.cfg":
                continue
            elif relative in own_files:
                if path.read_bytes() != own_files[relative]:
                    raise Poisoned(f"{relative}: not what venv writes")
                seen.add(relative)
            elif relative in expected:
                if _record_hash(path) not in expected[relative]:
                    raise Poisoned(f"{relative}: its content differs from the locked wheel's")
                seen.add(relative)
            elif str(path.parent.relative_to(target)) in dist_infos and name in PIP_WRITES:
                content = PIP_WRITES[name]
                if content is not None and path.read_bytes() != content:
                    raise Poisoned(f"{relative}: not what pip writes")
            else:
                raise Poisoned(f"{relative}: not a file of any locked wheel")
    missing = sorted((set(expected) | set(links) | set(own_files)) - seen)
    if missing:
        raise Poisoned(f"{missing[0]}: missing ({len(missing)} missing files)")


def _cleanup(target: Path, hashes: Mapping[str, frozenset[str]]) -> None:
    """After pip: only the locked distributions and venv's own skeleton stay."""
    python = str(target / "bin" / "python")
    # ensurepip's pip (and setuptools on 3.11) installed the lock; they are not part of it
    extra = [n for n in ("pip", "setuptools", "wheel") if n not in hashes]
    subprocess.run([python, *_PIP, "uninstall", "-y", *extra], check=True, capture_output=True)
    for entry in (target / "bin").iterdir():
        if not entry.is_symlink():
            entry.unlink()  # console scripts and activate scripts: never run by the action
    for directory in ("share", "include", "etc"):
        if (target / directory).is_dir():
            shutil.rmtree(target / directory)
    (target / "include").mkdir()


def lock_path(target: Path) -> Path:
    return target.parent / f"{target.name}.lock"


def wheels_dir(target: Path) -> Path:
    return target.parent / f"{target.name}.wheels"


def stamp_path(target: Path) -> Path:
    return target.parent / f"{target.name}.used"


def cache_key(lock: bytes) -> str:
    """The lock and the interpreter (its real path and version) the venv is made for."""
    interpreter = os.path.realpath(str(getattr(sys, "_base_executable", sys.executable)))
    return hashlib.sha256(lock + b"\0" + interpreter.encode() + b"\0" + sys.version.encode()).hexdigest()[:16]


def venv_dir(source: Path, env: Mapping[str, str]) -> Path:
    base = env.get("RUNNER_TOOL_CACHE") or env.get("RUNNER_TEMP")
    if not base:
        raise InstallError("neither RUNNER_TOOL_CACHE nor RUNNER_TEMP is set (not in GitHub Actions?)")
    return Path(base) / "lockgate" / f"deps-{cache_key((source / LOCK).read_bytes())}"


def build(target: Path, lock: Path, hashes: Mapping[str, frozenset[str]]) -> None:
    """A fresh venv from ``lock``, its wheels kept, checked as a reused one would be."""
    wheels = wheels_dir(target)
    for old in (target, wheels):
        shutil.rmtree(old, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
    python = str(target / "bin" / "python")
    locked = ["--require-hashes", "--no-deps", "--only-binary=:all:", "-r", str(lock)]
    subprocess.run([python, *_PIP, "download", "-d", str(wheels), *locked], check=True)
    install = [python, *_PIP, "install", "--no-index", "--find-links", str(wheels), "--no-compile"]
    subprocess.run([*install, *locked], check=True)
    _cleanup(target, hashes)
    try:
        verify(target, wheels, hashes)
    except Poisoned as exc:
        raise InstallError(f"a fresh install from {LOCK} does not pass its own check: {exc}") from None


def install(source: Path, env: Mapping[str, str]) -> tuple[Path, str]:
    """The checked venv for ``source``'s lock and how it came: reused, installed, or rebuilt
    (with the reason the cached one was refused)."""
    target = venv_dir(source, env)
    lock = source / LOCK
    hashes = lock_hashes(lock.read_text())
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path(target), "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        how = "installed"
        if target.exists() or wheels_dir(target).exists():
            try:
                verify(target, wheels_dir(target), hashes)
                how = "reused"
            except Poisoned as exc:
                how = f"rebuilt: the cached venv failed its check ({exc})"
        if how != "reused":
            build(target, lock, hashes)
        stamp_path(target).touch()
        return target, how


def prune(cache: Path, current: Path, keep: int = KEEP) -> list[Path]:
    """Remove all but the ``keep`` most recently used venvs in ``cache``, skipping any in use."""
    venvs = sorted(
        (p.with_suffix("") for p in cache.glob("*.used") if p.with_suffix("") != current),
        key=lambda p: stamp_path(p).stat().st_mtime,
        reverse=True,
    )
    # venvs of lockgate before 0.2 (lockgate installed in them, trusted by a stamp file)
    legacy = [p for p in cache.iterdir() if (p / ".lockgate-complete").is_file()]
    removed = []
    for old in [*venvs[max(keep - 1, 0) :], *legacy]:
        with open(lock_path(old), "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # installing or running right now
            for path in (old, wheels_dir(old)):
                shutil.rmtree(path, ignore_errors=True)
            stamp_path(old).unlink(missing_ok=True)
            removed.append(old)
    return removed


def launcher(source: Path, target: Path, pycache: Path) -> str:
    """The ``lockgate`` later steps run: the checkout's lockgate on the venv's interpreter."""
    return (
        "#!/bin/sh\n"
        "# written by lockgate's action: lockgate from the action's checkout, its dependencies\n"
        "# from the checked venv; -P keeps the working directory off the import path\n"
        f"PYTHONPATH={shlex.quote(str(source))} PYTHONPYCACHEPREFIX={shlex.quote(str(pycache))} "
        f'exec {shlex.quote(str(target / "bin" / "python"))} -P -m lockgate "$@"\n'
    )


def _annotate(level: str, message: str) -> None:
    print(f"::{level} title=lockgate install::{message}", flush=True)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -I install.py ACTION_PATH", file=sys.stderr)
        return 2
    source = Path(argv[0]).resolve()
    if sys.version_info < MINIMUM_PYTHON:
        found = ".".join(map(str, sys.version_info[:3]))
        _annotate(
            "error",
            f"lockgate needs Python >= 3.11 and {sys.executable} is {found}: set the action's "
            "`python` input to a newer interpreter (or run actions/setup-python first)",
        )
        return 1
    try:
        target, how = install(source, os.environ)
    except (InstallError, subprocess.CalledProcessError) as exc:
        _annotate("error", f"installing lockgate's dependencies failed: {exc}")
        return 1
    if how.startswith("rebuilt"):
        _annotate("warning", f"{target}: {how}")
    print(f"lockgate's dependencies {how.split(':')[0]} in {target}", file=sys.stderr)
    for old in prune(target.parent, target):
        print(f"removed the unused {old}", file=sys.stderr)
    temp = Path(os.environ.get("RUNNER_TEMP") or target.parent)
    path_dir = temp / "lockgate-path"
    path_dir.mkdir(parents=True, exist_ok=True)
    script = path_dir / "lockgate"
    script.write_text(launcher(source, target, temp / "lockgate-pycache"))
    script.chmod(0o755)
    outputs = f"python={target / 'bin' / 'python'}\n"
    for name, text in (("GITHUB_OUTPUT", outputs), ("GITHUB_PATH", f"{path_dir}\n")):
        path = os.environ.get(name)
        if path:
            with open(path, "a", encoding="utf-8") as stream:
                stream.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
