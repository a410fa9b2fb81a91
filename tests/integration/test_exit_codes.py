"""The README's exit-code table, walked against the world: one cause, one code, in every command.

The table is read from README.md ("### Exit codes"), so a row added there without a cause
here fails, and so does a cause whose code is not in the table. For each row the cause is
provoked in every command that can meet it: an unreachable registry (a closed port) is 9
in ``push`` as in ``reconcile`` and ``verify``; a registry that wants credentials is 3; a
missing verification policy is 2 in ``verify`` as in ``reconcile`` (flags or a Sync); a
signature by someone else is 4; a tag that does not exist is 7; an API server that does not
answer (a kubeconfig pointing at a closed port) is 11 in every cluster command; a sync whose
Lease another runner holds stops ``rollback`` and ``delete`` with 12. ``copy``, ``fleet`` and
``images`` meet the same causes with the same codes, and ``verify --attestation`` against an
unreachable registry is 9 as ``verify`` is; every command of the tree has a cause here
(``PENDING`` names the ones being built). An interrupted command (Ctrl-C, SIGTERM) exits 12:
``test_reconcile_interrupted.py`` and ``test_interrupted_writes.py`` send the signals. Every run
is the real CLI in a child process; each failing one must print one ``error:`` line and no
traceback.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.integration.reconcile_support import configmap, deployment, dump, namespace
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

ROOT = Path(__file__).resolve().parents[2]
LOCKGATE = [sys.executable, "-m", "lockgate"]
PASSWORD = "exit-codes"
#: rows no command can reach today, and why (each still has to be in the table)
UNREACHABLE = {
    69: "only a planned command without an implementation exits 69, and every planned command has "
    "landed (tests/unit/test_cli.py runs the stub)",
}


#: commands being built now, whose causes join ``causes`` when they land: until then they may
#: be missing here; once one is in ``lockgate.cli.COMMANDS``,
#: ``test_every_command_meets_the_table`` asks for its cases
PENDING: dict[str, str] = {}
#: an OCIRepository and the Kustomization that applies it, as a fleet repository holds them
FLUX_PAIR = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: app, namespace: flux-system}
spec:
  interval: 5m
  url: oci://registry.example/app
  ref: {tag: v1}
  verify: {provider: cosign, secretRef: {name: cosign-pub}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: flux-system}
spec:
  interval: 10m
  sourceRef: {kind: OCIRepository, name: app}
  path: ./
  prune: true
"""


def table() -> dict[int, str]:
    """``code -> meaning`` from the README's exit-code table."""
    text = (ROOT / "README.md").read_text()
    section = text.split("### Exit codes", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\|\s*(\d+)\s*\|\s*(.+?)\s*\|$", section, flags=re.M)
    assert rows, "README.md has no exit-code table under '### Exit codes'"
    return {int(code): meaning for code, meaning in rows}


@dataclass(frozen=True)
class Case:
    """One command line and the cause it meets."""

    cause: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class World:
    """What the causes need, made once: artifacts, keys, trees, configs, kubeconfigs."""

    registry: Registry
    auth: Registry
    cluster: Cluster
    tmp: Path
    name: str
    env: dict[str, str] = field(default_factory=dict)

    def path(self, name: str) -> str:
        return str(self.tmp / name)

    def oci(self, suffix: str) -> str:
        return self.registry.oci(f"{self.name}/{suffix}")


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LOCKGATE, *argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=180)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _sync(name: str, url: str, runner: str, **spec: object) -> dict[str, object]:
    body = {"url": url, "interval": "5m", "namespace": runner, **spec}
    return {"apiVersion": "lockgate.dev/v1alpha1", "kind": "Sync", "metadata": {"name": name}, "spec": body}


