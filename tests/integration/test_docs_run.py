"""README.md and docs/*.md, run as written against the world, so a document cannot drift
from the product.

The marker convention: an HTML comment on the line right before a fenced block (invisible
on GitHub, visible in review):

- ``<!-- run -->``: a command block, run by ``bash -euo pipefail``; it must exit 0. A
  document's blocks run in order, in one working directory of their own.
- ``<!-- file: NAME -->``: the block is written to NAME in that directory first.
- ``<!-- run: after the soak -->`` (docs/promotion.md): run once the guide's soak is over.
- ``<!-- not run: REASON -->``: deliberately not run here; REASON says why (GitHub-only YAML,
  a remote base on github.com, a placeholder to fill in, a Pod that must really run...)
  and which test covers it instead.

Every command block (```sh, ```bash, ```shell, ```console) and every GitHub Actions YAML
block must carry one of these (``test_every_command_block_is_marked``): a new example is
either run or skipped on purpose, never by oversight. To keep this test green when editing
a document: give a new runnable block ``<!-- run -->`` and run this test, or give it
``<!-- not run: why, and what tests it -->``.

A document runs in the world it assumes (``GIVEN``): its placeholders replaced (``REG`` and
``registry.example.com``: a repository prefix of the world's registry; sync and namespace
names suffixed, since tests share one cluster), the files it names without showing them
(README's ``./deploy``, ``apps/*``, ``./chart``; the images guide's checkout), and the
environment (``COSIGN_PASSWORD``, ``KUBECONFIG``, ``PATH`` with lockgate, kubectl, jq).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lockgate import registry as registry_client
from tests.integration.images_support import seed_tags
from tests.integration.reconcile_support import configmap, deployment, dump, get, namespace
from tests.integration.test_deploy import build
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMAND_LANGUAGES = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)
MARKER = re.compile(r"^<!-- (run|run: after the soak|file: (?P<file>\S+)|not run: (?P<reason>.+?)) -->$")
WORKFLOW = re.compile(r"^\s*(?:- )?(?:uses|runs-on):", re.M)


@dataclass(frozen=True)
class Block:
    document: str
    line: int
    language: str
    body: str
    #: ``run``, ``soak``, ``not run``, a file name, or ``""`` (no marker)
    kind: str
    reason: str = ""

    @property
    def needs_marker(self) -> bool:
        github_yaml = self.language in ("yaml", "yml") and WORKFLOW.search(self.body) is not None
        return self.language in COMMAND_LANGUAGES or github_yaml

    def __str__(self) -> str:
        return f"{self.document}:{self.line} ({self.language or 'plain'} block)"


def blocks(text: str, document: str) -> list[Block]:
    """Every fenced block of a document, with the marker on the line before it."""
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        marker = MARKER.match(before)
        kind, reason = "", ""
        if marker is not None:
            reason = marker["reason"] or ""
            kind = marker["file"] or ("not run" if reason else "soak" if "soak" in marker[1] else "run")
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(document, line, match["lang"], match["body"], kind, reason))
    return found


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_every_command_block_is_marked() -> None:
    unmarked, unexplained, misplaced = [], [], []
    for path in DOCUMENTS:
        for block in blocks(path.read_text(), _relative(path)):
            if block.needs_marker and not block.kind:
                unmarked.append(str(block))
            if block.kind == "not run" and len(block.reason.split()) < 3:
                unexplained.append(f"{block}: {block.reason!r}")
            if block.kind in ("run", "soak") and block.language not in COMMAND_LANGUAGES:
                misplaced.append(str(block))
    assert unmarked == [], (
        "command blocks without a marker: add <!-- run --> before a block that runs here, or "
        "<!-- not run: REASON --> (see this test's docstring):\n" + "\n".join(unmarked)
    )
    assert unexplained == [], "a not-run marker says why in a few words:\n" + "\n".join(unexplained)
    assert misplaced == [], "<!-- run --> marks a command block:\n" + "\n".join(misplaced)


# ---- the world each document assumes ------------------------------------------------------------


@dataclass
class Context:
    directory: Path
    registry: Registry
    cluster: Cluster
    suffix: str
    env: dict[str, str]
    outputs: list[str] = field(default_factory=list)
    marks: dict[str, float] = field(default_factory=dict)
    #: the session fixtures the document's ``Given.needs`` asked for, by name
    fixtures: dict[str, Any] = field(default_factory=dict)
    #: what the set-up saw, for the check (UIDs...)
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Given:
    #: the document's text as it runs here (placeholders and names replaced)
    rename: Callable[[str, Context], str] = lambda text, ctx: text
    #: files the document names but does not show
    setup: Callable[[Context], None] = lambda ctx: None
    #: called before each run block (``kind``, body): a wait, a mark
    before: Callable[[str, str, Context], None] = lambda kind, body, ctx: None
    #: what the runs must have done, beyond exiting 0
    check: Callable[[Context], None] = lambda ctx: None
    #: session fixtures beyond the cluster and the registry (``flux``: Flux's controllers)
    needs: tuple[str, ...] = ()


def _registry_renamed(text: str, ctx: Context) -> str:
    prefix = f"{ctx.registry.host}/{ctx.suffix}"
    return re.sub(r"\bREG\b", prefix, text).replace("registry.example.com", prefix)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


# README.md: ./deploy, apps/*, ./chart and prod.yaml; the sync "web" and its objects renamed
def _readme_setup(ctx: Context) -> None:
    ns = f"docs-{ctx.suffix}"
    _write(
        ctx.directory,
        {
            "deploy/app.yaml": dump(namespace(ns), configmap("app", ns, {"color": "blue"})),
            "apps/frontend/app.yaml": dump(configmap("frontend", ns, {"k": "v"})),
            "apps/backend/app.yaml": dump(configmap("backend", ns, {"k": "v"})),
            "chart/Chart.yaml": "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
            "chart/values.yaml": "replicaCount: 1\n",
            "chart/templates/cm.yaml": (
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n"
                "  namespace: {{ .Release.Namespace }}\n"
                "data:\n  replicas: {{ .Values.replicaCount | quote }}\n"
            ),
            "prod.yaml": "replicaCount: 2\n",
        },
    )


def _readme_renamed(text: str, ctx: Context) -> str:
    return _registry_renamed(text, ctx).replace("--name web ", f"--name web-{ctx.suffix} ")


def _readme_check(ctx: Context) -> None:
    live = get(ctx.cluster, "configmap", "app", f"docs-{ctx.suffix}")
    assert live is not None and live["data"] == {"color": "blue"}
    assert (ctx.directory / "out" / "app.yaml").is_file() and (ctx.directory / "artifact.tgz").is_file()
    assert "Already signed oci://" in "\n".join(ctx.outputs)  # the README says the same key adds nothing


# docs/images.md: a checkout holding an ImageAutomation and a marked file; tags in the registry
def _images_setup(ctx: Context) -> None:
    image = f"{ctx.registry.host}/{ctx.suffix}/podinfo"
    seed_tags(ctx.registry.host, f"{ctx.suffix}/podinfo", ["6.4.0", "6.5.0", "7.0.0-rc.1"])
    _write(
        ctx.directory,
        {
            "images.yaml": (
                "apiVersion: lockgate.dev/v1alpha1\nkind: ImageAutomation\n"
                "metadata: {name: web, namespace: apps}\n"
                "spec:\n  git: {author: {name: lockgate, email: bot@example.com}}\n"
                "  update: {path: ./deploy}\n"
                f"  images:\n    - {{name: podinfo, image: {image}, semver: '>=6.0.0'}}\n"
            ),
            "deploy/app.yaml": f'image: {image}:6.4.0 # {{"$imagepolicy": "apps:podinfo"}}\n',
        },
    )
    git = ["git", "-c", "user.name=docs", "-c", "user.email=docs@example.com"]
    for argv in (["init", "-q", "--initial-branch=main"], ["add", "."], ["commit", "-qm", "seed"]):
        subprocess.run([*git, *argv], cwd=ctx.directory, check=True, capture_output=True)


def _images_check(ctx: Context) -> None:
    image = f"{ctx.registry.host}/{ctx.suffix}/podinfo"
    assert (ctx.directory / "deploy" / "app.yaml").read_text().startswith(f"image: {image}:6.5.0 ")
    assert ctx.outputs[-1].rstrip().endswith("nothing to update: every marked value is its policy's latest")


# docs/promotion.md: names suffixed, the soak 3s instead of an hour
SOAK = 3


def _promotion_renamed(text: str, ctx: Context) -> str:
    return (
        _registry_renamed(text, ctx)
        .replace("lockgate-staging", f"lockgate-staging-{ctx.suffix}")
        .replace("lockgate-production", f"lockgate-production-{ctx.suffix}")
        .replace("shop", f"shop{ctx.suffix}")
        .replace("minAge: 1h", f"minAge: {SOAK}s")
    )


def _promotion_before(kind: str, body: str, ctx: Context) -> None:
    if kind == "soak":
        # the fleet's soak (section 9) starts when the block before it, the staging fleet's, ended
        staged = time.monotonic() if "production-canary.yaml" in body else ctx.marks["staged"]
        time.sleep(max(0.0, staged + SOAK + 1 - time.monotonic()))


def _promotion_check(ctx: Context) -> None:
    everything, suffix = "\n".join(ctx.outputs), ctx.suffix
    qa = "https://example.com/attestations/qa-approved/v1"
    assert "attestation: attested healthy in staging: sha256:" in everything
    assert "  admitted: healthy in staging, 3s soak: healthy since " in everything
    assert f"  admitted: {qa}: attested by key sha256:" in everything
    assert "1 object healthy" in everything and "1 objects" not in everything
    assert f"waiting for healthy in staging, {SOAK}s soak: " in everything
    assert f"waiting for {qa}: no such attestation" in everything
    assert f"Attested {qa} of " in everything
    assert "Verified 1 attestation(s) of type https://lockgate.dev/attestations/healthy/v1" in everything
    # after the soak production runs 1.0.0; 1.1.0 is in staging and waits for production
    staging = get(ctx.cluster, "configmap", f"shop{suffix}", f"shop{suffix}-staging")
    production = get(ctx.cluster, "configmap", f"shop{suffix}", f"shop{suffix}-production")
    assert staging is not None and staging["data"]["version"] == "1.1.0"
    assert production is not None and production["data"]["version"] == "1.0.0"
    assert any(
        re.search(r"waiting: +1\.1\.0@sha256:[0-9a-f]+: waiting for healthy in staging", o)
        for o in ctx.outputs
    )
    # lockgate fleet (section 7): both releases healthy in staging, newest first, from the registry alone
    (fleet_output,) = [o for o in ctx.outputs if o.startswith("REVISION")]
    fleet = fleet_output.splitlines()
    assert fleet[0].split() == ["REVISION", "DIGEST", "staging"]
    rows = [line.split() for line in fleet[1:]]
    assert [(row[0], row[2], row[3]) for row in rows] == [
        ("1.1.0", "healthy", "since"),
        ("1.0.0", "healthy", "since"),
    ]
    # the fleet (sections 8 and 9): the canary waited for a staging-* quorum, the rest for the canary
    assert (
        f"0/2 of staging-* healthy for {SOAK}s; no attesting cluster matches staging-* (attested: staging)"
        in everything
    )
    assert "0/1 of production-canary healthy; missing production-canary" in everything
    for stage in ("staging-eu-1", "staging-us-1", "production-canary", "production-eu-1"):
        found = get(ctx.cluster, "configmap", f"shop{suffix}", f"shop{suffix}-{stage}")
        assert found is not None and found["data"]["version"] == "1.1.0", stage
    assert "attested healthy in production-canary" in ctx.outputs[-1]


# docs/helm.md: the CRD's group and the namespaces suffixed (CRDs are cluster-wide); helm on PATH
def _helm_renamed(text: str, ctx: Context) -> str:
    return (
        _registry_renamed(text, ctx)
        .replace("example.com", f"x{ctx.suffix}.example.com")
        .replace("helm-demo", f"helm-demo-{ctx.suffix}")
        .replace("lockgate-helm", f"lockgate-helm-{ctx.suffix}")
    )


def _helm_setup(ctx: Context) -> None:
    ctx.env["PATH"] = os.pathsep.join([str(binaries.binary("helm").parent), ctx.env["PATH"]])


def _helm_check(ctx: Context) -> None:
    everything, group = "\n".join(ctx.outputs), f"x{ctx.suffix}.example.com"
    crd = get(ctx.cluster, "crd", f"widgets.{group}")
    assert crd is not None and "deletionTimestamp" not in crd["metadata"]  # kept after --skip-crds
    assert get(ctx.cluster, f"widgets.{group}", "operator", f"helm-demo-{ctx.suffix}") is not None
    assert "1 CRD(s) from crds/ are applied first" in everything
    assert (
        'shop/templates/_helpers.tpl:2: lookup, in define "shop.password", used by templates/secret.yaml:6'
        in (everything)
    )
    assert "refused with exit code 8" in everything
    assert "published the capabilities of prod" in everything
    assert "notice: rendering for prod: Kubernetes v" in everything


# docs/migrate-from-flux.md: an app Flux applied (signed, verified by its OCIRepository), in
# this test's own Flux, workload and runner namespaces
def _flux_renamed(text: str, ctx: Context) -> str:
    s = ctx.suffix
    return (
        _registry_renamed(text, ctx)
        .replace("flux-system", f"flux-{s}")
        .replace("lockgate-system", f"lg-{s}")
        .replace("podinfo", f"podinfo-{s}")
    )


def _flux_setup(ctx: Context) -> None:
    s = ctx.suffix
    flux_ns, app = f"flux-{s}", f"podinfo-{s}"
    for ns in (flux_ns, app):
        ctx.cluster.kubectl("create", "namespace", ns)

    def lockgate(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "lockgate", *args],
            cwd=ctx.directory,
            env=ctx.env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    keys = ctx.directory.parent / "keys"
    keys.mkdir()
    lockgate("keygen", "--output-key-prefix", str(keys / "cosign"))
    ctx.cluster.kubectl(
        "create",
        "secret",
        "generic",
        "cosign-pub",
        "-n",
        flux_ns,
        f"--from-file=cosign.pub={keys / 'cosign.pub'}",
    )
    source = ctx.directory.parent / "podinfo"
    _write(source, {"app.yaml": dump(deployment(app, app, replicas=2), configmap(app, app, {"k": "v"}))})
    url = ctx.registry.oci(f"{s}/podinfo", ":latest")
    pushed = json.loads(
        lockgate("push", str(source), url, "--sign", "key", "--key", str(keys / "cosign.key"), "-o", "json")
    )
    flux_objects = [
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "OCIRepository",
            "metadata": {"name": app, "namespace": flux_ns},
            "spec": {
                "interval": "5m",
                "url": url.rsplit(":", 1)[0],
                "ref": {"tag": "latest"},
                "insecure": True,
                "verify": {"provider": "cosign", "secretRef": {"name": "cosign-pub"}},
            },
        },
        {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": app, "namespace": flux_ns},
            "spec": {
                "interval": "10m",
                "sourceRef": {"kind": "OCIRepository", "name": app},
                "path": "./",
                "prune": True,
                "wait": True,
                "targetNamespace": app,
            },
        },
    ]
    ctx.cluster.kubectl("apply", "--server-side", "-f", "-", input=dump(*flux_objects))
    deadline = time.monotonic() + 240
    while True:
        ks = get(ctx.cluster, "kustomizations.kustomize.toolkit.fluxcd.io", app, flux_ns) or {}
        if str((ks.get("status") or {}).get("lastAppliedRevision", "")).endswith(pushed["digest"]):
            break
        assert time.monotonic() < deadline, f"Flux did not apply {app}: {ks.get('status')}"
        time.sleep(0.5)
    live = get(ctx.cluster, "deployment", app, app)
    assert live is not None
    ctx.facts["uid"] = live["metadata"]["uid"]
    ctx.facts["pods"] = _pods(ctx.cluster, app)


def _pods(cluster: Cluster, namespace: str) -> dict[str, str]:
    found = json.loads(cluster.kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)["items"]
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in found}


def _flux_check(ctx: Context) -> None:
    s = ctx.suffix
    app = f"podinfo-{s}"
    live = get(ctx.cluster, "deployment", app, app)
    assert live is not None and live["metadata"]["uid"] == ctx.facts["uid"]
    assert not any(k.startswith("kustomize.toolkit.fluxcd.io/") for k in live["metadata"].get("labels") or {})
    assert {m["manager"] for m in live["metadata"]["managedFields"] if m["operation"] == "Apply"} == {
        "lockgate"
    }
    assert _pods(ctx.cluster, app) == ctx.facts["pods"]  # nothing re-created, nothing rolled
    assert get(ctx.cluster, "kustomizations.kustomize.toolkit.fluxcd.io", app, f"flux-{s}") is None
    assert get(ctx.cluster, "secret", f"lockgate-{app}", f"lg-{s}") is not None
    everything = "\n".join(ctx.outputs)
    assert f"adopt {app}: Kustomization flux-{s}/{app}" in everything
    verified = next(o for o in ctx.outputs if "lockgate Apply" in o)  # the managers listed after adopt
    assert "kustomize-controller" not in verified


def _lockgate(ctx: Context, *args: str) -> str:
    """Run lockgate as the document's reader would, in its directory and environment."""
    done = subprocess.run(
        [sys.executable, "-m", "lockgate", *args],
        cwd=ctx.directory,
        env=ctx.env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"setup: lockgate {' '.join(args)}:\n{done.stdout}{done.stderr}"
    return done.stdout


def _push_signed(ctx: Context, url: str, files: dict[str, str]) -> None:
    """``files`` pushed to ``url`` and signed with the directory's cosign.key."""
    tree = ctx.directory / "trees" / re.sub(r"[^a-z0-9]+", "-", url)
    _write(tree, files)
    _lockgate(ctx, "push", str(tree), url, "--sign", "key", "--key", "cosign.key")


# docs/registries.md: ghcr.io and the mirrors are the world's registry; /media/usb a directory
def _registries_renamed(text: str, ctx: Context) -> str:
    prefix = f"{ctx.registry.host}/{ctx.suffix}"
    return (
        text.replace("ghcr.io/org/app", f"{prefix}/src/org/app")
        .replace("mirror.corp/org/app", f"{prefix}/mirror/org/app")
        .replace("registry.inside/org/app", f"{prefix}/inside/org/app")
        .replace("oci-layout:///media/usb/app", f"oci-layout://{ctx.directory}/usb/app")
        .replace("oci-layout:///srv/app", f"oci-layout://{ctx.directory}/usb/app")
        .replace("--name app ", f"--name app-{ctx.suffix} ")
    )


def _registries_setup(ctx: Context) -> None:
    _lockgate(ctx, "keygen", "--output-key-prefix", "cosign")
    ns = f"docs-{ctx.suffix}"
    for version in ("1.4.2", "1.4.3", "2.0.0"):
        files = {"app.yaml": dump(namespace(ns), configmap("app", ns, {"version": version}))}
        _push_signed(ctx, f"oci://{ctx.registry.host}/{ctx.suffix}/src/org/app:{version}", files)


def _registries_check(ctx: Context) -> None:
    mirror = registry_client.RegistryClient.for_reference(
        registry_client.parse(f"oci://{ctx.registry.host}/{ctx.suffix}/mirror/org/app")
    )
    assert sorted(
        t for t in mirror.list_tags(f"{ctx.suffix}/mirror/org/app") if not t.startswith("sha256")
    ) == [
        "1.4.2",
        "1.4.3",
    ]
    assert (ctx.directory / "usb" / "app" / "index.json").is_file()
    # written as oras writes a layout: the non-root runner, another user, can read it
    assert (ctx.directory / "usb" / "app" / "index.json").stat().st_mode & 0o044 == 0o044
    live = get(ctx.cluster, "configmap", "app", f"docs-{ctx.suffix}")
    assert live is not None and live["data"] == {"version": "1.4.2"}


# docs/runner.md: its two Sync documents, their artifacts pushed and signed; names suffixed
def _runner_renamed(text: str, ctx: Context) -> str:
    s = ctx.suffix
    return (
        _registry_renamed(text, ctx)
        .replace("/etc/lockgate/cosign.pub", "cosign.pub")
        .replace("name: platform ", f"name: platform-{s} ")
        .replace("name: apps\n", f"name: apps-{s}\n")
        .replace("targetNamespace: platform ", f"targetNamespace: platform-{s} ")
    )


def _runner_setup(ctx: Context) -> None:
    s, prefix = ctx.suffix, f"oci://{ctx.registry.host}/{ctx.suffix}"
    _lockgate(ctx, "keygen", "--output-key-prefix", "cosign")
    ctx.cluster.kubectl("create", "namespace", f"platform-{s}")
    platform = {"clusters/production/cm.yaml": dump(configmap("platform", "default", {"v": "1.4.1"}))}
    _push_signed(ctx, f"{prefix}/platform/manifests:1.4.1", platform)
    apps = {"app.yaml": dump(namespace(f"apps-{s}"), configmap("apps", f"apps-{s}", {"v": "production"}))}
    _push_signed(ctx, f"{prefix}/apps/manifests:production", apps)


def _runner_check(ctx: Context) -> None:
    platform = get(ctx.cluster, "configmap", "platform", f"platform-{ctx.suffix}")
    apps = get(ctx.cluster, "configmap", "apps", f"apps-{ctx.suffix}")
    assert platform is not None and platform["data"] == {"v": "1.4.1"}
    assert apps is not None and apps["data"] == {"v": "production"}


def _runner_typos_check(ctx: Context) -> None:
    """The configuration example's problems, all at once and by line, as the page shows them."""
    (said,) = [o for o in ctx.outputs if "problems:" in o]
    page = (ROOT / "docs" / "runner.md").read_text().split("error: 3 problems:", 1)[1].split("```", 1)[0]
    shown = [line.strip().removesuffix("...").rstrip() for line in page.strip().splitlines()]
    lines = [line.strip() for line in said.splitlines() if line.startswith("  typos.yaml:")]
    assert "error: 3 problems:" in said and len(lines) == len(shown) == 3, said
    assert all(line.startswith(want.rstrip(", ")) for line, want in zip(lines, shown, strict=True)), said


def _status_page_renamed(text: str, ctx: Context) -> str:
    """The page's port is the machine's to share: a free one; the runner namespace is the test's."""
    from tests.world.process import free_port

    port = str(free_port())
    return (
        _registry_renamed(text, ctx)
        .replace("127.0.0.1:9090", f"127.0.0.1:{port}")
        .replace("-n lockgate-system", f"-n lockgate-{ctx.suffix}")
    )


def _status_page_check(ctx: Context) -> None:
    assert any(o.split()[:2] == ["local", "0"] for o in ctx.outputs), ctx.outputs


def _notifications_renamed(text: str, ctx: Context) -> str:
    return _registry_renamed(text, ctx).replace("-n lockgate-system ", f"-n lockgate-{ctx.suffix} ")


def _notifications_setup(ctx: Context) -> None:
    ctx.cluster.kubectl("create", "namespace", f"lockgate-{ctx.suffix}")


def _notifications_check(ctx: Context) -> None:
    """The Secret a provider's secretRef names, with the entry the page says: ``token``."""
    found = get(ctx.cluster, "secret", "github-token", f"lockgate-{ctx.suffix}")
    assert found is not None and set(found["data"]) == {"token"}, found


def _runner_both_check(ctx: Context) -> None:
    _runner_typos_check(ctx)
    _runner_check(ctx)


# docs/preview.md: staging runs a signed 1.4.2; the page's deploy/ changes one value
def _preview_setup(ctx: Context) -> None:
    (ctx.directory / "keys").mkdir()
    _lockgate(ctx, "keygen", "--output-key-prefix", str(ctx.directory / "keys" / "release"))
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}, "data": {"replicas": "2"}}
    tree = ctx.directory / "release-1.4.2"
    _write(tree, {"cm.yaml": dump(cm)})
    url = f"oci://{ctx.registry.host}/{ctx.suffix}/app-manifests:1.4.2"
    _lockgate(ctx, "push", str(tree), url, "--sign", "key", "--key", "keys/release.key")
    _write(ctx.directory, {"deploy/cm.yaml": dump({**cm, "data": {"replicas": "3"}})})


