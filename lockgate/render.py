"""Rendering with kustomize or Helm: one module for CI (``push --render``) and the runner.

CI renders a kustomization or a chart before packing, so the cluster needs neither
program; the runner builds an artifact that still holds a ``kustomization.yaml``. Both
find the programs the same way: ``LOCKGATE_KUSTOMIZE`` / ``LOCKGATE_HELM`` when set (an
explicit choice is never silently replaced by another program), else PATH. The rendered
stream is returned as text; callers write or load it.

What the programs would read is checked first, within ``lockgate.bounded``'s parsing
bounds: the kustomizations (``lockgate.kustomization``, which also refuses remote
references where they are not allowed) and the Helm values files; a chart whose rendered
templates call ``lookup`` is refused unless allowed (``lockgate.helm.lookup``: in CI it
returns nothing). A chart is rendered as the cluster would install it: with its ``crds/``
(marked as Helm keeps them, ``lockgate.helm.crds``) unless ``skip_crds``, and for the
cluster's Kubernetes version and API versions when they are given (``--kube-version``,
``--api-versions``: Helm's own flags, or what a runner attested, ``lockgate.helm.capabilities``).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lockgate import bounded, helmhooks, kustomization
from lockgate.errors import RenderError, UsageError
from lockgate.helm import chartfiles, crds, lookup

log = logging.getLogger("lockgate.render")

KUSTOMIZATION_FILES = kustomization.FILES
CHART_FILE = "Chart.yaml"
TIMEOUT = 600
#: the flags ``HelmOptions`` holds, for messages
HELM_FLAGS = (
    "--values, --set, --release-name, --namespace, --skip-crds, --allow-lookup, --kube-version, "
    "--api-versions and --capabilities-from"
)
Kind = Literal["kustomize", "helm"]


def find_program(name: str, *, purpose: str) -> str:
    """The program from ``LOCKGATE_<NAME>`` or PATH; ``purpose`` says who needs it, in errors."""
    variable = f"LOCKGATE_{name.upper()}"
    chosen = os.environ.get(variable)
    if chosen:
        if not (os.path.isfile(chosen) and os.access(chosen, os.X_OK)):
            raise RenderError(
                f"{purpose} needs {name}, and {variable}={chosen} is not an executable: "
                f"point it at the {name} program or unset it to use {name} from PATH"
            )
        return chosen
    found = shutil.which(name)
    if found is None:
        raise RenderError(f"{purpose} needs {name}, which is not on PATH: install {name} or set {variable}")
    return found


def kind_of(path: Path) -> Kind | None:
    """``kustomize`` for a directory with a kustomization, ``helm`` for a chart, else None."""
    if not path.is_dir():
        return None
    if any((path / name).is_file() for name in KUSTOMIZATION_FILES):
        return "kustomize"
    if (path / CHART_FILE).is_file():
        return "helm"
    return None


#: a proxy nothing listens on (the discard port): with remote references refused, whatever
#: the check could miss still cannot leave the machine over HTTP(S) or Git over HTTP(S)
_NO_NETWORK = {
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "ALL_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "",
    "GIT_TERMINAL_PROMPT": "0",
}


def _run(argv: list[str], what: str, *, env: dict[str, str] | None = None) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    except OSError as exc:
        raise RenderError(f"{what}: cannot run {argv[0]} ({exc.strerror})") from None
    except subprocess.TimeoutExpired:
        raise RenderError(f"{what} did not finish in {TIMEOUT} s") from None
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise RenderError(f"{what} failed (exit {proc.returncode}):\n{tail}")
    return proc.stdout


def kustomize_build(
    directory: Path,
    *,
    purpose: str,
    shown: str | None = None,
    root: Path | None = None,
    allow_remote: bool = True,
) -> str:
    """``kustomize build directory``; ``shown`` is how the directory is named in errors.

    The kustomizations it reads are checked first (``kustomization.check``): with ``root``
    every local path must stay inside it, and without ``allow_remote`` a URL or repository
    is refused (and kustomize runs behind a proxy that goes nowhere)."""
    kustomization.check(directory, root=root, allow_remote=allow_remote)
    program = find_program("kustomize", purpose=purpose)
    env = None if allow_remote else {**os.environ, **_NO_NETWORK}
    return _run([program, "build", str(directory)], f"kustomize build {shown or directory}", env=env)


@dataclass(frozen=True)
class HelmOptions:
    """How a chart is rendered, as ``helm install`` users give it: release name, namespace,
    values files and ``--set`` values, and Helm's ``--skip-crds``, ``--kube-version`` and
    ``--api-versions``. Test hooks are skipped (``helm template --skip-tests``): a GitOps
    apply would otherwise deploy ``helm create``'s test Pod."""

    values: tuple[Path, ...] = ()
    set_values: tuple[str, ...] = ()
    release: str | None = None
    namespace: str | None = None
    #: leave the charts' ``crds/`` out (Helm's ``--skip-crds``)
    skip_crds: bool = False
    #: render a chart that calls ``lookup`` (an empty result in CI), with a warning
    allow_lookup: bool = False
    #: ``.Capabilities.KubeVersion`` (``v1.33.1``), else Helm's default
    kube_version: str | None = None
    #: added to ``.Capabilities.APIVersions`` (``group/version`` and ``group/version/Kind``)
    api_versions: tuple[str, ...] = ()

    @property
    def given(self) -> bool:
        return bool(
            self.values
            or self.set_values
            or self.release
            or self.namespace
            or self.skip_crds
            or self.allow_lookup
            or self.kube_version
            or self.api_versions
        )


