"""``make demo``: the main job end to end on the local world.

Starts the world (registry, git remote, full cluster profile), then does each step of the
Gitless flow that has landed, as a user would, through the ``lockgate`` CLI: push
``examples/podinfo`` to the local registry, sign it, reconcile it into the local cluster,
then run ``lockgate serve`` with it and ``examples/hello``; act runs the real publish.yml
(action.yml) on a release of hello, one webhook call rolls it out, the commit status lands
on a local stand-in for GitHub's REST API, and ``lockgate status`` is printed. A step whose command is not
implemented yet is reported as next, not faked.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.world import act, binaries  # noqa: E402
from tests.world.errors import WorldSetupError  # noqa: E402
from tests.world.process import free_port  # noqa: E402
from tests.world.recorder import Recorder  # noqa: E402
from tests.world.world import World  # noqa: E402

NOT_IMPLEMENTED = 69
LOCKGATE = [sys.executable, "-m", "lockgate"]
#: the GitHub repository the demo's act run stands for (its origin remote; nothing is fetched)
DEMO_REPO = "lockgate-demo/hello"


def step(title: str) -> None:
    print(f"\n==> {title}", flush=True)


def lockgate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([*LOCKGATE, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    if result.stdout:
        print(result.stdout.rstrip())
    if result.stderr and result.returncode != NOT_IMPLEMENTED:
        print(result.stderr.rstrip(), file=sys.stderr)
    return result


def push_signed(source: Path, ref: str, verify_args: list[str], env: dict[str, str]) -> str | None:
    """Push ``source`` to ``ref`` and sign the digest with the demo key (when there is one)."""
    pushed = lockgate("push", str(source), ref, "--output", "json", env=env)
    if pushed.returncode != 0:
        return None
    digest = str(json.loads(pushed.stdout)["digest"])
    if verify_args[0] == "--verify-key":
        key = verify_args[1].replace("cosign.pub", "cosign.key")
        repo = ref.rsplit(":", 1)[0]
        if lockgate("sign", f"{repo}@{digest}", "--key", key, env=env).returncode != 0:
            return None
    return digest


def metric_ready(port: int, sync: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
            text = answer.read().decode()
    except OSError:
        return False
    return any(
        line.startswith("lockgate_sync_info{") and f'name="{sync}"' in line and 'ready="True"' in line
        for line in text.splitlines()
    )


def publish_with_act(world: World, hello_ref: str, env: dict[str, str]) -> tuple[str, str] | None:
    """The CI half as users run it: act runs this repository's publish.yml (the real
    action.yml) on a Git repository holding release 2 of examples/hello; returns (digest, sha)."""
    keys = world.directory / "demo-keys"
    repo = world.directory / "hello-repo"
    shutil.rmtree(repo, ignore_errors=True)
    files = {
        f"deploy/{p.relative_to(ROOT / 'examples' / 'hello')}": p.read_text()
        for p in sorted((ROOT / "examples" / "hello").rglob("*"))
        if p.is_file()
    }
    files["deploy/config.yaml"] = files["deploy/config.yaml"].replace("release 1", "release 2")
    sha = act.make_repo(repo, files, [act.WORKFLOWS / "publish.yml"])
    # act derives github.repository from the origin remote (nothing is fetched from it)
    subprocess.run(
        ["git", "-C", str(repo), "remote", "add", "origin", f"https://github.com/{DEMO_REPO}.git"], check=True
    )
    run = act.run_workflow(
        repo,
        ".github/workflows/publish.yml",
        inputs={"path": "deploy", "url": hello_ref, "sign": "key"},
        secrets={
            "LOCKGATE_SIGNING_KEY": (keys / "cosign.key").read_text(),
            "LOCKGATE_SIGNING_PASSWORD": env["LOCKGATE_PASSWORD"],
        },
    )
    if run.code != 0:
        print(run.tail(), file=sys.stderr)
        return None
    outputs = run.outputs("push", job="publish")
    print(
        f"act: publish.yml -> digest {outputs['digest']}, revision {outputs['revision']}, "
        f"signed by {outputs['signed-by']}"
    )
    for summary in dict.fromkeys(run.summaries(job="publish")):  # act reports each summary twice
        print(summary.rstrip())
    return outputs["digest"], sha


def serve_demo(world: World, env: dict[str, str], verify_args: list[str], ref: str) -> int:
    """``lockgate serve`` with two syncs, a release published by act and rolled out by one
    webhook call, its commit status on the GitHub stand-in, and ``lockgate status``."""
    assert world.cluster is not None
    step("lockgate serve: two syncs (demo, and hello which dependsOn demo), webhooks, metrics")
    hello_ref = ref.replace("/podinfo:latest", "/hello:latest")
    if push_signed(ROOT / "examples" / "hello", hello_ref, verify_args, env) is None:
        return 1
    token = secrets.token_hex(16)
    world.cluster.kubectl("create", "namespace", "lockgate-system", check=False)
    world.cluster.kubectl(
        "create",
        "secret",
        "generic",
        "lockgate-webhook",
        "-n",
        "lockgate-system",
        f"--from-literal=token={token}",
    )
    # GitHub's REST API cannot run here: a local endpoint records the commit statuses
    github = Recorder()
    world.cluster.kubectl(
        "create",
        "secret",
        "generic",
        "github-token",
        "-n",
        "lockgate-system",
        "--from-literal=token=demo-token",
    )
    metrics_port, webhook_port = free_port(), free_port()
    verify = {"key": verify_args[1]} if verify_args[0] == "--verify-key" else {"insecureSkip": True}
    docs: list[dict[str, object]] = [
        {
            "apiVersion": "lockgate.dev/v1alpha1",
            "kind": "Runner",
            "metadata": {"name": "runner"},
            "spec": {
                "namespace": "lockgate-system",
                "metricsAddress": f"127.0.0.1:{metrics_port}",
                "webhookAddress": f"127.0.0.1:{webhook_port}",
                "webhook": {"secretRef": {"name": "lockgate-webhook"}},
                "clusterName": "local",
            },
        },
        {
            "apiVersion": "lockgate.dev/v1alpha1",
            "kind": "Sync",
            "metadata": {"name": "demo"},
            "spec": {"url": ref, "interval": "10m", "prune": True, "wait": True, "verify": verify},
        },
        {
            "apiVersion": "lockgate.dev/v1alpha1",
            "kind": "Sync",
            "metadata": {"name": "hello"},
            "spec": {
                "url": hello_ref,
                "interval": "10m",
                "dependsOn": ["demo"],
                "prune": True,
                "wait": True,
                "rollback": "onHealthFailure",
                "verify": verify,
                "notify": [
                    {
                        "type": "github",
                        "address": f"https://github.com/{DEMO_REPO}",
                        "apiURL": github.url,
                        "secretRef": {"name": "github-token"},
                    }
                ],
            },
        },
    ]
    config = world.directory / "lockgate.yaml"
    config.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    print(config.read_text().rstrip())
    log = world.directory / "serve.log"
    with open(log, "wb") as out:
        served = subprocess.Popen(
            [*LOCKGATE, "serve", f"--config={config}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=ROOT,
        )
    try:
        deadline = time.monotonic() + 120
        while not (metric_ready(metrics_port, "demo") and metric_ready(metrics_port, "hello")):
            if served.poll() is not None or time.monotonic() > deadline:
                print(log.read_text(), file=sys.stderr)
                return 1
            time.sleep(0.2)
        print(log.read_text().rstrip())

        step("a new release of hello: act runs publish.yml (push + key sign), then one webhook call")
        published = publish_with_act(world, hello_ref, env)
        if published is None:
            return 1
        _, sha = published
        started = time.monotonic()
        request = urllib.request.Request(
            f"http://127.0.0.1:{webhook_port}/hook/hello",
            data=b"{}",
            method="POST",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            print(f"POST /hook/hello -> {answer.status} {answer.read().decode()}")
        while True:
            live = world.cluster.kubectl(
                "get", "configmap", "hello-config", "-n", "hello", "-o", "jsonpath={.data.MESSAGE}"
            )
            if "release 2" in live.stdout:
                break
            if time.monotonic() - started > 60:
                print(log.read_text(), file=sys.stderr)
                return 1
            time.sleep(0.05)
        print(f"applied {time.monotonic() - started:.2f}s after the webhook: MESSAGE={live.stdout!r}")
        owner, name = DEMO_REPO.split("/")
        github.wait_for(
            lambda _: any(s.get("state") == "success" for s in github.statuses(owner, name, sha)),
            timeout=60,
            what=f"a success status on {DEMO_REPO}@{sha[:12]}",
        )
        for status in github.statuses(owner, name, sha):
            print(
                f"commit status on {DEMO_REPO}@{sha[:12]}: {status['context']} {status['state']}: "
                f"{status.get('description', '')}"
            )

        step("lockgate status (read from the inventory Secrets)")
        if lockgate("status", "-n", "lockgate-system", env=env).returncode != 0:
            return 1
        lockgate("status", "hello", "-n", "lockgate-system", env=env)
    finally:
        served.send_signal(signal.SIGTERM)
        served.wait(30)
        github.stop()
    step("serve stopped on SIGTERM; its log")
    print("\n".join(log.read_text().splitlines()[-6:]))
    return 0


def main() -> int:
    step("starting the world (registry, git remote, etcd + kube-apiserver, controllers, kwok nodes)")
    try:
        world = World.start()
    except WorldSetupError as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return 1
    try:
        print(world.describe())
        print("start-up: " + ", ".join(f"{k} {v:.1f}s" for k, v in world.timings.items()))
        assert world.cluster is not None
        env = dict(os.environ)
        env["KUBECONFIG"] = str(world.cluster.kubeconfig)
        tools = [binaries.binary(p).parent for p in ("kubectl", "kustomize")]
        env["PATH"] = os.pathsep.join([*map(str, tools), env.get("PATH", "")])
        env.setdefault("SOURCE_DATE_EPOCH", "0")
        ref = f"oci://{world.registry.host}/lockgate/demo/podinfo:latest"
        pending: list[str] = []

        step(f"pushing examples/podinfo to {ref}")
        pushed = lockgate("push", "examples/podinfo", ref, "--output", "json", env=env)
        digest = None
        if pushed.returncode == NOT_IMPLEMENTED:
            pending.append("push examples/ as a Flux-compatible OCI artifact (issue: Gitless OCI artifacts)")
        elif pushed.returncode != 0:
            return pushed.returncode
        else:
            digest = json.loads(pushed.stdout)["digest"]
            print(f"pushed {digest}")
            lockgate("inspect", ref, env=env)

        verify_args = ["--insecure-skip-verify"]
        if digest is not None:
            step("signing the artifact by digest with a cosign-compatible key")
            keys = world.directory / "demo-keys"
            keys.mkdir(exist_ok=True)
            env["LOCKGATE_PASSWORD"] = "demo-password"
            made = lockgate("keygen", "--output-key-prefix", str(keys / "cosign"), env=env)
            if made.returncode == NOT_IMPLEMENTED:
                pending.append("sign and verify (issue: signing and verification)")
            elif made.returncode != 0:
                return made.returncode
            else:
                pinned = ref.replace(":latest", f"@{digest}")
                signed = lockgate("sign", pinned, "--key", str(keys / "cosign.key"), env=env)
                if signed.returncode != 0:
                    return signed.returncode
                step("verifying it as the runner will: the signature must name exactly this digest")
                verified = lockgate("verify", ref, "--key", str(keys / "cosign.pub"), env=env)
                if verified.returncode != 0:
                    return verified.returncode
                verify_args = ["--verify-key", str(keys / "cosign.pub")]

        step("reconciling the artifact into the local cluster (verify, staged apply, inventory, health)")
        if digest is None:
            pending.append("reconcile needs a pushed artifact")
        else:
            for attempt in ("first pass", "second pass: nothing changed, nothing written"):
                print(f"-- {attempt}")
                reconciled = lockgate(
                    "reconcile",
                    ref,
                    "--name",
                    "demo",
                    *verify_args,
                    "--prune",
                    "--wait",
                    "--timeout",
                    "2m",
                    env=env,
                )
                if reconciled.returncode == NOT_IMPLEMENTED:
                    pending.append(
                        "reconcile into the cluster with health checks (issue: runner reconcile core)"
                    )
                    break
                if reconciled.returncode != 0:
                    return reconciled.returncode

        if digest is not None and not pending:
            code = serve_demo(world, env, verify_args, ref)
            if code:
                return code

        step("what the cluster runs now")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            out = world.cluster.kubectl("get", "deployments,services,configmaps", "-n", "demo", check=False)
            if out.returncode == 0 or "NotFound" not in out.stderr:
                break
            time.sleep(0.5)
        print(out.stdout.rstrip() or out.stderr.rstrip())
        print(world.cluster.kubectl("get", "nodes", "-o", "wide").stdout.rstrip())

        if pending:
            step("not there yet (each is a landed issue away)")
            for item in pending:
                print(f"  - {item}")
        print("\ndemo finished")
        return 0
    finally:
        world.stop()


if __name__ == "__main__":
    raise SystemExit(main())
