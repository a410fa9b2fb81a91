"""Running a real exec credential plugin: what it is given, what it may answer, how it fails."""

from __future__ import annotations

import base64
import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from lockgate.errors import AuthError
from runner.kube import exec_plugin, kubeconfig
from tests.integration.kube_support import V1, V1BETA1, ExecPlugin, token

SECRET = "s3cr3t-token-value"
CLUSTER = kubeconfig.Cluster("https://127.0.0.1:6443")


def config(plugin: ExecPlugin, **fields: Any) -> kubeconfig.ExecConfig:
    return kubeconfig.ExecConfig(command=str(plugin.command), api_version=plugin.api_version, **fields)


@pytest.mark.parametrize("api_version", [V1, V1BETA1])
def test_token_and_expiry_are_read(tmp_path: Path, api_version: str) -> None:
    plugin = ExecPlugin(tmp_path, api_version).write(token(SECRET, expires_in=600))
    found = exec_plugin.run(config(plugin), CLUSTER, environ={}, terminal=False)
    assert found.token == SECRET
    assert found.expires is not None and not found.expired()
    assert found.expired(found.expires + datetime.timedelta(seconds=1))
    assert SECRET not in repr(found)


def test_the_plugin_gets_args_env_and_exec_info(tmp_path: Path) -> None:
    plugin = ExecPlugin(tmp_path).write(token(SECRET))
    exec_config = config(
        plugin, args=("get-token", "--cluster", "prod"), env=(("PLUGIN_FROM_CONFIG", "config"),)
    )
    environ = {"PLUGIN_FROM_ENV": "env", "PLUGIN_FROM_CONFIG": "overridden"}
    exec_plugin.run(exec_config, CLUSTER, environ=environ, terminal=False)
    (call,) = plugin.invocations()
    assert call["argv"] == ["get-token", "--cluster", "prod"]
    assert call["env"] == {"PLUGIN_FROM_ENV": "env", "PLUGIN_FROM_CONFIG": "config"}
    assert call["info"] == {"apiVersion": V1, "kind": "ExecCredential", "spec": {"interactive": False}}
    assert call["stdin"] == ""  # not interactive: no stdin


def test_cluster_info_is_provided_when_asked(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n")
    cluster = kubeconfig.Cluster(
        "https://10.0.0.1:443", ca=ca, tls_server_name="kubernetes", exec_extension={"audience": "prod"}
    )
    plugin = ExecPlugin(tmp_path / "plugin").write(token(SECRET))
    exec_plugin.run(config(plugin, provide_cluster_info=True), cluster, environ={}, terminal=False)
    (call,) = plugin.invocations()
    assert call["info"]["spec"]["cluster"] == {
        "server": "https://10.0.0.1:443",
        "tls-server-name": "kubernetes",
        "certificate-authority-data": base64.b64encode(ca.read_bytes()).decode(),
        "config": {"audience": "prod"},
    }


def test_a_client_certificate_and_key_are_read(tmp_path: Path) -> None:
    status = {"clientCertificateData": "CERT PEM", "clientKeyData": "KEY PEM"}
    plugin = ExecPlugin(tmp_path).write({"status": status})
    found = exec_plugin.run(config(plugin), CLUSTER, environ={}, terminal=False)
    assert (found.token, found.client_cert, found.client_key, found.expires) == (
        None,
        b"CERT PEM",
        b"KEY PEM",
        None,
    )


def test_a_missing_plugin_shows_the_install_hint(tmp_path: Path) -> None:
    missing = kubeconfig.ExecConfig(
        command=str(tmp_path / "gke-gcloud-auth-plugin"),
        api_version=V1,
        install_hint="Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin",
    )
    with pytest.raises(AuthError, match="was not found: Install gke-gcloud-auth-plugin: gcloud components"):
        exec_plugin.run(missing, CLUSTER, environ={}, terminal=False)


def test_a_plugin_that_is_not_executable(tmp_path: Path) -> None:
    plugin = ExecPlugin(tmp_path).write(token(SECRET))
    plugin.command.chmod(0o600)
    with pytest.raises(AuthError, match="is not executable"):
        exec_plugin.run(config(plugin), CLUSTER, environ={}, terminal=False)


def test_a_failing_plugin_names_the_command_and_its_stderr_tail_never_the_token(tmp_path: Path) -> None:
    stdout = json.dumps({"apiVersion": V1, "kind": "ExecCredential", "status": {"token": SECRET}})
    stderr = "x" * 2000 + "\nerror: the SSO session has expired, run aws sso login\n"
    plugin = ExecPlugin(tmp_path).write({"stdout": stdout, "stderr": stderr, "exit": 3})
    with pytest.raises(AuthError) as raised:
        exec_plugin.run(config(plugin), CLUSTER, environ={}, terminal=False)
    message = str(raised.value)
    assert str(plugin.command) in message and "failed (exit 3)" in message
    assert message.endswith("the SSO session has expired, run aws sso login")
    assert len(message) < 1000
    assert SECRET not in message


def test_interactive_always_without_a_terminal_is_refused_before_running(tmp_path: Path) -> None:
    plugin = ExecPlugin(tmp_path).write(token(SECRET))
    with pytest.raises(AuthError, match=r"needs a terminal \(interactiveMode: Always\)"):
        exec_plugin.run(config(plugin, interactive_mode="Always"), CLUSTER, environ={}, terminal=False)
    assert plugin.invocations() == []


def test_never_is_not_interactive_even_on_a_terminal(tmp_path: Path) -> None:
    plugin = ExecPlugin(tmp_path).write(token(SECRET))
    exec_plugin.run(config(plugin, interactive_mode="Never"), CLUSTER, environ={}, terminal=True)
    assert plugin.invocations()[0]["info"]["spec"]["interactive"] is False


def status_doc(status: Any, api_version: str = V1, kind: str = "ExecCredential") -> str:
    return json.dumps({"apiVersion": api_version, "kind": kind, "status": status})


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        pytest.param(f"token: {SECRET}", "printed no ExecCredential", id="not-json"),
        pytest.param(status_doc({"token": SECRET}, kind="Secret"), "not an ExecCredential", id="wrong-kind"),
        pytest.param(status_doc({"token": SECRET}, api_version=V1BETA1), "set users", id="wrong-version"),
        pytest.param(
            json.dumps({"apiVersion": V1, "kind": "ExecCredential"}), "without a status", id="no-status"
        ),
        pytest.param(status_doc({}), "neither a token nor a client certificate", id="empty-status"),
        pytest.param(status_doc({"token": 42}), "not strings", id="token-not-a-string"),
        pytest.param(status_doc({"clientKeyData": SECRET}), "only one of", id="key-without-cert"),
        pytest.param(
            status_doc({"token": SECRET, "expirationTimestamp": "tomorrow"}), "not RFC 3339", id="bad-expiry"
        ),
        pytest.param(
            status_doc({"token": SECRET, "expirationTimestamp": "2030-01-01T00:00:00"}),
            "without a time zone",
            id="naive-expiry",
        ),
    ],
)
def test_bad_answers_are_auth_errors_that_never_show_the_output(stdout: str, message: str) -> None:
    with pytest.raises(AuthError, match=message) as raised:
        exec_plugin.parse(stdout.encode(), kubeconfig.ExecConfig(command="plugin", api_version=V1))
    assert SECRET not in str(raised.value)
