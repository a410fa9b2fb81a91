"""Build and cache the world's third-party binaries from the Go module proxy.

Each component is built once into ``$LOCKGATE_WORLD_CACHE/bin/<name>-<version>/`` (default
``~/.cache/lockgate``) and reused until its pin changes. A build takes many minutes on
two cores, so it prints progress. Modules that are not meant to be consumed as modules
(``k8s.io/kubernetes``, etcd's server) are built through a small wrapper go.mod whose
``replace`` directives point the upstream relative replaces at published versions.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from tests.world.errors import WorldSetupError, log_tail
from tests.world.pins import BENCH_COMPONENTS, COMPONENTS, MODULES, GoComponent

_REPLACE_LINE = re.compile(r"^\s*(\S+)(?:\s+(\S+))?\s+=>\s+(\S+)(?:\s+(\S+))?\s*$")


def cache_root() -> Path:
    return Path(os.environ.get("LOCKGATE_WORLD_CACHE", Path.home() / ".cache" / "lockgate"))


def _spec_hash(component: GoComponent) -> str:
    spec = json.dumps(
        {
            "module": component.module,
            "version": component.version,
            "programs": component.programs,
            "ldflags": component.ldflags,
            "staging": component.staging_version,
            "skip": component.skip_replaces,
            "recipe": 2,
        }
        # only components that have an overlay carry it in their key, so adding the field
        # did not invalidate every cached build
        | ({"overlay": component.overlay} if component.overlay else {})
        | ({"substitutes": component.substitutes} if component.substitutes else {})
        | ({"tags": component.tags} if component.tags else {})
        | ({"cgo": True} if component.cgo else {})
        | ({"sources": component.sources} if component.sources else {}),
        sort_keys=True,
    )
    return hashlib.sha256(spec.encode()).hexdigest()[:16]


def bin_dir(component: GoComponent) -> Path:
    return cache_root() / "bin" / component.key


def _is_built(component: GoComponent) -> bool:
    stamp = bin_dir(component) / ".complete"
    return stamp.is_file() and stamp.read_text().strip() == _spec_hash(component)


def binary(program: str) -> Path:
    """Path of a built program, building its component first if needed."""
    for component in COMPONENTS.values():
        if program in component.programs:
            ensure(component.name)
            return bin_dir(component) / program
    raise KeyError(f"no pinned component provides {program!r}")


def module_dir(name: str) -> Path:
    """The module cache directory of a component's module, or of a data-only module
    (``pins.MODULES``), for data files such as kwok's stages or Flux's CRDs."""
    component = COMPONENTS.get(name) or MODULES[name]
    cache_root().mkdir(parents=True, exist_ok=True)
    go = shutil.which("go")
    if go is None:
        raise WorldSetupError("the 'go' command is not on PATH; install Go >= 1.26")
    out = subprocess.run(
        [go, "mod", "download", "-json", f"{component.module}@{component.version}"],
        capture_output=True,
        text=True,
        env=_go_env(),
        cwd=cache_root(),
    )
    try:
        info = json.loads(out.stdout)
    except json.JSONDecodeError as exc:
        raise WorldSetupError(f"go mod download {component.module}: {out.stderr.strip()}") from exc
    if out.returncode != 0 or "Dir" not in info:
        reason = info.get("Error") or out.stderr.strip()
        raise WorldSetupError(f"go mod download {component.module}: {reason}")
    return Path(info["Dir"])


#: builds at once (``LOCKGATE_BUILD_JOBS``): each ``go build`` uses every core already, so a
#: second one mostly overlaps the first's downloads and single-threaded link with compiling
BUILD_JOBS = 2


def _ensure_one(component: GoComponent) -> Path:
    if not _is_built(component):
        with _lock(component):
            if not _is_built(component):
                _build(component)
    return bin_dir(component)


def ensure(*names: str) -> dict[str, Path]:
    """Build the named components unless cached, ``BUILD_JOBS`` at a time; return their bin dirs.

    With no names: every component the world needs (not the bench-only peers, which
    ``make bench`` names). A failed build fails the call once the others have finished.
    """
    default = tuple(n for n, c in COMPONENTS.items() if not c.bench_only)
    selected = [COMPONENTS[n] for n in (names or default)]
    missing = [c for c in selected if not _is_built(c)]
    jobs = max(1, int(os.environ.get("LOCKGATE_BUILD_JOBS", BUILD_JOBS)))
    if len(missing) > 1 and jobs > 1:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(_ensure_one, c) for c in missing]
        for future in futures:
            error = future.exception()
            if error is not None:
                raise error
    return {component.name: _ensure_one(component) for component in selected}


@contextmanager
def _lock(component: GoComponent) -> Iterator[None]:
    lock_dir = cache_root() / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f"{component.key}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _go_env(*, cgo: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOFLAGS", "-buildvcs=false")
    env["CGO_ENABLED"] = "1" if cgo else "0"
    env["GOTOOLCHAIN"] = env.get("GOTOOLCHAIN", "local")
    return env


def _run_go(args: list[str], *, cwd: Path, log: Path, step: str, label: str, cgo: bool = False) -> None:
    """Run a go command, logging to ``log`` and printing a heartbeat while it runs."""
    go = shutil.which("go")
    if go is None:
        raise WorldSetupError(f"{step}: the 'go' command is not on PATH; install Go >= 1.26")
    start = time.monotonic()
    with open(log, "a") as out:
        out.write(f"\n$ go {' '.join(args)}\n")
        out.flush()
        proc = subprocess.Popen(
            [go, *args], cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=_go_env(cgo=cgo)
        )
        done = threading.Event()

        def heartbeat() -> None:
            while not done.wait(20):
                lines = log.read_text(errors="replace").count("\n")
                print(
                    f"  ... {label}: {time.monotonic() - start:4.0f}s, {lines} log lines ({log})",
                    file=sys.stderr,
                    flush=True,
                )

        ticker = threading.Thread(target=heartbeat, daemon=True)
        ticker.start()
        rc = proc.wait()
        done.set()
    if rc != 0:
        raise WorldSetupError(f"{step} failed (exit {rc}); last lines of {log}:\n{log_tail(log)}")


def _parse_replaces(gomod: str) -> list[tuple[str, str | None, str, str | None]]:
    replaces: list[tuple[str, str | None, str, str | None]] = []
    in_block = False
    for raw in gomod.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if in_block:
            if line == ")":
                in_block = False
                continue
            body = line
        elif line.startswith("replace"):
            rest = line[len("replace") :].strip()
            if rest == "(":
                in_block = True
                continue
            body = rest
        else:
            continue
        m = _REPLACE_LINE.match(body)
        if m:
            replaces.append((m.group(1), m.group(2), m.group(3), m.group(4)))
    return replaces


def _wrapper_gomod(component: GoComponent, upstream_gomod: str) -> str:
    lines = [
        f"module lockgate.world/{component.name}",
        "",
        "go 1.26",
        "",
        f"require {component.module} {component.version}",
        "",
    ]
    for old, old_ver, new, new_ver in _parse_replaces(upstream_gomod):
        if old in component.skip_replaces:
            continue
        lhs = f"{old} {old_ver}" if old_ver else old
        if new.startswith(("./", "../")):
            if component.staging_version is None:
                continue
            lines.append(f"replace {lhs} => {old} {component.staging_version}")
        else:
            lines.append(f"replace {lhs} => {new} {new_ver or ''}".rstrip())
    for module, wanted, served in component.substitutes:
        lines.append(f"replace {module} {wanted} => {module} {served}")
    return "\n".join(lines) + "\n"


def _build(component: GoComponent) -> None:
    started = time.monotonic()
    src = cache_root() / "src" / component.key
    logs = cache_root() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"build-{component.key}.log"
    log.write_text("")
    print(
        f"world: building {component.name} {component.version} from the Go module proxy "
        f"(first time only; log {log})",
        file=sys.stderr,
        flush=True,
    )
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    (src / "go.mod").write_text(f"module lockgate.world/{component.name}\n\ngo 1.26\n")
    step = f"downloading {component.module}@{component.version}"
    _run_go(
        ["mod", "download", "-json", f"{component.module}@{component.version}"],
        cwd=src,
        log=log,
        step=step,
        label=step,
    )
    info = _last_json(log)
    upstream = Path(str(info.get("GoMod", ""))).read_text() if info.get("GoMod") else ""
    gomod = _wrapper_gomod(component, upstream)
    if component.overlay:
        # Go refuses to overlay files in the module cache: build from a patched local copy
        local = src / "upstream"
        shutil.copytree(Path(str(info["Dir"])), local)
        for path in [local, *local.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        for relative, source in component.overlay:
            (local / relative).write_text(source)
        gomod += f"replace {component.module} => ./upstream\n"
    (src / "go.mod").write_text(gomod)
    for relative, source in component.sources:
        (src / relative).parent.mkdir(parents=True, exist_ok=True)
        (src / relative).write_text(source)
    upstream_programs = [pkg for pkg in component.programs.values() if not pkg.startswith("./")]
    if upstream_programs:
        imports = "\n".join(f'\t_ "{pkg}"' for pkg in upstream_programs)
        (src / "tools.go").write_text(f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n")
    step = f"resolving dependencies of {component.module}@{component.version}"
    _run_go(["mod", "tidy"], cwd=src, log=log, step=step, label=step)
    staging = bin_dir(component).with_name(component.key + ".partial")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    ldflags = " ".join(("-s", "-w", *component.ldflags))
    tags = [f"-tags={','.join(component.tags)}"] if component.tags else []

    for index, (program, package) in enumerate(component.programs.items(), start=1):
        label = f"{component.name} {component.version}: {program} ({index}/{len(component.programs)})"
        _run_go(
            ["build", "-v", "-trimpath", *tags, f"-ldflags={ldflags}", "-o", str(staging / program), package],
            cwd=src,
            log=log,
            step=f"building {program} {component.version}",
            label=label,
            cgo=component.cgo,
        )
    (staging / ".complete").write_text(_spec_hash(component) + "\n")
    final = bin_dir(component)
    if final.exists():
        shutil.rmtree(final)
    staging.rename(final)
    print(
        f"world: built {component.name} {component.version} in {time.monotonic() - started:.0f}s",
        file=sys.stderr,
        flush=True,
    )


def _last_json(log: Path) -> dict[str, object]:
    text = log.read_text()
    start = text.rfind("\n{")
    if start < 0:
        raise WorldSetupError(f"go mod download printed no module information; see {log}")
    end = text.find("\n}", start)
    value = json.loads(text[start + 1 : end + 2])
    if not isinstance(value, dict):
        raise WorldSetupError(f"unexpected output from go mod download; see {log}")
    if value.get("Error"):
        raise WorldSetupError(f"go mod download: {value['Error']}")
    return value


def main(argv: list[str]) -> int:
    """``python -m tests.world.binaries [NAME...]``; ``--bench``: the benchmarks' peers only."""
    names = list(BENCH_COMPONENTS) if argv == ["--bench"] else argv
    try:
        dirs = ensure(*names)
    except WorldSetupError as exc:
        print(f"world: {exc}", file=sys.stderr)
        return 1
    for name, path in dirs.items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
