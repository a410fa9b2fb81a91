"""Pinned versions of every third-party binary the world builds from the Go module proxy.

Changing a pin changes the cache key, so only that component is rebuilt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

KUBERNETES_VERSION = "v1.36.3"
#: the staging modules (k8s.io/api, client-go...) are published as v0.<minor>.<patch>
KUBERNETES_STAGING_VERSION = "v0.36.3"


@dataclass(frozen=True)
class GoComponent:
    """A Go program built from one module at one version.

    ``programs`` maps the binary name to its main package. ``ldflags`` are added to the
    link (version stamps). ``staging`` maps relative ``replace`` targets in the upstream
    go.mod to the published version that stands in for them.
    """

    name: str
    module: str
    version: str
    programs: dict[str, str]
    ldflags: tuple[str, ...] = ()
    staging_version: str | None = None
    skip_replaces: tuple[str, ...] = field(default=())
    #: files of the module replaced at build time (path inside the module -> Go source)
    overlay: tuple[tuple[str, str], ...] = ()
    #: built only when named (``make bench``), not by ``make setup``/``make test``
    bench_only: bool = False
    #: (module, version upstream requires, version built instead): for a dependency version
    #: the proxy refuses ("not available"); each one is named in the component's comment
    substitutes: tuple[tuple[str, str, str], ...] = ()
    #: Go build tags (``go build -tags``)
    tags: tuple[str, ...] = ()
    #: built with cgo (a C library linked in, e.g. SQLite); every other build sets CGO_ENABLED=0
    cgo: bool = False
    #: Go files of our own written into the build's module (path -> source): a ``programs``
    #: entry starting ``./`` is a main package among them, importing the pinned module
    sources: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        return f"{self.name}-{self.version}"


_K8S_VERSION_PKGS = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
_major, _minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
_K8S_LDFLAGS = tuple(
    f"-X {pkg}.{var}={val}"
    for pkg in _K8S_VERSION_PKGS
    for var, val in (
        ("gitVersion", KUBERNETES_VERSION),
        ("gitMajor", _major),
        ("gitMinor", _minor),
        ("gitTreeState", "clean"),
        ("buildDate", "1970-01-01T00:00:00Z"),
    )
)

_FLUX_NO_MANIFESTS = """package main

import "errors"

func writeEmbeddedManifests(dir string) error {
	return errors.New("this flux build (lockgate test world) carries no install manifests")
}
"""

_TSA_METRICS_ON_LOOPBACK = """package server