@pytest.fixture(scope="module")
def world(
    registry: Registry, auth_registry: Registry, cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("exit-codes")
    name = f"exit-codes-{uuid.uuid4().hex[:6]}"
    (tmp / "docker").mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "SIGSTORE_ID_TOKEN")},
        "DOCKER_CONFIG": str(tmp / "docker"),  # no credentials but the ones a case passes
        "LOCKGATE_PASSWORD": PASSWORD,
    }
    w = World(registry, auth_registry, cluster, tmp, name, env)
    runner = f"{name}-r"
    cm = dump(configmap("c", name, {"k": "v"}))
    _write(
        tmp,
        {
            "deploy/cm.yaml": dump(namespace(name), configmap("c", name, {"k": "v"})),
            "changed/cm.yaml": dump(namespace(name), configmap("c", name, {"k": "changed"})),
            "broken/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n",
            "refused/svc.yaml": dump(
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": "refused", "namespace": name},
                    "spec": {"ports": [{"port": 99999}]},
                },
            ),
            # never healthy, with or without the controllers and kwok nodes: no node has the label
            "unhealthy/app.yaml": dump(deployment("web", name, node_selector={"no-such-node": "true"})),
            "each/a/cm.yaml": cm,
            # a repository name past the registry's 255 characters: refused at upload, after a/
            f"each/{'b' * 250}/cm.yaml": cm,
            "images/images.yaml": (
                "apiVersion: lockgate.dev/v1alpha1\nkind: ImageAutomation\n"
                "metadata: {name: web, namespace: apps}\n"
                "spec:\n  git: {author: {email: bot@example.com}}\n  update: {path: .}\n  images:\n"
                f"    - {{name: app, image: '{registry.host}/{name}/app', semver: '*'}}\n"
                "    - {name: gone, image: '127.0.0.1:9/gone', semver: '*'}\n"
            ),
            "images/app.yaml": f'image: {registry.host}/{name}/app:v1 # {{"$imagepolicy": "apps:app"}}\n',
            "dead-images/images.yaml": (
                "apiVersion: lockgate.dev/v1alpha1\nkind: ImageAutomation\n"
                "metadata: {name: web, namespace: apps}\n"
                "spec:\n  git: {author: {email: bot@example.com}}\n  update: {path: .}\n"
                "  images:\n    - {name: gone, image: '127.0.0.1:9/gone', semver: '*'}\n"
            ),
            "ok-images/images.yaml": (
                "apiVersion: lockgate.dev/v1alpha1\nkind: ImageAutomation\n"
                "metadata: {name: web, namespace: apps}\n"
                "spec:\n  git: {author: {email: bot@example.com}}\n  update: {path: .}\n"
                f"  images:\n    - {{name: app, image: '{registry.host}/{name}/app', alphabetical: asc}}\n"
            ),
            "none-images/images.yaml": (
                "apiVersion: lockgate.dev/v1alpha1\nkind: ImageAutomation\n"
                "metadata: {name: web, namespace: apps}\n"
                "spec:\n  git: {author: {email: bot@example.com}}\n  update: {path: .}\n"
                f"  images:\n    - {{name: app, image: '{registry.host}/{name}/app', semver: '>=99'}}\n"
            ),
            "auth-images/images.yaml": (
                "apiVersion: lockgate.dev/v1alpha1\nkind: ImageAutomation\n"
                "metadata: {name: web, namespace: apps}\n"
                "spec:\n  git: {author: {email: bot@example.com}}\n  update: {path: .}\n"
                f"  images:\n    - {{name: app, image: '{auth_registry.host}/{name}/app', semver: '*'}}\n"
            ),
            "bad-images/images.yaml": (
                "apiVersion: lockgate.dev/v1alpha1\nkind: ImageAutomation\n"
                "metadata: {name: web, namespace: apps}\n"
                "spec:\n  git: {author: {email: bot@example.com}}\n  update: {path: .}\n"
                f"  images:\n    - {{name: app, image: '{registry.host}/{name}/app', semvr: '*'}}\n"
            ),
            "predicate.json": '{"approvedBy": "exit codes"}\n',
            # a Flux installation's files, for lockgate import
            "flux-ok/flux.yaml": FLUX_PAIR,
            "flux-unsigned/flux.yaml": FLUX_PAIR.replace(
                "  verify: {provider: cosign, secretRef: {name: cosign-pub}}\n", ""
            ),
        },
    )
    for prefix in ("cosign", "other"):
        made = _run(["keygen", "--output-key-prefix", str(tmp / prefix)], env, tmp)
        assert made.returncode == 0, made.stderr
    pushes = [
        ["push", "deploy", w.oci("app:v1"), "--sign", "key", "--key", "cosign.key"],
        ["push", "deploy", w.oci("unsigned:v1")],
        ["push", "broken", w.oci("broken:v1"), "--no-validate"],
        ["push", "refused", w.oci("refused:v1")],
        ["push", "unhealthy", w.oci("unhealthy:v1")],
    ]
    for argv in pushes:
        pushed = _run(argv, env, tmp)
        assert pushed.returncode == 0, (argv, pushed.stderr)
    creds = f"{auth_registry.username}:{auth_registry.password}"
    pushed = _run(["push", "deploy", auth_registry.oci(f"{name}/app:v1"), "--creds", creds], env, tmp)
    assert pushed.returncode == 0, pushed.stderr
    # a kubeconfig whose API server does not answer
    dead = yaml.safe_load(cluster.kubeconfig.read_text())
    for entry in dead["clusters"]:
        entry["cluster"]["server"] = "https://127.0.0.1:9"
    (tmp / "dead-kubeconfig").write_text(yaml.safe_dump(dead))
    skip = {"insecureSkip": True}
    configs = {
        "unverified.yaml": [_sync(f"{name}-u", w.oci("app:v1"), runner)],
        "ok.yaml": [_sync(f"{name}-ok", w.oci("app:v1"), runner, verify=skip)],
        "held.yaml": [_sync(f"{name}-held", w.oci("app:v1"), runner, verify=skip)],
        # one cluster's runner configuration each, as ``lockgate preview --cluster`` reads them
        "preview-ok.yaml": [_sync("web", w.oci("app:v1"), runner, verify={"key": "cosign.pub"})],
        "preview-missing.yaml": [_sync("web", w.oci("app:no-such-tag"), runner, verify=skip)],
        "preview-auth.yaml": [_sync("web", auth_registry.oci(f"{name}/app:v1"), runner, verify=skip)],
        "preview-dead.yaml": [_sync("web", "oci://127.0.0.1:9/app:v1", runner, verify=skip)],
    }
    for file, docs in configs.items():
        (tmp / file).write_text(yaml.safe_dump_all(docs))
    # another runner holds the Lease of sync NAME-held, for an hour
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": f"lockgate-{name}-held", "namespace": runner},
        "spec": {"holderIdentity": "another-runner", "leaseDurationSeconds": 3600, "renewTime": now},
    }
    cluster.kubectl("create", "namespace", runner)
    cluster.kubectl("create", "namespace", name)  # for the objects of the refused and unhealthy artifacts
    cluster.kubectl("apply", "-f", "-", input=dump(lease))
    yield w


