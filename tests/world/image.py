"""The project's container image (deploy/Containerfile), built with buildah, no engine, no pulls.

No base image can be pulled here and no container engine runs, so:

1. ``debootstrap --variant=minbase`` builds a Debian root filesystem once (cached under
   ``$LOCKGATE_WORLD_CACHE/image/base-<key>``, keyed on suite, variant, mirror and the recipe;
   a file lock serialises concurrent runs), slimmed as ``debian:*-slim`` is. It is not pinned
   by digest (nothing is pulled): debootstrap must verify the suite's Release file against
   Debian's archive keyring (``--force-check-gpg``), which pins every package by its hash,
   and ``base.txt`` beside the tarball records the Release date and each package's version;
2. ``buildah from scratch`` + ``buildah add`` of its tarball + ``buildah commit`` make it the
   base image ``localhost/lockgate-base:<suite>-<key>``;
3. a build context is staged (the Containerfile; a wheelhouse: the lockgate wheel built from the
   checkout and every dependency's wheel for the base's Python from requirements.lock, hashes
   required, each cached on its own inputs;
   the pinned kustomize build) and ``buildah bud --build-arg BASE=...`` builds
   ``localhost/lockgate:<key>``, the key hashing every input (sources, pyproject, Containerfile,
   kustomize, base), so an unchanged checkout is never rebuilt;
4. ``buildah push`` copies it to a registry.

buildah runs with the ``vfs`` driver and ``--isolation chroot`` on its own storage
(``$LOCKGATE_WORLD_CACHE/buildah``), never the system store. ``python -m tests.world.image``
(``make image``) builds and optionally pushes; the image tests and ``make demo`` call ``build``.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from action.github import install
from tests.world import binaries
from tests.world.errors import WorldSetupError, log_tail

ROOT = Path(__file__).resolve().parents[2]
CONTAINERFILE = ROOT / "deploy" / "Containerfile"
MIRROR = "http://deb.debian.org/debian"
#: debootstrap checks the suite's signed Release file with it (debian-archive-keyring)
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
LOCK = ROOT / "requirements.lock"
#: Debian suite -> the Python its archive ships (the wheelhouse is resolved for it)
SUITES = {"bookworm": "3.11"}
DEFAULT_SUITE = "bookworm"
#: the glibc of bookworm: the wheelhouse takes the manylinux wheels it runs
GLIBC = (2, 36)
#: bump when the base recipe (debootstrap flags, slimming) changes
BASE_RECIPE = 1
NAME = "localhost/lockgate"
RUNTIME = "localhost/lockgate-runtime"
#: builds kept in the store (each of lockgate and its runtime stage)
KEEP = 3
#: the user the image runs as (the ``restricted`` Pod security level wants non-root)
USER = 65532
#: what the Containerfile's wheels are built from
_WHEEL_INPUTS = ("pyproject.toml", "README.md", "lockgate", "action", "runner")
#: removed from the debootstrap tree, as debian:*-slim does (and the Containerfile for its packages)
_SLIM = (
    "var/cache/apt",
    "var/lib/apt/lists",
    "var/log",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "usr/share/lintian",
)


@dataclass(frozen=True)
class Image:
    """A built image in the buildah store; ``name`` is ``localhost/lockgate:<key>``."""

    name: str
    key: str
    #: uncompressed size of the image in the store, bytes
    size: int
    #: seconds the build took (0 when the cached image was reused)
    seconds: float


def cache_dir() -> Path:
    return binaries.cache_root() / "image"


def _log(name: str) -> Path:
    directory = binaries.cache_root() / "logs"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"image-{name}.log"


def _tool(name: str, package: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise WorldSetupError(
            f"building the image: {name!r} is not installed (run 'make system-packages', "
            f"which installs Debian's {package})"
        )
    return found


def buildah(*args: str) -> list[str]:
    """A buildah command line on the project's own store (vfs, under the cache)."""
    store = binaries.cache_root() / "buildah"
    return [
        _tool("buildah", "buildah"),
        "--root",
        str(store / "root"),
        "--runroot",
        str(store / "run"),
        "--storage-driver",
        "vfs",
        *args,
    ]


