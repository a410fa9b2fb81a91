"""Cluster-native inputs against the real world: registry credentials and cosign keys from Secrets.

``spec.secretRef`` names a ``kubernetes.io/dockerconfigjson`` Secret whose credentials open the
auth registry; ``spec.verify.secretRef`` a Secret whose every ``*.pub`` entry is a key, any one
verifying. Both are read at each pass (a rotated Secret takes effect at the next pass), and
every failure names ``Secret/NS/NAME`` and the Sync field without showing a value.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate.errors import ExitCode
from lockgate.signing import keys, sign
from runner.kube.client import Kube
from runner.pipeline import config
from runner.pipeline import reconcile as pipeline
from runner.pipeline.result import Result
from tests.integration.reconcile_support import cli, configmap, dump, get, namespace, push_tree
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world


@pytest.fixture(autouse=True)
def _no_docker_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Docker config: the only credentials a pass can find are the Secret's."""
    (tmp_path / "docker").mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    return tmp_path / "docker"


def _docker_config(reg: Registry, *, password: str | None = None, host: str | None = None) -> str:
    auth = base64.b64encode(f"{reg.username}:{password or reg.password}".encode()).decode()
    return json.dumps({"auths": {f"http://{host or reg.host}/": {"auth": auth}}})


def _push_authenticated(reg: Registry, docker: Path, repo: str, files: dict[str, str]) -> str:
    (docker / "config.json").write_text(_docker_config(reg))
    try:
        return push_tree(reg, repo, files)
    finally:
        (docker / "config.json").unlink()


def _secret(
    cluster: Cluster, ns: str, name: str, data: dict[str, bytes], secret_type: str = "Opaque"
) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "type": secret_type,
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }
    cluster.kubectl("create", "namespace", ns, check=False)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))


def _sync(name: str, url: str, runner: str, **spec: Any) -> dict[str, Any]:
    verify = spec.pop("verify", {"insecureSkip": True})
    return {
        "apiVersion": "lockgate.dev/v1alpha1",
        "kind": "Sync",
        "metadata": {"name": name},
        "spec": {"url": url, "interval": "1m", "namespace": runner, "verify": verify, **spec},
    }


def _pass(cluster: Cluster, tmp_path: Path, doc: dict[str, Any]) -> Result:
    """Load ``doc`` as a --config file and run its pass in-process (the library the CLI calls)."""
    path = tmp_path / "syncs.yaml"
    path.write_text(yaml.safe_dump(doc))
    (options,) = config.load(path).syncs
    return pipeline.reconcile(options, kube=Kube.from_kubeconfig(cluster.kubeconfig))


def _error(result: Result) -> tuple[ExitCode, str]:
    assert result.error is not None, "the pass succeeded"
    return result.error.exit_code, result.error.message


def test_registry_credentials_come_from_a_dockerconfigjson_secret(
    cluster: Cluster, auth_registry: Registry, unique: str, tmp_path: Path, _no_docker_config: Path
) -> None:
    runner = f"{unique}-r"
    url = _push_authenticated(
        auth_registry,
        _no_docker_config,
        unique,
        {"a.yaml": dump(namespace(unique), configmap("a", unique, {}))},
    )
    anonymous = _pass(cluster, tmp_path, _sync(unique, url, runner))
    assert _error(anonymous)[0] == ExitCode.AUTH  # the registry needs credentials
    _secret(
        cluster,
        runner,
        "pull",
        {".dockerconfigjson": _docker_config(auth_registry).encode()},
        "kubernetes.io/dockerconfigjson",
    )
    result = _pass(cluster, tmp_path, _sync(unique, url, runner, secretRef={"name": "pull"}))
    assert result.error is None, result.error
    assert get(cluster, "configmap", "a", unique) is not None
    assert not any((_no_docker_config).iterdir())  # nothing written to disk


def test_refused_secret_credentials_name_the_secret_and_never_the_password(
    cluster: Cluster, auth_registry: Registry, unique: str, tmp_path: Path, _no_docker_config: Path
) -> None:
    runner = f"{unique}-r"
    url = _push_authenticated(auth_registry, _no_docker_config, unique, {"a.yaml": dump(namespace(unique))})
    wrong = "not-the-password-0451"
    _secret(
        cluster,
        runner,
        "pull",
        {".dockerconfigjson": _docker_config(auth_registry, password=wrong).encode()},
        "kubernetes.io/dockerconfigjson",
    )
    code, message = _error(_pass(cluster, tmp_path, _sync(unique, url, runner, secretRef={"name": "pull"})))
    assert code == ExitCode.AUTH
    assert f"Secret/{runner}/pull (spec.secretRef.name)" in message
    assert wrong not in message and str(auth_registry.password) not in message
    assert get(cluster, "namespace", unique) is None


