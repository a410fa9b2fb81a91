"""``python -m action.github run``: the action's run step, the only part that does I/O.

Masks the secret inputs first, plans the invocation (failing on bad inputs before anything
runs), writes a PEM key given inline to a private temporary directory that is removed
whatever happens, runs ``lockgate`` as a child with the argv and environment of the plan
(stderr streamed to the log as it comes), then writes the outputs to ``$GITHUB_OUTPUT``,
the Job Summary to ``$GITHUB_STEP_SUMMARY`` and the annotations to stdout.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from action.github import commands, plan, report
from action.github.inputs import ENV_PREFIX, Inputs
from lockgate.errors import LockgateError


def _append(env: Mapping[str, str], name: str, text: str) -> None:
    target = env.get(name)
    if target:
        with open(target, "a", encoding="utf-8") as stream:
            stream.write(text)


def _tee(source: IO[str], sink: list[str]) -> None:
    for line in source:
        sink.append(line)
        sys.stderr.write(line)
        sys.stderr.flush()


@contextmanager
def _in_use() -> Iterator[None]:
    """Hold the venv's lock shared while lockgate runs, so the installer never prunes it."""
    venv = Path(sys.prefix)
    lock_file = venv.parent / f"{venv.name}.lock"
    if not lock_file.is_file():
        yield
        return
    with open(lock_file) as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        yield


def _execute(invocation: plan.Invocation, env: Mapping[str, str]) -> tuple[int, str, str]:
    # the inputs (credentials among them) stay with this process; the child gets the plan's
    child_env = {k: v for k, v in env.items() if not k.startswith(ENV_PREFIX)} | dict(invocation.env)
    proc = subprocess.Popen(
        # -P: a ``lockgate`` directory in the job's checkout must not shadow the real one
        [sys.executable, "-P", "-m", "lockgate", *invocation.argv],
        env=child_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    errors: list[str] = []
    reader = threading.Thread(target=_tee, args=(proc.stderr, errors), daemon=True)
    reader.start()
    out = proc.stdout.read()
    code = proc.wait()
    reader.join()
    return code, out, "".join(errors)


def _print(line: str) -> None:
    print(line, flush=True)


def run(env: Mapping[str, str]) -> int:
    """Run the step for the inputs in ``env``; the exit code of the step."""
    try:
        inputs = Inputs.from_env(env)
    except LockgateError as exc:
        _print(commands.annotation(report.Annotation("error", exc.message, title="lockgate action")))
        return int(exc.exit_code)
    for value in inputs.secrets():
        _print(commands.mask(value))
    command = inputs.text("command") or "lockgate"
    with tempfile.TemporaryDirectory(prefix="lockgate-action-", dir=env.get("RUNNER_TEMP") or None) as tmp:
        try:
            invocation = plan.plan(inputs, env, Path(tmp))
        except LockgateError as exc:
            _print(commands.annotation(report.Annotation("error", exc.message, title=f"lockgate {command}")))
            return int(exc.exit_code)
        if invocation.command == "install":
            return 0
        for path, text in invocation.files.items():
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as stream:
                stream.write(text)
        _print(f"lockgate {shlex.join(invocation.argv)}")
        with _in_use():
            code, out, err = _execute(invocation, env)
    return _finish(inputs, invocation, env, code, out, err)


def _finish(
    inputs: Inputs, invocation: plan.Invocation, env: Mapping[str, str], code: int, out: str, err: str
) -> int:
    if out:
        _print(out.rstrip())
    result = None
    if out.strip():
        try:
            result = json.loads(out)
        except json.JSONDecodeError:
            result = None
    failed = code not in invocation.ok_codes
    workspace = Path(env["GITHUB_WORKSPACE"]) if env.get("GITHUB_WORKSPACE") else None
    for item in report.annotate(invocation.command, err, result, failed=failed, workspace=workspace):
        _print(commands.annotation(item))
    if result is not None:
        _append(env, "GITHUB_OUTPUT", commands.output_file_text(report.outputs(invocation.command, result)))
        if inputs.flag("summary"):
            _append(env, "GITHUB_STEP_SUMMARY", report.summary(invocation.command, result))
    if failed and code == 1 and invocation.command == "diff":
        _print(
            commands.annotation(
                report.Annotation(
                    "error",
                    "the manifests differ from the published artifact (fail-on-change)",
                    title="lockgate diff",
                )
            )
        )
    return code if failed else 0