def _preview_check(ctx: Context) -> None:
    said = "\n".join(ctx.outputs)
    assert "staging / app" in said and "1 of 1 syncs change" in said, said
    assert 'data.replicas: "2" -> "3"' in said, said


GIVEN: dict[str, Given] = {
    "docs/preview.md": Given(rename=_registry_renamed, setup=_preview_setup, check=_preview_check),
    "README.md": Given(rename=_readme_renamed, setup=_readme_setup, check=_readme_check),
    "docs/migrate-from-flux.md": Given(
        rename=_flux_renamed, setup=_flux_setup, check=_flux_check, needs=("flux",)
    ),
    "docs/images.md": Given(setup=_images_setup, check=_images_check),
    "docs/promotion.md": Given(rename=_promotion_renamed, before=_promotion_before, check=_promotion_check),
    "docs/helm.md": Given(rename=_helm_renamed, setup=_helm_setup, check=_helm_check),
    "docs/registries.md": Given(rename=_registries_renamed, setup=_registries_setup, check=_registries_check),
    "docs/runner.md": Given(rename=_runner_renamed, setup=_runner_setup, check=_runner_both_check),
    "docs/notifications.md": Given(
        rename=_notifications_renamed, setup=_notifications_setup, check=_notifications_check
    ),
    "docs/status-page.md": Given(rename=_status_page_renamed, check=_status_page_check),
}