def test_unusable_credentials_secrets_are_named_with_the_field(
    cluster: Cluster, auth_registry: Registry, unique: str, tmp_path: Path, _no_docker_config: Path
) -> None:
    runner = f"{unique}-r"
    url = _push_authenticated(auth_registry, _no_docker_config, unique, {"a.yaml": dump(namespace(unique))})
    where = f"Secret/{runner}/pull (spec.secretRef.name)"
    good = _docker_config(auth_registry).encode()
    docker = "kubernetes.io/dockerconfigjson"
    bad_auth = json.dumps({"auths": {auth_registry.host: {"auth": "abc"}}})  # incorrect padding
    # the API server itself refuses a dockerconfigjson Secret without .dockerconfigjson or with invalid JSON
    cases: list[tuple[dict[str, bytes] | None, str, str]] = [
        (None, "", f"{where}: not found"),
        ({".dockerconfigjson": good}, "Opaque", f"{where}: is of type Opaque, expected {docker}"),
        (
            {".dockerconfigjson": b'{"credHelpers": {}}'},
            docker,
            f"{where}: .dockerconfigjson has no 'auths' mapping",
        ),
        (
            {".dockerconfigjson": bad_auth.encode()},
            docker,
            f"{where}: .dockerconfigjson auths['{auth_registry.host}']: "
            "the 'auth' field is not base64 of USER:PASSWORD",
        ),
        (
            {".dockerconfigjson": _docker_config(auth_registry, host="other.example").encode()},
            docker,
            f"{where}: .dockerconfigjson has no credentials for {auth_registry.host} "
            "(it has entries for other.example)",
        ),
    ]
    for data, secret_type, expected in cases:
        cluster.kubectl("delete", "secret", "pull", "-n", runner, "--ignore-not-found")
        if data is not None:
            _secret(cluster, runner, "pull", data, secret_type)
        code, message = _error(
            _pass(cluster, tmp_path, _sync(unique, url, runner, secretRef={"name": "pull"}))
        )
        assert (code, message) == (ExitCode.AUTH, expected)
        assert str(auth_registry.password) not in message
    assert get(cluster, "namespace", unique) is None


def _new_key() -> keys.PrivateKey:
    return keys.load_private_key(keys.generate_key_pair(b"pw").private_pem, b"pw")


def test_verify_secret_ref_accepts_a_signature_by_any_of_its_keys_and_rereads_it(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(unique), configmap("a", unique, {}))})
    other, signer = _new_key(), _new_key()
    sign.sign_with_key(url, signer)
    doc = _sync(unique, url, runner, verify={"secretRef": {"name": "keys"}})
    _secret(
        cluster, runner, "keys", {"a.pub": keys.public_key_pem(other.public_key()), "README": b"not a key"}
    )
    code, message = _error(_pass(cluster, tmp_path, doc))
    assert code == ExitCode.VERIFICATION
    assert f"Secret/{runner}/keys[a.pub]" in message and get(cluster, "namespace", unique) is None
    # rotated: the second key is added, and the next pass reads the Secret again
    _secret(
        cluster,
        runner,
        "keys",
        {"a.pub": keys.public_key_pem(other.public_key()), "b.pub": keys.public_key_pem(signer.public_key())},
    )
    result = _pass(cluster, tmp_path, doc)
    assert result.error is None, result.error
    assert result.verified_by == f"key {keys.key_id(signer.public_key())} (Secret/{runner}/keys[b.pub])"
    assert get(cluster, "configmap", "a", unique) is not None


def test_unusable_key_secrets_are_named_with_the_field(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    url = push_tree(registry, unique, {"a.yaml": dump(namespace(unique))})
    sign.sign_with_key(url, _new_key())
    doc = _sync(unique, url, runner, verify={"secretRef": {"name": "keys"}})
    where = f"Secret/{runner}/keys (spec.verify.secretRef.name)"
    code, message = _error(_pass(cluster, tmp_path, doc))
    assert (code, message) == (ExitCode.VERIFICATION, f"{where}: not found")
    _secret(cluster, runner, "keys", {"cosign.key": b"private", "key.txt": b"x"})
    assert _error(_pass(cluster, tmp_path, doc)) == (
        ExitCode.VERIFICATION,
        f"{where}: has no *.pub entries (entries: cosign.key, key.txt)",
    )
    _secret(cluster, runner, "keys", {"bad.pub": b"-----BEGIN NOTHING-----"})
    assert _error(_pass(cluster, tmp_path, doc)) == (
        ExitCode.VERIFICATION,
        f"Secret/{runner}/keys[bad.pub] is not a PEM public key (spec.verify.secretRef.name)",
    )
    assert get(cluster, "namespace", unique) is None


def test_the_cli_reads_credentials_from_the_secret(
    cluster: Cluster, auth_registry: Registry, unique: str, tmp_path: Path, _no_docker_config: Path
) -> None:
    runner = f"{unique}-r"
    url = _push_authenticated(
        auth_registry,
        _no_docker_config,
        unique,
        {"a.yaml": dump(namespace(unique), configmap("a", unique, {}))},
    )
    _secret(
        cluster,
        runner,
        "pull",
        {".dockerconfigjson": _docker_config(auth_registry).encode()},
        "kubernetes.io/dockerconfigjson",
    )
    path = tmp_path / "syncs.yaml"
    path.write_text(yaml.safe_dump(_sync(unique, url, runner, secretRef={"name": "pull"})))
    env = {
        **os.environ,
        "DOCKER_CONFIG": str(_no_docker_config),
        "LOCKGATE_KUSTOMIZE": str(binaries.binary("kustomize")),
    }
    run = cli(cluster, "--config", str(path), "-o", "json", env=env)
    assert run.code == 0, run.err
    assert run.json()[0]["counts"]["created"] == 2
    path.write_text(yaml.safe_dump(_sync(unique, url, runner, secretRef={"name": "missing"})))
    failed = cli(cluster, "--config", str(path), env=env)
    assert (
        failed.code == ExitCode.AUTH
        and f"Secret/{runner}/missing (spec.secretRef.name): not found" in failed.err
    )
    assert "Traceback" not in failed.err