def _run(argv: Sequence[str], *, step: str, log: Path, env: Mapping[str, str] | None = None) -> str:
    """Run ``argv`` appending to ``log``; on failure raise naming the step, with the log tail."""
    with log.open("a") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        proc = subprocess.run(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=out,
            text=True,
            env=dict(env) if env is not None else None,
        )
        out.write(proc.stdout)
    if proc.returncode != 0:
        raise WorldSetupError(
            f"building the image: step {step!r} failed (exit {proc.returncode}); log {log}:\n{log_tail(log)}"
        )
    return proc.stdout


@contextmanager
def _lock(name: str) -> Iterator[None]:
    lock_dir = binaries.cache_root() / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f"image-{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _image_exists(name: str) -> bool:
    proc = subprocess.run(buildah("inspect", "--type", "image", name), capture_output=True)
    return proc.returncode == 0


# ---- 1. the debootstrap root filesystem and 2. the base image ----------------------------
def base_key(suite: str) -> str:
    spec = {"suite": suite, "variant": "minbase", "mirror": MIRROR, "slim": _SLIM, "recipe": BASE_RECIPE}
    return _digest(json.dumps(spec, sort_keys=True).encode())


def _slim_and_pack(tree: Path, tarball: Path, log: Path) -> None:
    for relative in _SLIM:
        target = tree / relative
        if target.is_dir():
            for child in target.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
    # apt keeps its sources; no stale package lists in the image, the Containerfile updates them
    _run(
        [
            _tool("tar", "tar"),
            "--numeric-owner",
            "--xattrs",
            "--exclude=./dev/*",
            "-C",
            str(tree),
            "-cf",
            str(tarball),
            ".",
        ],
        step="tar the root filesystem",
        log=log,
    )


def _record_base(tree: Path, record: Path) -> None:
    """What the base is: the signed Release file's date and every package's version."""
    dates = [
        line
        for release in sorted((tree / "var/lib/apt/lists").glob("*Release"))
        for line in release.read_text(errors="replace").splitlines()
        if line.startswith(("Origin:", "Suite:", "Date:"))
    ]
    packages = subprocess.run(
        ["dpkg-query", f"--admindir={tree / 'var/lib/dpkg'}", "-W", "-f", "${Package} ${Version}\n"],
        capture_output=True,
        text=True,
    ).stdout
    # InRelease and Release say the same: once is enough
    record.write_text("\n".join(dict.fromkeys(dates)) + "\n\n" + packages)


def rootfs_tarball(suite: str = DEFAULT_SUITE) -> Path:
    """The slimmed minbase tree of ``suite`` as a tarball, built by debootstrap once."""
    key = base_key(suite)
    directory = cache_dir() / f"base-{suite}-{key}"
    tarball = directory / "rootfs.tar"
    with _lock(f"base-{key}"):
        if tarball.is_file() and (directory / ".complete").is_file():
            return tarball
        debootstrap = _tool("debootstrap", "debootstrap")
        if not KEYRING.is_file():
            raise WorldSetupError(
                f"building the image: {KEYRING} is missing: debootstrap checks Debian's signatures "
                "with it (run 'make system-packages', which installs debian-archive-keyring)"
            )
        log = _log(f"base-{suite}")
        log.write_text("")
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        tree = directory / "rootfs"
        print(f"image: debootstrap --variant=minbase {suite} (a few minutes, once)", file=sys.stderr)
        # fail closed: an unsigned or wrongly signed Release file stops the build
        checked = [f"--keyring={KEYRING}", "--force-check-gpg"]
        _run(
            [debootstrap, "--variant=minbase", *checked, suite, str(tree), MIRROR],
            step="debootstrap",
            log=log,
        )
        _record_base(tree, directory / "base.txt")
        _slim_and_pack(tree, tarball, log)
        shutil.rmtree(tree)
        (directory / ".complete").write_text(key)
    return tarball


def base_image(suite: str = DEFAULT_SUITE) -> str:
    """``localhost/lockgate-base:<suite>-<key>`` in the project's buildah store (built once)."""
    key = base_key(suite)
    name = f"localhost/lockgate-base:{suite}-{key}"
    tarball = rootfs_tarball(suite)
    with _lock(f"base-image-{key}"):
        if _image_exists(name):
            return name
        log = _log(f"base-{suite}")
        container = _run(buildah("from", "scratch"), step="buildah from scratch", log=log).strip()
        try:
            _run(buildah("add", container, str(tarball), "/"), step="buildah add rootfs", log=log)
            _run(
                buildah(
                    "config",
                    "--env",
                    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "--cmd",
                    "/bin/bash",
                    "--label",
                    f"org.opencontainers.image.description=Debian {suite} minbase (debootstrap)",
                    container,
                ),
                step="buildah config base",
                log=log,
            )
            _run(buildah("commit", "--rm", container, name), step="buildah commit base", log=log)
        except WorldSetupError:
            subprocess.run(buildah("rm", container), capture_output=True)
            raise
    return name