#: documents with command blocks none of which can run here, and why (every other one runs its
#: main path: ``test_every_document_with_commands_runs_its_main_path``)
NOTHING_RUNS = {
    "docs/gitlab.md": "its commands verify what a GitLab pipeline signed keylessly; "
    "test_gitlab_identity.py and test_gitlab_template.py run them against the local Sigstore",
}


def _runnable() -> list[str]:
    return [
        _relative(path)
        for path in DOCUMENTS
        if any(b.kind in ("run", "soak") for b in blocks(path.read_text(), _relative(path)))
    ]


@pytest.mark.parametrize("document", _runnable())
def test_the_document_runs_as_written(
    document: str,
    cluster: Cluster,
    registry: Registry,
    unique: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    given = GIVEN.get(document, Given(rename=_registry_renamed))
    fixtures = {name: request.getfixturevalue(name) for name in given.needs}
    bindir = Path(sys.executable).parent
    tools = [str(binaries.binary(p).parent) for p in ("kubectl", "flux")]
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("LOCKGATE_PASSWORD", "SIGSTORE_ID_TOKEN")},
        "PATH": os.pathsep.join([str(bindir), *tools, os.environ["PATH"]]),
        "KUBECONFIG": str(cluster.kubeconfig),
        "COSIGN_PASSWORD": "docs-password",
        "DOCKER_CONFIG": str(tmp_path / "docker"),
        "LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize")),
        "LOCKGATE_HELM": str(binaries.binary("helm")),
    }
    work = tmp_path / "work"
    work.mkdir()
    ctx = Context(work, registry, cluster, unique[-6:], env, fixtures=fixtures)
    given.setup(ctx)
    text = given.rename((ROOT / document).read_text(), ctx)
    ran = 0
    for block in blocks(text, document):
        if block.kind in ("", "not run"):
            continue
        if block.kind not in ("run", "soak"):
            (work / block.kind).parent.mkdir(parents=True, exist_ok=True)
            (work / block.kind).write_text(block.body)
            continue
        given.before(block.kind, block.body, ctx)
        run = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.body],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        said = f"--- stdout\n{run.stdout}\n--- stderr\n{run.stderr}"
        assert run.returncode == 0, f"{block} exited {run.returncode}:\n{block.body}\n{said}"
        ctx.outputs.append(run.stdout + run.stderr)
        ran += 1
        if "reconcile --config staging.yaml" in block.body and "staged" not in ctx.marks:
            ctx.marks["staged"] = time.monotonic()
    assert ran, f"{document} has no block marked <!-- run -->"
    given.check(ctx)


