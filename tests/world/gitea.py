"""A real Gitea: the forge of the forge tests (commit statuses, pull requests, webhooks), on loopback.

Built from the Go module proxy (``tests/world/pins.py``, SQLite through cgo, no web assets:
the REST API renders none). ``start_gitea`` writes an ``app.ini`` (SQLite, install locked,
no mail, no SSH server), migrates the database, creates an admin user and a token through
Gitea's own CLI (``gitea admin user create`` / ``generate-access-token``), then serves
HTTP. ``create_repo`` makes a repository through the REST API; Git pushes go over HTTP
with the token. Webhooks may call loopback (a ``serve`` of the test); Gitea's REST API has
no delivery history, so ``deliveries`` reads Gitea's own record of them, its ``hook_task``
table (what its web UI's "Recent Deliveries" shows). Nothing here imitates Gitea: every
answer a test reads is Gitea's.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from tests.world import binaries
from tests.world.errors import WorldSetupError, log_tail
from tests.world.process import Process, free_port, start, wait_until

USER = "lockgate"
PASSWORD = "lockgate-world-password-1"


@dataclass
class Gitea:
    url: str
    token: str
    process: Process
    #: Gitea's SQLite database (its records of webhook deliveries)
    database: Path
    user: str = USER

    @property
    def api(self) -> str:
        return f"{self.url}/api/v1"

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        auth = {"Authorization": f"token {self.token}"}
        response = requests.request(method, f"{self.api}{path}", headers=auth, timeout=30, **kwargs)
        if response.status_code >= 300:
            raise AssertionError(f"Gitea {method} {path}: HTTP {response.status_code} {response.text[:300]}")
        return response.json() if response.content else None

    def create_repo(self, name: str) -> str:
        """An empty repository of the admin user; its clone URL with the token (for pushes)."""
        self.call("POST", "/user/repos", json={"name": name, "private": False, "default_branch": "main"})
        return self.clone_url(name)

    def clone_url(self, name: str, *, with_token: bool = True) -> str:
        host = self.url.split("://", 1)[1]
        auth = f"{self.user}:{self.token}@" if with_token else ""
        return f"http://{auth}{host}/{self.user}/{name}.git"

    def deliveries(self, hook_id: int) -> list[dict[str, Any]]:
        """The finished deliveries of a webhook, oldest first, as Gitea recorded them: each
        its ``event``, ``succeeded``, ``request`` (url, headers, body) and ``response``
        (status, headers, body)."""
        with contextlib.closing(sqlite3.connect(f"file:{self.database}?mode=ro", uri=True)) as db:
            rows = db.execute(
                "SELECT event_type, is_succeed, request_content, response_content FROM hook_task"
                " WHERE hook_id = ? AND delivered > 0 AND response_content != '' ORDER BY id",
                (hook_id,),
            ).fetchall()
        return [
            {"event": event, "succeeded": bool(ok), "request": json.loads(req), "response": json.loads(resp)}
            for event, ok, req, resp in rows
        ]

    def stop(self) -> None:
        self.process.stop()


def _app_ini(work: Path, port: int, static: Path) -> str:
    return f"""APP_NAME = lockgate world
RUN_MODE = prod
; CI containers and this machine run tests as root; Gitea refuses root without this
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true
WORK_PATH = {work}

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = {port}
ROOT_URL = http://127.0.0.1:{port}/
DISABLE_SSH = true
OFFLINE_MODE = true
APP_DATA_PATH = {work}/data
LFS_START_SERVER = false
; the module's own options/ (locales, the cron tasks' names) and templates/: no bindata build
STATIC_ROOT_PATH = {static}

[database]
DB_TYPE = sqlite3
PATH = {work}/data/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = {work}/repositories
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
SECRET_KEY = {secrets.token_hex(16)}
INTERNAL_TOKEN = {secrets.token_hex(32)}
PASSWORD_HASH_ALGO = pbkdf2_hi

[oauth2]
ENABLED = false

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false

[mailer]
ENABLED = false

[indexer]
REPO_INDEXER_ENABLED = false

[cron]
ENABLED = false

[webhook]
; the webhook tests' receiver is a serve on loopback, which Gitea refuses by default (external only)
ALLOWED_HOST_LIST = loopback

[queue]
; in memory: the default LevelDB queues poll with a backoff of up to 2 s, and a push goes
; through two of them (push_update, webhook_sender) before its webhook is delivered
TYPE = channel

[actions]
ENABLED = false

[packages]
ENABLED = false

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = {work}/log
"""


def _cli(gitea: Path, config: Path, work: Path, *args: str) -> str:
    env = {"GITEA_WORK_DIR": str(work), "HOME": str(work), "PATH": "/usr/bin:/bin:/usr/local/bin"}
    proc = subprocess.run(
        [str(gitea), "--config", str(config), "--work-path", str(work), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    if proc.returncode != 0:
        raise WorldSetupError(f"gitea {' '.join(args[:3])} failed: {(proc.stderr + proc.stdout)[-2000:]}")
    return proc.stdout.strip()


def start_gitea(workdir: Path) -> Gitea:
    gitea = binaries.binary("gitea")
    work = workdir / "gitea"
    (work / "custom" / "conf").mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = work / "custom" / "conf" / "app.ini"
    config.write_text(_app_ini(work, port, binaries.module_dir("gitea")))
    _cli(gitea, config, work, "migrate")
    _cli(
        gitea, config, work, "admin", "user", "create", "--admin", "--username", USER,
        "--password", PASSWORD, "--email", f"{USER}@example.com", "--must-change-password=false",
    )  # fmt: skip
    token = _cli(
        gitea, config, work, "admin", "user", "generate-access-token", "--username", USER,
        "--token-name", "world", "--scopes", "all", "--raw",
    ).splitlines()[-1].strip()  # fmt: skip
    process = start(
        "gitea",
        [gitea, "web", "--config", config, "--work-path", work],
        log=workdir / "gitea.log",
        env={"GITEA_WORK_DIR": str(work), "HOME": str(work)},
    )
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        return requests.get(f"{url}/api/v1/version", timeout=2).status_code == 200

    wait_until(process, ready, timeout=60, what="serving its API")
    if len(token) < 20:
        raise WorldSetupError(f"gitea gave no access token; log:\n{log_tail(workdir / 'gitea.log')}")
    return Gitea(url=url, token=token, process=process, database=work / "data" / "gitea.db")