# ---- 3. the wheelhouse and the image ----------------------------------------------------
def _wheel_inputs(checkout: Path) -> list[Path]:
    out = subprocess.run(
        ["git", "-C", str(checkout), "ls-files", "-co", "--exclude-standard", "--", *_WHEEL_INPUTS],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise WorldSetupError(
            f"building the image: 'git ls-files' in {checkout} failed: {out.stderr.strip()}"
        )
    return sorted(checkout / line for line in out.stdout.splitlines() if (checkout / line).is_file())


def _hash_files(paths: Sequence[Path], base: Path) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(str(path.relative_to(base)).encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def _platforms(glibc: tuple[int, int]) -> list[str]:
    """``--platform`` for every manylinux tag a glibc of that version runs (pip does not expand them)."""
    arch = platform.machine()
    major, minor = glibc
    tags = [f"manylinux_{major}_{m}_{arch}" for m in range(minor, 4, -1)]
    tags += [f"manylinux{alias}_{arch}" for alias in ("2014", "2010", "1")]
    return [arg for tag in tags for arg in ("--platform", tag)]


def _pip() -> list[str]:
    return [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def dependency_wheels(checkout: Path, python: str) -> Path:
    """Every dependency's wheel for CPython ``python`` from requirements.lock (each sha256 checked
    against it when downloaded and again whenever the cached directory is reused), and pip's;
    keyed on the lock."""
    lock = (checkout / LOCK.name).read_bytes()
    key = _digest(json.dumps({"lock": _digest(lock), "python": python, "glibc": GLIBC}).encode())
    directory = cache_dir() / f"deps-py{python}-{key}"
    with _lock(f"deps-{key}"):
        if (directory / ".complete").is_file():
            stray = _unlocked_wheels(directory, lock.decode())
            if not stray:
                return directory
            print(f"image: {directory}: {stray[0]} is not in {LOCK.name}: downloading again", file=sys.stderr)
        log = _log("wheels")
        log.write_text("")
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        tag = python.replace(".", "")
        target = [
            "--implementation",
            "cp",
            "--python-version",
            python,
            "--abi",
            f"cp{tag}",
            *_platforms(GLIBC),
        ]
        download = [*_pip(), "download", "-q", "--only-binary=:all:", *target, "-d", str(directory)]
        locked = ["--require-hashes", "--no-deps", "-r", str(checkout / LOCK.name)]
        _run([*download, *locked], step="pip download (the locked dependencies' wheels)", log=log)
        # pip installs the wheels in the build stage and is not left in the image
        _run([*download, "pip"], step="pip download (pip)", log=log)
        (directory / ".complete").write_text(key)
    return directory


def _unlocked_wheels(directory: Path, lock: str) -> list[str]:
    """The cached wheels whose sha256 the lock does not list for their name (pip's excepted: it
    installs the others in the build stage and is not left in the image)."""
    hashes = install.lock_hashes(lock)
    stray = []
    for wheel in sorted(directory.glob("*.whl")):
        name = install.normalize(wheel.name.split("-", 1)[0])
        if name != "pip" and install.sha256_file(wheel) not in hashes.get(name, frozenset()):
            stray.append(wheel.name)
    return stray


def own_wheel(checkout: Path) -> Path:
    """lockgate's wheel built from ``checkout``; keyed on its inputs."""
    key = _hash_files(_wheel_inputs(checkout), checkout)
    directory = cache_dir() / f"wheel-{key}"
    with _lock(f"wheel-{key}"):
        if (directory / ".complete").is_file():
            return next(directory.glob("lockgate-*.whl"))
        log = _log("wheels")
        log.write_text("")
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        _run(
            [*_pip(), "wheel", "-q", "--no-deps", "-w", str(directory), str(checkout)],
            step="pip wheel",
            log=log,
        )
        (directory / ".complete").write_text(key)
        return next(directory.glob("lockgate-*.whl"))


def image_key(checkout: Path, suite: str) -> str:
    inputs = {
        "sources": _hash_files(_wheel_inputs(checkout), checkout),
        "containerfile": _digest(CONTAINERFILE.read_bytes()),
        "kustomize": _digest(binaries.binary("kustomize").read_bytes()),
        "base": base_key(suite),
        "lock": _digest(LOCK.read_bytes()),
    }
    return _digest(json.dumps(inputs, sort_keys=True).encode())


_UNITS = {"B": 1, "kB": 1000, "KB": 1000, "MB": 1000**2, "GB": 1000**3}


def _size(name: str) -> int:
    """Uncompressed size in the store, from ``buildah images`` (which prints it rounded)."""
    out = subprocess.run(buildah("images", "--json", name), capture_output=True, text=True)
    entries = json.loads(out.stdout or "[]") if out.returncode == 0 else []
    if not entries:
        return 0
    number, _, unit = str(entries[0].get("size", "0 B")).partition(" ")
    return int(float(number) * _UNITS.get(unit, 1))


def build(checkout: Path = ROOT, suite: str = DEFAULT_SUITE) -> Image:
    """Build (or reuse) ``localhost/lockgate:<key>`` from ``checkout``."""
    if suite not in SUITES:
        raise WorldSetupError(f"building the image: suite {suite!r} is not one of {sorted(SUITES)}")
    key = image_key(checkout, suite)
    name = f"{NAME}:{key}"
    with _lock("build"):
        if _image_exists(name):
            return Image(name=name, key=key, size=_size(name), seconds=0.0)
        started = time.monotonic()
        base = base_image(suite)
        dependencies = dependency_wheels(checkout, SUITES[suite])
        wheel = own_wheel(checkout)
        log = _log("build")
        log.write_text("")
        with tempfile.TemporaryDirectory(prefix="lockgate-image-context-") as tmp:
            context = Path(tmp)
            shutil.copy(CONTAINERFILE, context / "Containerfile")
            shutil.copytree(dependencies, context / "wheels", ignore=shutil.ignore_patterns(".complete"))
            shutil.copy(wheel, context / "wheels" / wheel.name)
            shutil.copy(binaries.binary("kustomize"), context / "kustomize")
            print(f"image: buildah bud {name} (on {base})", file=sys.stderr)
            bud = [
                "bud",
                "--isolation",
                "chroot",
                "--network",
                "host",
                "--layers",
                "--pull=never",
                "--build-arg",
                f"BASE={base}",
                "-f",
                str(context / "Containerfile"),
            ]
            # the runtime stage (the apt layer) by name, so pruning keeps it as the cache
            runtime = f"{RUNTIME}:{_digest((base + CONTAINERFILE.read_text()).encode())}"
            _run(
                buildah(*bud, "--target", "runtime", "-t", runtime, str(context)), step="buildah bud", log=log
            )
            _run(buildah(*bud, "-t", name, str(context)), step="buildah bud", log=log)
        _prune()
        return Image(name=name, key=key, size=_size(name), seconds=time.monotonic() - started)


def _lineage(image_id: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """An image's layers and history steps: a build step's image is a prefix of its result's."""
    out = subprocess.run(buildah("inspect", "--type", "image", image_id), capture_output=True, text=True)
    if out.returncode != 0:
        return None
    oci = json.loads(out.stdout)["OCIv1"]
    layers = tuple(oci.get("rootfs", {}).get("diff_ids") or ())
    steps = tuple(str(h.get("created_by", "")) for h in oci.get("history") or ())
    return layers, steps


def _prune() -> None:
    """Bound the store (vfs copies every layer in full): the newest builds and their cache stay.

    Keeps the newest ``KEEP`` images of lockgate and of its runtime stage (a session still
    using an image built a moment earlier by another keeps it), the base, and the unnamed
    intermediate images the kept ones were built from (the layer cache of the next build);
    every other unnamed image is an older build's cache and goes.
    """
    out = subprocess.run(buildah("images", "--all", "--json"), capture_output=True, text=True)
    if out.returncode != 0:
        return
    entries = json.loads(out.stdout or "[]")
    kept: list[str] = []
    for repository in (f"{NAME}:", f"{RUNTIME}:"):
        tagged = sorted(
            (
                (int(e.get("created", 0)), n, str(e["id"]))
                for e in entries
                for n in e.get("names") or []
                if n.startswith(repository)
            ),
            reverse=True,
        )
        kept += [image_id for _, _, image_id in tagged[:KEEP]]
        for _, tag, _ in tagged[KEEP:]:
            subprocess.run(buildah("rmi", tag), capture_output=True)
    lineages = [lineage for lineage in map(_lineage, kept) if lineage is not None]
    for entry in entries:
        if entry.get("names"):
            continue
        mine = _lineage(str(entry["id"]))
        if mine is None:
            continue
        layers, steps = mine
        if any(k[0][: len(layers)] == layers and k[1][: len(steps)] == steps for k in lineages):
            continue
        subprocess.run(buildah("rmi", str(entry["id"])), capture_output=True)


# ---- 4. push ----------------------------------------------------------------------------
def push(image: Image, destination: str, *, tls_verify: bool = False) -> str:
    """Push to ``destination`` (``host:port/repo:tag``); returns the manifest digest."""
    log = _log("push")
    with tempfile.TemporaryDirectory(prefix="lockgate-image-push-") as tmp:
        digestfile = Path(tmp) / "digest"
        _run(
            buildah(
                "push",
                f"--tls-verify={'true' if tls_verify else 'false'}",
                "--format",
                "oci",
                "--digestfile",
                str(digestfile),
                image.name,
                f"docker://{destination}",
            ),
            step="buildah push",
            log=log,
        )
        return digestfile.read_text().strip()


def pushed_size(registry_url: str, repository: str, digest: str) -> int:
    """Compressed bytes of a pushed image: its config and layer blobs, from the manifest."""
    request = urllib.request.Request(
        f"{registry_url}/v2/{repository}/manifests/{digest}",
        headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        body = json.loads(response.read())
    return int(body["config"]["size"]) + sum(int(layer["size"]) for layer in body["layers"])


# ---- running it (the tests) -------------------------------------------------------------
@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


@contextmanager
def container(image: Image) -> Iterator[str]:
    """A working container of ``image`` (``buildah from``), removed afterwards."""
    log = _log("run")
    name = _run(buildah("from", "--pull=never", image.name), step="buildah from", log=log).strip()
    try:
        yield name
    finally:
        subprocess.run(buildah("rm", name), capture_output=True)


def run(
    name: str,
    argv: Sequence[str],
    *,
    user: str | None = None,
    volumes: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    tmpfs_tmp: bool = True,
    timeout: float = 300,
) -> Ran:
    """``buildah run`` in container ``name`` on the host network, /tmp a fresh tmpfs by default."""
    args = ["run", "--isolation", "chroot", "--network", "host"]
    if user is not None:
        args += ["--user", user]
    if tmpfs_tmp:
        args += ["--mount", "type=tmpfs,destination=/tmp,tmpfs-mode=1777"]
    for volume in volumes:
        args += ["--volume", volume]
    for key, value in (env or {}).items():
        args += ["--env", f"{key}={value}"]
    proc = subprocess.run(buildah(*args, name, "--", *argv), capture_output=True, text=True, timeout=timeout)
    return Ran(proc.returncode, proc.stdout, proc.stderr)


def config(image: Image) -> dict[str, object]:
    """The image's OCI config (``config`` section: Entrypoint, User, Env, WorkingDir)."""
    out = subprocess.run(buildah("inspect", "--type", "image", image.name), capture_output=True, text=True)
    if out.returncode != 0:
        raise WorldSetupError(f"buildah inspect {image.name} failed: {out.stderr.strip()}")
    section: dict[str, object] = json.loads(out.stdout)["OCIv1"]["config"]
    return section


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.world.image", description=__doc__.split("\n")[0])
    parser.add_argument("--suite", default=DEFAULT_SUITE, choices=sorted(SUITES))
    parser.add_argument("--push", metavar="HOST/REPO:TAG", help="push the image there afterwards")
    parser.add_argument("--tls-verify", action="store_true", help="require HTTPS for --push")
    options = parser.parse_args(argv)
    try:
        image = build(ROOT, options.suite)
        how = f"built in {image.seconds:.0f} s" if image.seconds else "cached"
        print(f"{image.name} ({image.size / 1e6:.1f} MB uncompressed, {how})")
        if options.push:
            digest = push(image, options.push, tls_verify=options.tls_verify)
            print(f"pushed {options.push}@{digest}")
    except WorldSetupError as exc:
        print(f"image: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    os.umask(0o022)
    sys.exit(main())