import (
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewPrometheusServer serves prometheus metrics on $TSA_METRICS_ADDR, by default a free
// loopback port (lockgate test world build; upstream listens on ":2112").
func NewPrometheusServer(readTimeout, writeTimeout time.Duration) *http.Server {
	addr := os.Getenv("TSA_METRICS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	return &http.Server{
		Addr:         addr,
		ReadTimeout:  readTimeout,
		WriteTimeout: writeTimeout,
		Handler:      promhttp.Handler(),
	}
}
"""

_ALERTMANAGER_NO_UI = """package ui

import (
	"net/http"

	"github.com/prometheus/common/route"
)

// Register answers the web UI's paths with 404: the UI's assets are built by npm in
// Alertmanager's release, not shipped in the module (lockgate test world build; the v2 API
// is served as upstream).
func Register(r *route.Router) {
	r.Get("/", http.NotFound)
}
"""

COMPONENTS: dict[str, GoComponent] = {
    c.name: c
    for c in (
        GoComponent(
            name="kubernetes",
            module="k8s.io/kubernetes",
            version=KUBERNETES_VERSION,
            programs={
                "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
                "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
                "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
                "kubectl": "k8s.io/kubernetes/cmd/kubectl",
            },
            ldflags=_K8S_LDFLAGS,
            staging_version=KUBERNETES_STAGING_VERSION,
            skip_replaces=("k8s.io/sample-cli-plugin",),
        ),
        GoComponent(
            name="etcd",
            module="go.etcd.io/etcd/server/v3",
            version="v3.6.8",
            programs={"etcd": "go.etcd.io/etcd/server/v3"},
            staging_version="v3.6.8",
            skip_replaces=("go.etcd.io/etcd", "go.etcd.io/tests/v3"),
        ),
        GoComponent(
            name="kwok",
            module="sigs.k8s.io/kwok",
            version="v0.8.0",
            programs={"kwok": "sigs.k8s.io/kwok/cmd/kwok"},
        ),
        GoComponent(
            name="kustomize",
            module="sigs.k8s.io/kustomize/kustomize/v5",
            version="v5.8.2",
            programs={"kustomize": "sigs.k8s.io/kustomize/kustomize/v5"},
        ),
        GoComponent(
            name="helm",
            module="helm.sh/helm/v3",
            version="v3.22.0",
            programs={"helm": "helm.sh/helm/v3/cmd/helm"},
        ),
        GoComponent(
            name="oras",
            module="oras.land/oras",
            version="v1.3.6",
            programs={"oras": "oras.land/oras/cmd/oras"},
        ),
        GoComponent(
            name="flux",
            module="github.com/fluxcd/flux2/v2",
            version="v2.9.5",
            programs={"flux": "github.com/fluxcd/flux2/v2/cmd/flux"},
            ldflags=("-X main.VERSION=2.9.5",),
            # the install manifests embedded by `flux install` are generated by flux's own
            # release build, not shipped in the module; the test world only needs the
            # artifact commands, so this build answers `flux install` with an error instead
            overlay=(("cmd/flux/manifests.embed.go", _FLUX_NO_MANIFESTS),),
        ),
        GoComponent(
            name="cosign",
            module="github.com/sigstore/cosign/v3",
            version="v3.1.3",
            programs={"cosign": "github.com/sigstore/cosign/v3/cmd/cosign"},
        ),
        # the local Sigstore stack for the keyless end-to-end test (tests/world/sigstore.py):
        # Fulcio (ephemeral CA), TesseraCT (its CT log, POSIX storage), Rekor v2 (rekor-tiles,
        # POSIX storage) and a timestamp authority (Rekor v2 entries carry no integrated time,
        # so a verifier needs a signed timestamp). Newer releases of rekor-tiles (v2.4+) and
        # timestamp-authority (v2.1.4+) need Go 1.27.
        GoComponent(
            name="fulcio",
            module="github.com/sigstore/fulcio",
            version="v1.8.8",
            programs={"fulcio-server": "github.com/sigstore/fulcio"},
            # three of fulcio's tests import chainguard.dev/sdk, which the proxy no longer
            # serves (403 "not available"), and `go mod tidy` resolves tests of dependencies:
            # the build replaces those test files with empty ones
            overlay=tuple(
                (path, f"package {package}\n")
                for path, package in (
                    ("pkg/server/grpc_server_test.go", "server"),
                    ("pkg/identity/chainguard/principal_test.go", "chainguard"),
                    ("pkg/identity/chainguard/issuer_test.go", "chainguard"),
                )
            ),
        ),
        GoComponent(
            name="tesseract",
            module="github.com/transparency-dev/tesseract",
            version="v0.1.1",
            programs={"tesseract-posix": "github.com/transparency-dev/tesseract/cmd/tesseract/posix"},
        ),
        GoComponent(
            name="rekor-tiles",
            module="github.com/sigstore/rekor-tiles/v2",
            version="v2.3.0",
            programs={"rekor-server-posix": "github.com/sigstore/rekor-tiles/v2/cmd/rekor-server/posix"},
        ),
        GoComponent(
            name="timestamp-authority",
            module="github.com/sigstore/timestamp-authority/v2",
            version="v2.1.3",
            programs={"timestamp-server": "github.com/sigstore/timestamp-authority/v2/cmd/timestamp-server"},
            # upstream serves its metrics on the fixed ":2112" (every interface, and a clash
            # between two worlds): this build binds them to loopback on a free port
            overlay=(("pkg/server/prometheus.go", _TSA_METRICS_ON_LOOPBACK),),
        ),
        # the two controllers Flux v2.9.5 ships for OCIRepository + Kustomization (flux2's
        # manifests/bases name source-controller v1.9.5 and kustomize-controller v1.9.5): the
        # Flux that lockgate import and adopt take over from (tests/world/flux.py,
        # tests/integration/test_flux_*.py) and the peer of ``lockgate serve`` in
        # bench/bench_serve.py. Part of the world, so built by make setup. Their go.mod replaces
        # ./api with the local directory, which the module zip lacks: the staging version
        # points it at the published api module of the same release. CRDs come from the
        # same modules (config/crd/bases).
        GoComponent(
            name="source-controller",
            module="github.com/fluxcd/source-controller",
            version="v1.9.5",
            programs={"source-controller": "github.com/fluxcd/source-controller"},
            staging_version="v1.9.5",
            # the proxy answers 403 "This module version is not available" for
            # github.com/fluxcd/pkg/artifact v0.18.2 and v0.18.3 (the artifact server and
            # storage): v0.18.1 stands in; in fluxcd/pkg no Go file under artifact/ changed
            # after v0.18.1 (only go.mod requirements, which source-controller's own go.mod
            # already pins). Two test files import github.com/fluxcd/pkg/helmtestserver
            # v0.40.2, also refused, and `go mod tidy` resolves tests: they are emptied.
            substitutes=(("github.com/fluxcd/pkg/artifact", "v0.18.3", "v0.18.1"),),
            overlay=tuple(
                (f"internal/controller/{name}_controller_test.go", "package controller\n")
                for name in ("helmchart", "helmrepository")
            ),
        ),
        GoComponent(
            name="kustomize-controller",
            module="github.com/fluxcd/kustomize-controller",
            version="v1.9.5",
            programs={"kustomize-controller": "github.com/fluxcd/kustomize-controller"},
            staging_version="v1.9.5",
        ),
        # the SOPS CLI that encrypts the decryption tests' fixtures (lockgate decrypts them
        # itself, tests/integration/test_reconcile_decrypt.py); age comes from Debian
        GoComponent(
            name="sops",
            module="github.com/getsops/sops/v3",
            version="v3.13.3",
            programs={"sops": "github.com/getsops/sops/v3/cmd/sops"},
        ),
        # the real forge of the forge tests (tests/integration/test_forge_*.py): commit
        # statuses and pull requests through its REST API, which needs none of its web
        # assets (no `bindata` tag: templates would be read from disk, the API never
        # renders them). SQLite is mattn/go-sqlite3, a cgo package, hence the cgo build.
        # v1.27.x publishes the module as gitea.dev, which the proxy refuses under this path.
        GoComponent(
            name="gitea",
            module="code.gitea.io/gitea",
            version="v1.26.0",
            programs={"gitea": "code.gitea.io/gitea"},
            ldflags=("-X main.Version=1.26.0",),
            tags=("sqlite", "sqlite_unlock_notify"),
            cgo=True,
        ),
        # the real Alertmanager the `alertmanager` notification provider posts to
        # (tests/integration/test_notify_alerts.py asserts through its v2 API)
        GoComponent(
            name="alertmanager",
            module="github.com/prometheus/alertmanager",
            version="v0.35.0",
            programs={"alertmanager": "github.com/prometheus/alertmanager/cmd/alertmanager"},
            ldflags=("-X github.com/prometheus/common/version.Version=0.35.0",),
            # ui/web.go embeds app/dist, which npm builds for the release: not in the module
            overlay=(("ui/web.go", _ALERTMANAGER_NO_UI), ("ui/web_test.go", "package ui\n")),
        ),
        # the linter of the workflows, and through them of action.yml's inputs
        # (tests/unit/action/test_github_action_yml.py)
        GoComponent(
            name="actionlint",
            module="github.com/rhysd/actionlint",
            version="v1.7.12",
            programs={"actionlint": "github.com/rhysd/actionlint/cmd/actionlint"},
            ldflags=("-X github.com/rhysd/actionlint.version=v1.7.12",),
        ),
        # the registry with the OCI referrers API (tests/world/referrers_registry.py): a main of
        # our own (tests/world/referrers_registry.go) serving go-containerregistry's registry
        # with WithReferrersSupport(true), behind a front that pages the referrers list, answers
        # ETags and corrects artifactType (the docstring of the .go file says why)
        GoComponent(
            name="referrers-registry",
            module="github.com/google/go-containerregistry",
            version="v0.22.1",
            programs={"referrers-registry": "./cmd/referrers-registry"},
            sources=(
                (
                    "cmd/referrers-registry/main.go",
                    (Path(__file__).with_name("referrers_registry.go")).read_text(),
                ),
            ),
        ),
    )
}

@dataclass(frozen=True)
class GoModule:
    """A module read for its data files (a controller's CRDs), downloaded, never built."""

    name: str
    module: str
    version: str


MODULES: dict[str, GoModule] = {
    m.name: m
    for m in (
        # the CRDs of Alert, Provider and Receiver (config/crd/bases): lockgate import reads
        # these objects from the cluster; the controller itself never runs here. Flux v2.9.5
        # ships v1.9.4 (flux2's manifests/bases/notification-controller), which the proxy
        # refuses (403 "not available"); v1.9.3 stands in: its api module differs from
        # v1.9.4's in go.mod requirements only, so the CRDs are the same
        GoModule("notification-controller", "github.com/fluxcd/notification-controller", "v1.9.3"),
    )
}

#: the components ``make bench`` builds on top of the world's
BENCH_COMPONENTS = tuple(name for name, c in COMPONENTS.items() if c.bench_only)