def test_every_document_with_commands_runs_its_main_path() -> None:
    """A document whose commands are all marked not run is only read, never tried: each runs at
    least its main path, or says here why nothing of it can run (pages added to docs/ count)."""
    silent = []
    for path in DOCUMENTS:
        name = _relative(path)
        found = blocks(path.read_text(), name)
        if any(b.language in COMMAND_LANGUAGES for b in found) and not any(
            b.kind in ("run", "soak") for b in found
        ):
            silent.append(name)
    assert sorted(set(silent) - set(NOTHING_RUNS)) == [], (
        "these documents run none of their commands: mark the main path <!-- run --> (and give "
        "the world it assumes in GIVEN), or say in NOTHING_RUNS why nothing can run"
    )
    assert sorted(set(NOTHING_RUNS) - set(silent)) == [], (
        "these run something now: drop them from NOTHING_RUNS"
    )


# ---- facts the documents state, checked against the product -------------------------------------


def test_the_deployment_the_docs_name_is_the_one_installed() -> None:
    """``deploy/NAME`` in a document's kubectl commands names the runner Deployment that
    ``deploy/runner`` installs (docs/status-page.md said lockgate-runner)."""
    installed = {
        d["metadata"]["name"] for d in build(ROOT / "deploy" / "runner") if d["kind"] == "Deployment"
    }
    named = []
    for path in DOCUMENTS:
        for block in blocks(path.read_text(), _relative(path)):
            if block.language in COMMAND_LANGUAGES:
                named += [
                    (str(block), n) for n in re.findall(r"kubectl .*?\bdeploy/([a-z0-9-]+)", block.body)
                ]
    assert named, "no document names the runner's Deployment any more: drop this test"
    assert [(where, n) for where, n in named if n not in installed] == [], installed


