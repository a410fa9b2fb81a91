"""Pinned versions of every third-party binary the world builds from the Go module proxy.

Changing a pin changes the cache key, so only that component is rebuilt.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
        ),
        GoComponent(
            name="cosign",
            module="github.com/sigstore/cosign/v3",
            version="v3.1.3",
            programs={"cosign": "github.com/sigstore/cosign/v3/cmd/cosign"},
        ),
    )
}
