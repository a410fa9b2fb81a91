"""Reading and merging kubeconfigs as kubectl does: precedence, relative paths, auth methods."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate.errors import UsageError
from runner.kube import kubeconfig

V1 = "client.authentication.k8s.io/v1"


def write(path: Path, **doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", **doc}))
    return path


def cluster(name: str, server: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "cluster": {"server": server, **fields}}


def user(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "user": fields}


def context(name: str, cluster_name: str, user_name: str = "") -> dict[str, Any]:
    return {"name": name, "context": {"cluster": cluster_name, "user": user_name}}


def env(*paths: Path | str) -> dict[str, str]:
    return {"KUBECONFIG": os.pathsep.join(str(p) for p in paths), "HOME": "/nonexistent"}


def one_file(tmp_path: Path, user_fields: dict[str, Any], **cluster_fields: Any) -> Path:
    return write(
        tmp_path / "config",
        clusters=[cluster("c", "https://c.example:6443", **cluster_fields)],
        users=[user("u", **user_fields)],
        contexts=[context("ctx", "c", "u")],
        **{"current-context": "ctx"},
    )


# ---- merging $KUBECONFIG ---------------------------------------------------------------
def test_cluster_user_and_context_from_three_files(tmp_path: Path) -> None:
    clusters = write(tmp_path / "a" / "clusters", clusters=[cluster("c", "https://c:6443")])
    users = write(tmp_path / "b" / "users", users=[user("u", token="t0k")])
    contexts = write(tmp_path / "c" / "ctx", contexts=[context("x", "c", "u")], **{"current-context": "x"})
    found = kubeconfig.load(None, environ=env(clusters, users, contexts))
    assert found.server == "https://c:6443"
    assert found.token == "t0k"
    assert "context 'x'" in found.origin


def test_the_first_file_defining_a_name_wins_as_a_whole_entry(tmp_path: Path) -> None:
    first = write(
        tmp_path / "first",
        clusters=[cluster("c", "https://first:6443")],
        users=[user("u", token="first")],
    )
    second = write(
        tmp_path / "second",
        clusters=[cluster("c", "https://second:6443", **{"insecure-skip-tls-verify": True})],
        users=[user("u", token="second"), user("v", token="only-here")],
        contexts=[context("x", "c", "u"), context("y", "c", "v")],
        **{"current-context": "x"},
    )
    found = kubeconfig.load(None, environ=env(first, second))
    assert (found.server, found.token, found.cluster.insecure) == ("https://first:6443", "first", False)
    assert kubeconfig.load(None, "y", environ=env(first, second)).token == "only-here"


def test_current_context_comes_from_the_first_file_that_sets_it(tmp_path: Path) -> None:
    base = write(
        tmp_path / "base",
        clusters=[cluster("c", "https://c:6443")],
        users=[user("a", token="a"), user("b", token="b")],
        contexts=[context("a", "c", "a"), context("b", "c", "b")],
    )
    sets_a = write(tmp_path / "sets-a", **{"current-context": "a"})
    sets_b = write(tmp_path / "sets-b", **{"current-context": "b"})
    assert kubeconfig.load(None, environ=env(base, sets_b, sets_a)).token == "b"
    assert kubeconfig.load(None, environ=env(sets_a, base, sets_b)).token == "a"
    assert kubeconfig.load(None, "b", environ=env(sets_a, base)).token == "b"


def test_empty_entries_and_missing_files_are_skipped(tmp_path: Path) -> None:
    config = one_file(tmp_path, {"token": "t"})
    listed = os.pathsep.join(["", str(tmp_path / "missing"), "", str(config), ""])
    found = kubeconfig.load(None, environ={"KUBECONFIG": listed})
    assert found.token == "t"


def test_relative_paths_are_resolved_against_the_file_holding_them(tmp_path: Path) -> None:
    clusters = write(
        tmp_path / "clusters" / "config",
        clusters=[cluster("c", "https://c:6443", **{"certificate-authority": "pki/ca.crt"})],
    )
    users = write(
        tmp_path / "users" / "config",
        users=[
            user("u", **{"client-certificate": "u.crt", "client-key": "../keys/u.key"}),
            user("t", tokenFile="tokens/t"),
        ],
        contexts=[context("x", "c", "u"), context("y", "c", "t")],
        **{"current-context": "x"},
    )
    found = kubeconfig.load(None, environ=env(users, clusters))
    assert found.cluster.ca == tmp_path / "clusters" / "pki" / "ca.crt"
    assert found.client_cert == tmp_path / "users" / "u.crt"
    assert found.client_key == tmp_path / "users" / ".." / "keys" / "u.key"
    assert kubeconfig.load(None, "y", environ=env(users, clusters)).token_file == (
        tmp_path / "users" / "tokens" / "t"
    )


def test_an_explicit_kubeconfig_means_that_file_only(tmp_path: Path) -> None:
    other = write(tmp_path / "other", clusters=[cluster("c", "https://other:6443")])
    explicit = write(tmp_path / "explicit", contexts=[context("x", "c")], **{"current-context": "x"})
    with pytest.raises(UsageError, match="names cluster 'c', which none defines"):
        kubeconfig.load(explicit, environ=env(other))
    with pytest.raises(UsageError, match="does not exist: check --kubeconfig"):
        kubeconfig.load(tmp_path / "nope", environ=env(other))


def test_without_any_file_it_is_the_in_cluster_service_account(tmp_path: Path) -> None:
    environ = {"KUBECONFIG": str(tmp_path / "missing"), "KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    found = kubeconfig.load(None, environ=environ, sa_dir=tmp_path / "sa")
    assert found.server == "https://10.0.0.1:443"
    assert (found.cluster.ca, found.token_file) == (tmp_path / "sa" / "ca.crt", tmp_path / "sa" / "token")
    with pytest.raises(UsageError, match="not running in a cluster"):
        kubeconfig.load(None, environ={"HOME": str(tmp_path)})


def test_ipv6_service_host_is_bracketed(tmp_path: Path) -> None:
    environ = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"}
    assert kubeconfig.in_cluster(directory=tmp_path, environ=environ).server == "https://[fd00::1]:6443"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param({}, "has no current-context", id="no-current-context"),
        pytest.param({"current-context": "gone"}, "no context named 'gone'", id="unknown-context"),
        pytest.param(
            {
                "current-context": "x",
                "contexts": [context("x", "c", "u")],
                "clusters": [cluster("c", "https://c")],
            },
            "names user 'u', which none defines",
            id="unknown-user",
        ),
        pytest.param(
            {
                "current-context": "x",
                "contexts": [context("x", "c")],
                "clusters": [{"name": "c", "cluster": {}}],
            },
            "has no server",
            id="no-server",
        ),
        pytest.param(
            {
                "current-context": "x",
                "contexts": [context("x", "c")],
                "clusters": [cluster("c", "https://c", **{"proxy-url": "http://proxy:3128"})],
            },
            "set HTTPS_PROXY",
            id="proxy-url",
        ),
    ],
)
def test_broken_kubeconfigs_say_what_to_fix(tmp_path: Path, doc: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        kubeconfig.load(write(tmp_path / "config", **doc))


def test_not_yaml_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "config"
    bad.write_text("clusters: [\n")
    with pytest.raises(UsageError, match="is not valid YAML"):
        kubeconfig.load(bad)


# ---- TLS material and auth methods -----------------------------------------------------
def test_inline_data_stays_in_memory_as_bytes(tmp_path: Path) -> None:
    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    config = one_file(
        tmp_path,
        {"client-certificate-data": b64("CERT"), "client-key-data": b64("KEY"), "client-key": "ignored.key"},
        **{"certificate-authority-data": b64("CA")},
    )
    found = kubeconfig.load(config)
    assert (found.cluster.ca, found.client_cert, found.client_key) == (b"CA", b"CERT", b"KEY")
    assert sorted(tmp_path.iterdir()) == [config]


def test_secrets_are_left_out_of_the_repr(tmp_path: Path) -> None:
    config = one_file(
        tmp_path,
        {
            "client-key-data": base64.b64encode(b"PRIVATE-KEY").decode(),
            "client-certificate-data": base64.b64encode(b"CERT").decode(),
            "exec": {
                "apiVersion": V1,
                "command": "plugin",
                "interactiveMode": "Never",
                "env": [{"name": "SECRET", "value": "env-secret"}],
            },
        },
    )
    text = repr(kubeconfig.load(config))
    assert "plugin" in text
    for secret in ("PRIVATE-KEY", "env-secret", "UFJJVkFURS1LRVk"):
        assert secret not in text


def test_bad_base64_names_the_field_not_the_value(tmp_path: Path) -> None:
    config = one_file(tmp_path, {"client-key-data": "not*base64*secret"})
    with pytest.raises(UsageError, match="client-key-data of user 'u' is not valid base64") as raised:
        kubeconfig.load(config)
    assert "secret" not in str(raised.value)


def test_token_wins_over_token_file(tmp_path: Path) -> None:
    found = kubeconfig.load(one_file(tmp_path, {"token": "t", "tokenFile": "f"}))
    assert (found.token, found.token_file) == ("t", None)


def test_basic_auth(tmp_path: Path) -> None:
    found = kubeconfig.load(one_file(tmp_path, {"username": "admin", "password": "pw"}))
    assert found.basic == ("admin", "pw")
    assert "pw" not in repr(found)


def test_two_auth_methods_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"more than one authentication method \(token, basic\)"):
        kubeconfig.load(one_file(tmp_path, {"token": "t", "username": "admin", "password": "pw"}))


def test_auth_provider_points_to_exec_plugins(tmp_path: Path) -> None:
    config = one_file(tmp_path, {"auth-provider": {"name": "gcp", "config": {"access-token": "secret"}}})
    with pytest.raises(UsageError, match=r"auth-provider 'gcp'.*removed.*1\.26.*exec plugin") as raised:
        kubeconfig.load(config)
    assert "secret" not in str(raised.value)


def test_exec_config_is_read_and_a_relative_command_is_relative_to_the_file(tmp_path: Path) -> None:
    spec = {
        "apiVersion": V1,
        "command": "./bin/plugin",
        "args": ["token", "--cluster", "prod"],
        "env": [{"name": "A", "value": "1"}, {"name": "B"}],
        "installHint": "brew install plugin",
        "provideClusterInfo": True,
        "interactiveMode": "Never",
    }
    extension = {"audience": "prod"}
    config = write(
        tmp_path / "kube" / "config",
        clusters=[
            {
                "name": "c",
                "cluster": {
                    "server": "https://c",
                    "extensions": [{"name": kubeconfig.EXEC_EXTENSION, "extension": extension}],
                },
            }
        ],
        users=[user("u", exec=spec), user("path", exec={**spec, "command": "aws"})],
        contexts=[context("x", "c", "u"), context("y", "c", "path")],
        **{"current-context": "x"},
    )
    found = kubeconfig.load(config)
    assert found.exec == kubeconfig.ExecConfig(
        command=str(tmp_path / "kube" / "bin" / "plugin"),
        api_version=V1,
        args=("token", "--cluster", "prod"),
        env=(("A", "1"), ("B", "")),
        install_hint="brew install plugin",
        provide_cluster_info=True,
        interactive_mode="Never",
    )
    assert found.cluster.exec_extension == extension
    path_found = kubeconfig.load(config, "y")
    assert path_found.exec is not None and path_found.exec.command == "aws"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param({"apiVersion": V1, "interactiveMode": "Never"}, "needs a command", id="no-command"),
        pytest.param(
            {"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "p"},
            "v1alpha1 was removed",
            id="v1alpha1",
        ),
        pytest.param({"apiVersion": V1, "command": "p"}, "interactiveMode is required", id="v1-no-mode"),
        pytest.param(
            {"apiVersion": V1, "command": "p", "interactiveMode": "Sometimes"},
            "must be one of",
            id="bad-mode",
        ),
    ],
)
def test_bad_exec_configs_say_what_to_fix(tmp_path: Path, spec: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        kubeconfig.load(one_file(tmp_path, {"exec": spec}))


def test_v1beta1_defaults_to_if_available(tmp_path: Path) -> None:
    spec = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "p"}
    found = kubeconfig.load(one_file(tmp_path, {"exec": spec}))
    assert found.exec is not None and found.exec.interactive_mode == "IfAvailable"


def test_a_kubeconfig_list_of_missing_files_says_so(tmp_path: Path) -> None:
    missing = f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}"
    with pytest.raises(UsageError, match=r"none of the files in KUBECONFIG exists .*/a, .*/b"):
        kubeconfig.load(None, environ={"KUBECONFIG": missing, "HOME": str(tmp_path)}, sa_dir=tmp_path / "sa")