def test_the_json_fields_the_readme_names_are_the_ones_printed(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    """The README's lists of ``--output json`` fields, against what push and sign print."""
    readme = (ROOT / "README.md").read_text()
    pushed_fields = re.search(r"Push prints the digest \(`--output json`: ([^)]+)\)", readme)
    signed_fields = re.search(r"the JSON a `signed` object \(([^)]+)\)", readme)
    assert pushed_fields and signed_fields, "the README no longer lists push's JSON fields where it did"
    env = {**os.environ, "LOCKGATE_PASSWORD": "pw", "DOCKER_CONFIG": str(tmp_path / "docker")}

    def lockgate(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "lockgate", *args], capture_output=True, text=True, env=env, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    lockgate("keygen", "--output-key-prefix", "cosign")
    _write(tmp_path, {"deploy/cm.yaml": dump(configmap("a", "default", {"k": unique}))})
    printed = json.loads(
        lockgate(
            "push",
            "deploy",
            registry.oci(unique, ":v1"),
            "--sign",
            "key",
            "--key",
            "cosign.key",
            "-o",
            "json",
        )
    )
    for listed, keys in ((pushed_fields[1], set(printed)), (signed_fields[1], set(printed["signed"]))):
        names = [n.strip().strip("`") for n in listed.split(",")]
        assert [n for n in names if n not in keys] == [], (listed, sorted(keys))


#: every page a user reads: the README, docs/ and the workflows' guides
READ = [*DOCUMENTS, *sorted((ROOT / "workflows").rglob("*.md")), *sorted((ROOT / "deploy").rglob("*.md"))]
_INSTALL = re.compile(r"\b(?:pipx|pip3?|uv pip|uv tool) install\b[^\n]*?\blockgate\b(?![-/.\w])")


def test_no_page_installs_lockgate_from_a_package_index() -> None:
    """lockgate is not on PyPI: a page saying ``pipx install lockgate`` (docs/images.md did)
    sends a user to an index that does not serve it. CI takes the Action, the reusable
    workflows or the container image; a checkout takes ``make setup``."""
    said = [
        f"{_relative(path)}:{text[: m.start()].count(chr(10)) + 1}: {m.group(0)}"
        for path in READ
        for text in [path.read_text()]
        for m in _INSTALL.finditer(text)
    ]
    assert said == []


def _action_steps(body: str) -> list[dict[str, object]]:
    import yaml

    try:
        doc = yaml.safe_load(body)
    except yaml.YAMLError:
        return []
    jobs = doc.get("jobs", {}) if isinstance(doc, dict) else {}
    steps = [s for job in jobs.values() if isinstance(job, dict) for s in job.get("steps") or []]
    return [
        s
        for s in steps
        if isinstance(s, dict) and str(s.get("uses", "")).startswith("lockgate-dev/lockgate@")
    ]


def test_the_action_steps_the_docs_show_use_its_commands_and_inputs() -> None:
    """Each ``uses: lockgate-dev/lockgate@...`` step in a page names a command of the action
    and only inputs action.yml declares."""
    import yaml

    declared = yaml.safe_load((ROOT / "action.yml").read_text())["inputs"]
    commands = re.findall(r"One of ([a-z, -]+)\.", declared["command"]["description"])[0].split(", ")
    shown, wrong = 0, []
    for path in READ:
        for block in blocks(path.read_text(), _relative(path)):
            if block.language not in ("yaml", "yml"):
                continue
            for step in _action_steps(block.body):
                shown += 1
                given = step.get("with") or {}
                assert isinstance(given, dict)
                if given.get("command") not in commands:
                    wrong.append(f"{block}: command {given.get('command')!r} is not one of {commands}")
                wrong += [
                    f"{block}: input {name!r} is not in action.yml" for name in given if name not in declared
                ]
    assert shown, "no page shows the action any more: drop this test"
    assert wrong == []


def test_make_world_prints_where_lockgate_is() -> None:
    """The README says ``make world`` prints where ``kubectl`` and ``lockgate`` are: the world's
    start-up lines name both, and the lockgate printed runs."""
    readme = (ROOT / "README.md").read_text()
    assert "where `kubectl` and `lockgate` are" in readme
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.world", "--no-cluster"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("The world is up"):
                break
    finally:
        proc.send_signal(2)
        proc.communicate(timeout=60)
    printed = {line.split(":", 1)[0]: line.split(":", 1)[1].split()[0] for line in lines if ":" in line}
    assert "kubectl" in printed and "lockgate" in printed, lines
    ran = subprocess.run([printed["lockgate"], "--version"], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stdout.startswith("lockgate "), ran


def test_the_status_page_has_one_port_in_every_page() -> None:
    """The README said 8090 where docs/status-page.md and the reference say 9090 (issue 36, Low):
    every status page address and port-forward in the pages names the same port."""
    said: dict[str, set[str]] = {}
    for path in READ:
        text = path.read_text()
        for match in re.finditer(
            r"statusPage[^\n]*?address:? *\"?[\w.]*:(\d+)|address: \"127\.0\.0\.1:(\d+)\"[^\n]*page"
            r"|port-forward deploy/lockgate (\d+)|Listen address of the status page[^\n]*?:(\d+)",
            text,
        ):
            port = next(group for group in match.groups() if group)
            said.setdefault(port, set()).add(_relative(path) if path.is_relative_to(ROOT) else str(path))
    assert len(said) == 1, said


#: pages whose commands all need what this test cannot give, and the test that runs them instead
NO_RUNNABLE = {
    "docs/gitlab.md": "its one command verifies a GitLab-signed artifact (keyless, GitLab's issuer): "
    "test_gitlab_identity.py signs one with the local Sigstore stack and verifies it so",
}


def test_every_page_with_commands_runs_at_least_one() -> None:
    """A page whose every command is marked ``not run`` can drift from the product unseen
    (issue 36's acceptance): each runs one block here, or says in ``NO_RUNNABLE`` why not."""
    idle = [
        _relative(path)
        for path in DOCUMENTS
        if any(b.language in COMMAND_LANGUAGES for b in blocks(path.read_text(), _relative(path)))
        and not any(b.kind in ("run", "soak") for b in blocks(path.read_text(), _relative(path)))
    ]
    assert sorted(set(idle) - set(NO_RUNNABLE)) == [], "pages whose commands are never run"
    assert sorted(set(NO_RUNNABLE) - set(idle)) == [], "NO_RUNNABLE names a page that runs a block now"