def causes(w: World) -> dict[int, list[Case]]:
    """Every row's cause, in each command that can meet it."""
    dead = "oci://127.0.0.1:9/app"
    digest = "sha256:" + "0" * 64
    ok = w.oci("app:v1")
    missing = w.oci("app:no-such-tag")
    auth = w.auth.oci(f"{w.name}/app:v1")
    kube = f"--kubeconfig={w.cluster.kubeconfig}"
    dead_kube = f"--kubeconfig={w.path('dead-kubeconfig')}"
    runner = f"{w.name}-r"
    key, other = "--key=cosign.pub", "--key=other.pub"
    return {
        0: [
            Case("version", ["--version"]),
            Case("verified", ["verify", ok, key]),
            Case("no differences", ["diff", "deploy", ok]),
            Case("copied", ["copy", ok, f"oci-layout://{w.path('layout-0')}"]),
            Case("nothing attested yet", ["fleet", w.oci("app"), key]),
            Case("every policy resolved", ["images", "scan", "--path", "ok-images"]),
            Case(
                "no sync changes",
                ["preview", "deploy", "--cluster", "preview-ok.yaml", "--url", w.oci("app")],
            ),
        ],
        1: [
            Case("differences found", ["diff", "changed", ok]),
            # a tag that is not there yet is nothing running: the first release, every object new
            Case(
                "nothing runs yet",
                ["preview", "deploy", "--cluster", "preview-missing.yaml", "--url", w.oci("app")],
            ),
            Case(
                "a sync changes",
                ["preview", "changed", "--cluster", "preview-ok.yaml", "--url", w.oci("app")],
            ),
        ],
        2: [
            Case("no verification policy", ["verify", ok]),
            Case("no --cluster", ["preview", "deploy", "--url", w.oci("app")]),
            Case("no verification policy", ["reconcile", ok, "--name", w.name, kube]),
            Case("no verification policy", ["reconcile", "--config", "unverified.yaml", kube]),
            Case("no verification policy", ["rollback", f"{w.name}-u", "--config", "unverified.yaml", kube]),
            Case("bad flag value", ["status", "-o", "xml", kube]),
            Case("a format as the output path", ["pull", ok, "-O", "json"]),
            Case("missing arguments", ["push"]),
            Case("a tag and --tags", ["copy", ok, w.oci("copied"), "--tags", "v1"]),
            Case("no attestation policy", ["fleet", w.oci("app")]),
            Case("invalid image configuration", ["images", "scan", "--path", "bad-images"]),
            Case("an invalid Runner file", ["serve", "--config", "broken/cm.yaml", kube]),
            Case("no Runner file", ["receivers", "--config", "no-such.yaml"]),
            Case("the key exists", ["keygen", "--output-key-prefix", "cosign"]),
            Case(
                "a report under --strict",
                ["import", "--from-files", "flux-ok", "-O", "imp-2.yaml", "--strict"],
            ),
        ],
        3: [
            Case("no credentials", ["push", "deploy", auth]),
            Case(
                "no credentials",
                ["preview", "deploy", "--cluster", "preview-auth.yaml", "--url", w.auth.oci(f"{w.name}/app")],
            ),
            Case("no credentials", ["pull", auth, "-O", "pulled-auth"]),
            Case("no credentials", ["inspect", auth]),
            Case("no credentials", ["list", w.auth.oci(f"{w.name}/app")]),
            Case("no credentials", ["tag", auth, "v2"]),
            Case("no credentials", ["diff", "deploy", auth]),
            Case("no credentials", ["verify", auth, key]),
            Case("no credentials", ["sign", auth.replace(":v1", f"@{digest}"), "--key", "cosign.key"]),
            Case(
                "no credentials",
                ["reconcile", auth, "--name", w.name, key.replace("key", "verify-key"), kube],
            ),
            Case("no credentials", ["reconcile", auth, "--name", w.name, "--insecure-skip-verify", kube]),
            Case("no credentials", ["copy", auth, f"oci-layout://{w.path('layout-3')}"]),
            Case("no credentials", ["fleet", w.auth.oci(f"{w.name}/app"), key]),
            Case("no credentials", ["images", "scan", "--path", "auth-images"]),
        ],
        4: [
            Case("an unsigned Flux source", ["import", "--from-files", "flux-unsigned", "-O", "imp-4.yaml"]),
            Case("signed by someone else", ["verify", ok, other]),
            Case("not signed", ["verify", w.oci("unsigned:v1"), key]),
            Case(
                "signed by someone else", ["reconcile", ok, "--name", w.name, "--verify-key=other.pub", kube]
            ),
            Case("attestation missing", ["verify", ok, key, "--attestation", "https://example.com/qa/v1"]),
        ],
        5: [
            Case(
                "refused by the API server",
                [
                    "reconcile",
                    w.oci("refused:v1"),
                    "--name",
                    f"{w.name}-5",
                    "-n",
                    runner,
                    "--insecure-skip-verify",
                    kube,
                ],
            )
        ],
        6: [
            Case(
                "never healthy",
                [
                    "reconcile",
                    w.oci("unhealthy:v1"),
                    "--name",
                    f"{w.name}-6",
                    "-n",
                    runner,
                    "--insecure-skip-verify",
                    "--wait",
                    "--timeout",
                    "3s",
                    kube,
                ],
            )
        ],
        7: [
            Case("no such tag", ["pull", missing, "-O", "pulled-7"]),
            Case("no such tag", ["inspect", missing]),
            Case("no such tag", ["tag", missing, "v2"]),
            Case("no such tag", ["diff", "deploy", missing]),
            Case("no such tag", ["verify", missing, key]),
            Case("no such digest", ["sign", w.oci(f"app@{digest}"), "--key", "cosign.key"]),
            Case("no such tag", ["reconcile", missing, "--name", w.name, "--insecure-skip-verify", kube]),
            Case(
                "no tag in the range",
                [
                    "reconcile",
                    w.oci("app"),
                    "--semver",
                    ">=9",
                    "--name",
                    w.name,
                    "--insecure-skip-verify",
                    kube,
                ],
            ),
            Case("no such tag", ["copy", missing, f"oci-layout://{w.path('layout-7')}"]),
            Case("no tag in the range", ["copy", w.oci("app"), w.oci("copied"), "--semver", ">=9"]),
            Case("no such tag", ["fleet", missing, key]),
            Case("no tag in the range", ["images", "scan", "--path", "none-images"]),
        ],
        8: [
            Case("broken YAML", ["build", "broken"]),
            Case("broken YAML", ["preview", "broken", "--cluster", "preview-ok.yaml", "--url", w.oci("app")]),
            Case("broken YAML", ["push", "broken", w.oci("broken:v2")]),
            Case("broken YAML", ["diff", "broken", ok]),
            Case(
                "broken YAML in the artifact",
                ["reconcile", w.oci("broken:v1"), "--name", w.name, "--insecure-skip-verify", kube],
            ),
        ],
        9: [
            Case("unreachable registry", ["push", "deploy", f"{dead}:v1"]),
            Case(
                "unreachable registry", ["preview", "deploy", "--cluster", "preview-dead.yaml", "--url", dead]
            ),
            Case("unreachable registry", ["pull", f"{dead}:v1", "-O", "pulled-9"]),
            Case("unreachable registry", ["inspect", f"{dead}:v1"]),
            Case("unreachable registry", ["list", dead]),
            Case("unreachable registry", ["tag", f"{dead}:v1", "v2"]),
            Case("unreachable registry", ["diff", "deploy", f"{dead}:v1"]),
            Case("unreachable registry", ["verify", f"{dead}:v1", key]),
            Case("unreachable registry", ["sign", f"{dead}@{digest}", "--key", "cosign.key"]),
            Case(
                "unreachable registry",
                [
                    "attest",
                    f"{dead}@{digest}",
                    "--key",
                    "cosign.key",
                    "--predicate-type",
                    "https://example.com/qa/v1",
                    "--predicate",
                    "predicate.json",
                ],
            ),
            Case(
                "unreachable registry",
                ["reconcile", f"{dead}:v1", "--name", w.name, "--verify-key=cosign.pub", kube],
            ),
            Case(
                "unreachable registry",
                ["reconcile", f"{dead}:v1", "--name", w.name, "--insecure-skip-verify", kube],
            ),
            Case("unreachable registry", ["images", "scan", "--path", "dead-images"]),
            Case("unreachable registry", ["copy", f"{dead}:v1", f"oci-layout://{w.path('layout-9')}"]),
            Case("unreachable registry", ["copy", ok, f"{dead}:v1"]),
            Case("unreachable registry", ["fleet", dead, key]),
            Case(
                "unreachable registry", ["verify", f"{dead}:v1", key, "--attestation", "https://x.dev/qa/v1"]
            ),
        ],
        10: [
            Case(
                "a report of what import cannot carry",
                ["import", "--from-files", "flux-ok", "-O", "imp-10.yaml"],
            ),
            Case("one directory refused after others", ["push", "--each", "each/*", w.oci("each/{name}:v1")]),
            Case("one of two policies", ["images", "scan", "--path", "images"]),
            Case("one of two policies", ["images", "update", "--path", "images", "--dry-run"]),
        ],
        11: [
            Case("unreachable cluster", ["adopt", f"{w.name}-ok", "--config", "ok.yaml", dead_kube]),
            Case("API server down", ["reconcile", ok, "--name", w.name, "--insecure-skip-verify", dead_kube]),
            Case("API server down", ["reconcile", "--config", "ok.yaml", dead_kube]),
            Case("API server down", ["status", dead_kube]),
            Case("API server down", ["sync", w.name, dead_kube]),
            Case("API server down", ["rollback", f"{w.name}-ok", "--config", "ok.yaml", dead_kube]),
            Case("API server down", ["rollback", w.name, dead_kube]),
            Case("API server down", ["delete", w.name, "-n", runner, dead_kube]),
        ],
        12: [
            Case("Lease held elsewhere", ["rollback", f"{w.name}-held", "--config", "held.yaml", kube]),
            Case("Lease held elsewhere", ["delete", f"{w.name}-held", "-n", runner, kube]),
        ],
    }


