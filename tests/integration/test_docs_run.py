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

import pytest

from tests.integration.images_support import seed_tags
from tests.integration.reconcile_support import configmap, dump, get, namespace
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
    assert "attestation: attested healthy in staging: " in everything
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


GIVEN: dict[str, Given] = {
    "README.md": Given(rename=_readme_renamed, setup=_readme_setup, check=_readme_check),
    "docs/images.md": Given(setup=_images_setup, check=_images_check),
    "docs/promotion.md": Given(rename=_promotion_renamed, before=_promotion_before, check=_promotion_check),
    "docs/helm.md": Given(rename=_helm_renamed, setup=_helm_setup, check=_helm_check),
}


def _runnable() -> list[str]:
    return [
        _relative(path)
        for path in DOCUMENTS
        if any(b.kind in ("run", "soak") for b in blocks(path.read_text(), _relative(path)))
    ]


@pytest.mark.parametrize("document", _runnable())
def test_the_document_runs_as_written(
    document: str, cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    given = GIVEN.get(document, Given(rename=_registry_renamed))
    bindir = Path(sys.executable).parent
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("LOCKGATE_PASSWORD", "SIGSTORE_ID_TOKEN")},
        "PATH": os.pathsep.join([str(bindir), str(binaries.binary("kubectl").parent), os.environ["PATH"]]),
        "KUBECONFIG": str(cluster.kubeconfig),
        "COSIGN_PASSWORD": "docs-password",
        "DOCKER_CONFIG": str(tmp_path / "docker"),
        "LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize")),
        "LOCKGATE_HELM": str(binaries.binary("helm")),
    }
    work = tmp_path / "work"
    work.mkdir()
    ctx = Context(work, registry, cluster, unique[-6:], env)
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
