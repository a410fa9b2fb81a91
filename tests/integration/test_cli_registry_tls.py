"""``--ca-file``, ``--cert-file`` and ``--key-file`` on the commands beyond push and pull: the
runner's ``reconcile`` (a URL and ``--config``) and ``rollback``, ``lockgate copy`` (one set per
side, as ``oras copy`` has them: ``--from-ca-file``... ``--to-key-file``) and ``lockgate fleet``,
against the world's registry behind a private CA that verifies client certificates.

Each command is run as a user runs it (a child process); without the flags each fails with the
registry and the flag to pass named.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from lockgate import registry as oci_registry
from lockgate.errors import ExitCode
from lockgate.signing import attest, keys
from tests.integration.history_support import lockgate
from tests.integration.reconcile_support import LOCKGATE, configmap, dump, get, namespace
from tests.integration.registry_tls_support import TLSWorld, push_files, tls_world
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world
__all__ = ["tls_world"]


@pytest.fixture(autouse=True)
def _no_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No Docker login, proxy or extra roots from the environment: only the flags count."""
    (tmp_path / "docker").mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)


def _side(world: TLSWorld, prefix: str) -> list[str]:
    """``world.tls_flags()`` for one side of ``lockgate copy``."""
    return [f.replace("--", f"--{prefix}", 1) if f.startswith("--") else f for f in world.tls_flags()]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*LOCKGATE, *args], capture_output=True, text=True, timeout=120, check=False)


def test_reconcile_and_rollback_take_the_tls_flags(
    cluster: Cluster, tls_world: TLSWorld, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    files = {v: {"a.yaml": dump(namespace(unique), configmap("c", unique, {"v": v}))} for v in ("v0", "v1")}
    first, second = (push_files(tls_world, unique, files[v], v) for v in ("v0", "v1"))
    common = ["--name", unique, "-n", runner, "--insecure-skip-verify"]

    refused = lockgate(cluster, "reconcile", first, *common)
    assert refused.code == ExitCode.REGISTRY, refused.err
    assert f"registry {tls_world.registry.host}: its TLS certificate does not verify" in refused.err
    assert "--ca-file (or SSL_CERT_FILE)" in refused.err and "Traceback" not in refused.err
    assert "(spec.insecure if the registry serves plain http)" in refused.err  # reconcile has no --insecure
    assert get(cluster, "namespace", unique) is None

    applied = lockgate(cluster, "reconcile", first, *common, *tls_world.tls_flags())
    assert applied.code == 0, applied.err
    assert get(cluster, "configmap", "c", unique)["data"] == {"v": "v0"}  # type: ignore[index]

    # with --config the flags stand for each Sync that names no certSecretRef
    doc = {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": unique},
        "spec": {"url": second, "interval": "5m", "namespace": runner, "verify": {"insecureSkip": True}},
    }
    syncs = tmp_path / "syncs.yaml"
    syncs.write_text(yaml.safe_dump(doc))
    newer = lockgate(cluster, "reconcile", "--config", str(syncs), *tls_world.tls_flags())
    assert newer.code == 0, newer.err
    assert get(cluster, "configmap", "c", unique)["data"] == {"v": "v1"}  # type: ignore[index]

    back = ["rollback", unique, "--config", str(syncs), "--to", first.rsplit("@", 1)[1]]
    without = lockgate(cluster, *back)
    assert without.code == ExitCode.REGISTRY and "does not verify" in without.err, without.err
    rolled = lockgate(cluster, *back, *tls_world.tls_flags(), "-o", "json")
    assert rolled.code == 0, rolled.err
    assert rolled.json()["rolledBackTo"].endswith(first.rsplit("@", 1)[1])
    assert get(cluster, "configmap", "c", unique)["data"] == {"v": "v0"}  # type: ignore[index]


def test_copy_takes_tls_flags_per_side(tls_world: TLSWorld, registry: Registry, unique: str) -> None:
    source = push_files(tls_world, unique, {"a.yaml": dump(configmap("c", "default", {}))}).split("@")[0]
    mirror = tls_world.registry.oci(f"{unique}-mirror", ":v1")

    # the source's flags do not reach the destination: a TLS destination without --to-* is refused
    one_side = _run("copy", source, mirror, *_side(tls_world, "from-"), "-q")
    assert one_side.returncode == ExitCode.REGISTRY, one_side.stderr
    assert f"registry {tls_world.registry.host}: its TLS certificate does not verify" in one_side.stderr
    assert "--to-ca-file (or SSL_CERT_FILE)" in one_side.stderr

    both = [*_side(tls_world, "from-"), *_side(tls_world, "to-")]
    copied = _run("copy", source, mirror, *both, "-q", "-o", "json")
    assert copied.returncode == 0, copied.stderr
    digest = json.loads(copied.stdout)["artifacts"][0]["digest"]
    mirrored = oci_registry.parse(mirror)
    over_tls = oci_registry.RegistryClient.for_reference(mirrored, options=tls_world.options())
    assert over_tls.resolve(mirrored) == digest

    # from the TLS registry to the world's plain-http one: --from-* only
    plain = registry.oci(unique, ":v1")
    back = _run("copy", mirror, plain, *_side(tls_world, "from-"), "-q")
    assert back.returncode == 0, back.stderr
    copied_back = oci_registry.parse(plain)
    assert oci_registry.RegistryClient.for_reference(copied_back).resolve(copied_back) == digest


def test_fleet_reads_attestations_over_mtls(tls_world: TLSWorld, unique: str, tmp_path: Path) -> None:
    url = push_files(tls_world, unique, {"a.yaml": dump(configmap("c", "default", {}))})
    pair = keys.generate_key_pair(b"pw")
    key = keys.load_private_key(pair.private_pem, b"pw")
    (tmp_path / "eu-1.pub").write_bytes(pair.public_pem)
    client = oci_registry.RegistryClient.for_reference(oci_registry.parse(url), options=tls_world.options())
    at = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    predicate = attest.health_predicate(
        cluster="eu-1", sync="app", revision="v1", healthy=True, at=at, objects={"ConfigMap": 1}
    )
    attest.attest_with_key(url, key, predicate_type=attest.HEALTHY, predicate=predicate, client=client)
    repository = url.split(":v1")[0]
    flags = ["--key", str(tmp_path / "eu-1.pub"), "-o", "json"]

    refused = _run("fleet", repository, *flags)
    assert refused.returncode == ExitCode.REGISTRY, refused.stderr
    assert "--ca-file (or SSL_CERT_FILE)" in refused.stderr

    shown = _run("fleet", repository, *flags, *tls_world.tls_flags())
    assert shown.returncode == 0, shown.stderr
    (row,) = json.loads(shown.stdout)["revisions"]
    assert row["clusters"]["eu-1"]["state"] == "healthy"
    assert row["clusters"]["eu-1"]["since"] == "2026-01-02T03:04:05Z"