@pytest.mark.parametrize("code", sorted(set(table()) - set(UNREACHABLE)))
def test_the_same_cause_is_the_same_code_in_every_command(code: int, world: World) -> None:
    meaning = table()[code]
    found = causes(world)
    assert code in found, f"exit {code} ({meaning}) is in the README's table, but no cause here provokes it"
    assert set(found) <= set(table()), (
        f"exit codes missing from the README's table: {set(found) - set(table())}"
    )
    wrong = []
    for case in found[code]:
        run = _run(case.argv, {**world.env, **case.env}, world.tmp)
        said = run.stdout + run.stderr
        # one error line ("error: ..."; click's own usage errors say "Error: ...")
        if (
            run.returncode != code
            or "Traceback" in said
            or (code > 1 and "error: " not in run.stderr.lower())
        ):
            wrong.append(f"{' '.join(case.argv)} ({case.cause}): exit {run.returncode}\n{said[-1500:]}")
    assert wrong == [], f"exit {code} ({meaning}):\n" + "\n".join(wrong)


def test_every_command_meets_the_table(world: World) -> None:
    """Each command of the tree has at least one cause here, so a new command's exit codes are
    walked against the table too (``PENDING`` until it lands)."""
    from lockgate.cli import COMMANDS

    walked = {case.argv[0] for cases in causes(world).values() for case in cases}
    landed = set(COMMANDS)
    missing = sorted(landed - walked - set(PENDING))
    assert missing == [], f"commands without a cause in causes(): {missing}"
    arrived = sorted(landed & set(PENDING))
    assert arrived == [], f"{arrived} landed: move them from PENDING into causes() ({PENDING})"