def helm_template(chart: Path, *, purpose: str, options: HelmOptions = HelmOptions()) -> str:
    """``helm template RELEASE chart --skip-tests --include-crds ...``; the release defaults to
    the chart's directory. A rendered ``lookup`` is refused first, unless ``allow_lookup``."""
    for file in options.values:
        if not file.is_file():
            raise UsageError(f"--values {file}: no such file")
    for pair in options.set_values:
        if "=" not in pair:
            raise UsageError(f"--set {pair!r}: expected KEY=VALUE (helm's --set syntax)")
    for file in (chart / "values.yaml", *options.values):
        _check_values(file)
    _check_lookup(chart, options)
    release = options.release or chart.resolve().name
    argv = [find_program("helm", purpose=purpose), "template", release, str(chart), "--skip-tests"]
    if not options.skip_crds:
        argv.append("--include-crds")
    if options.namespace:
        argv += ["--namespace", options.namespace]
    for file in options.values:
        argv += ["--values", str(file)]
    for pair in options.set_values:
        argv += ["--set", pair]
    # one argument each, "--flag=value": a value can never be read as another flag
    if options.kube_version:
        argv.append(f"--kube-version={options.kube_version}")
    argv += [f"--api-versions={api_version}" for api_version in options.api_versions]
    text = _run(argv, f"helm template {chart}")
    if options.skip_crds:
        return text
    text, kept = crds.mark(text)
    if kept:
        log.warning(
            "notice: %s: %d CRD(s) from crds/ are applied first and kept as Helm keeps them "
            "(helm.sh/resource-policy: keep: never pruned unless the Sync sets pruneCRDs): %s",
            chart,
            len(kept),
            ", ".join(kept),
        )
    return text


def _check_lookup(chart: Path, options: HelmOptions) -> None:
    """Refuse a chart whose rendered templates call ``lookup`` (or, allowed, warn of it)."""
    allow = options.allow_lookup
    values = [(str(file), file.read_text(encoding="utf-8", errors="replace")) for file in options.values]
    try:
        found = lookup.find(chartfiles.files(chart), values=values, set_values=options.set_values)
    except ValueError as exc:  # gotemplate.TemplateSyntaxError: helm would refuse it too
        raise RenderError(f"{chart}: {exc}: fix the template (helm template refuses it too)") from None
    if not found:
        return
    given = {shown for shown, _ in values} | {"--set"}  # named as the user gave them
    listed = [str(finding) if finding.file in given else f"{chart}/{finding}" for finding in found]
    if allow:
        log.warning(
            "warning: %s calls lookup, which reads the live cluster: in CI (--allow-lookup) it returns "
            "an empty map, so these render as for a cluster without the objects they read: %s",
            chart,
            "; ".join(listed),
        )
        return
    raise RenderError(
        f"{chart}: the chart calls lookup, which reads the live cluster; helm template runs without "
        "one (CI), where lookup returns an empty map, so the artifact would not hold what the chart "
        "renders in the cluster. Give the value through values (or the Sync's postBuild "
        "substitution) instead, or pass --allow-lookup to render with the empty result",
        details=listed,
    )


def _check_values(file: Path) -> None:
    """A values file helm will read, within the parsing bounds (helm's own decoder allows more)."""
    if not file.is_file():
        return
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RenderError(f"{file}: cannot read ({exc})") from None
    bounded.yaml_documents(text, str(file))


def helm_hooks(text: str) -> tuple[list[str], list[str]]:
    """``Kind/name (hook)`` of each rendered object that is a Helm hook: those the runner runs
    in its phases (``lockgate.helmhooks``), and those it never applies (delete hooks)."""
    run: list[str] = []
    never: list[str] = []
    for _, doc in bounded.yaml_documents(text, "helm template output"):
        if not isinstance(doc, dict):
            continue
        meta = doc.get("metadata") or {}
        hook = (meta.get("annotations") or {}).get(helmhooks.HOOK) if isinstance(meta, dict) else None
        if hook:
            (run if helmhooks.runs(hook) else never).append(f"{doc.get('kind')}/{meta.get('name')} ({hook})")
    return run, never


def render(path: Path, *, purpose: str, helm: HelmOptions = HelmOptions()) -> str:
    """Render a kustomization or a chart at ``path`` to one YAML stream."""
    kind = kind_of(path)
    if kind is None:
        raise UsageError(f"{purpose}: {path} holds neither a kustomization.yaml nor a Chart.yaml")
    if helm.given and kind != "helm":
        raise UsageError(f"{HELM_FLAGS} only apply to Helm charts (a directory with Chart.yaml)")
    if kind == "kustomize":
        return kustomize_build(path, purpose=purpose)
    text = helm_template(path, purpose=purpose, options=helm)
    run, never = helm_hooks(text)
    if run or never:
        # stderr (logging's last resort), not an error: the user should know, nothing is wrong
        log.warning(
            "notice: %s: %d Helm hook object(s) keep their annotations: the runner runs pre-install, "
            "pre-upgrade and pre-rollback hooks before the other objects, post-* hooks once they "
            "are healthy%s%s",
            path,
            len(run) + len(never),
            f": {', '.join(run)}" if run else "",
            f"; never applied: {', '.join(never)}" if never else "",
        )
    return text
