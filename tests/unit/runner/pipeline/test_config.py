"""Flags and Sync documents become the same options; verification is mandatory unless skipped."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lockgate.errors import UsageError
from lockgate.signing.options import VerifyOptions
from lockgate.signing.policy import KeylessPolicy
from runner.pipeline import config, reconcile


@pytest.mark.parametrize(
    ("text", "seconds"), [("5m", 300), ("30s", 30), ("1h30m", 5400), ("90", 90), ("1m30s", 90)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert config.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5x", "m", "-1s"])
def test_bad_duration(text: str) -> None:
    with pytest.raises(UsageError):
        config.parse_duration(text)


def test_sync_documents(tmp_path: Path) -> None:
    path = tmp_path / "syncs.yaml"
    path.write_text(
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
        "spec:\n  url: oci://127.0.0.1:5000/web\n  interval: 5m\n  prune: true\n  timeout: 2m\n"
        "  targetNamespace: app\n"
        "  verify: {insecureSkip: true}\n"
        "---\napiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: db}\n"
        "spec:\n  url: oci://127.0.0.1:5000/db\n  interval: 1m\n  semver: '>=1.0.0'\n"
        "  verify: {insecureSkip: true}\n"
    )
    web, db = config.load(path, dry_run=True).syncs
    assert (web.name, web.prune, web.timeout, web.target_namespace, web.dry_run) == (
        "web",
        True,
        120,
        "app",
        True,
    )
    assert (db.name, db.source.semver, db.prune) == ("db", ">=1.0.0", False)


def _one_sync(tmp_path: Path, verify: str) -> Path:
    """A file holding one Sync ``web`` whose ``spec.verify`` is ``verify`` (flow YAML)."""
    path = tmp_path / "syncs.yaml"
    path.write_text(
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
        f"spec:\n  url: oci://127.0.0.1:5000/web\n  interval: 5m\n  verify: {verify}\n"
    )
    return path


def test_sync_document_errors_name_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "syncs.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    with pytest.raises(UsageError) as caught:
        config.load(path)
    assert caught.value.message.splitlines()[1:] == [
        f"  {path}:1: ConfigMap/x: apiVersion: expected lockgate.dev/v1alpha1, got 'v1'",
        f"  {path}:2: ConfigMap/x: kind: expected Sync or Runner, got 'ConfigMap'",
    ]


def test_sync_policy_errors_name_the_file_line_and_field(tmp_path: Path) -> None:
    path = _one_sync(tmp_path, "{identity: me, insecureSkip: true}")
    with pytest.raises(
        UsageError, match=r"syncs.yaml:7: Sync/web: spec.verify.insecureSkip cannot be combined"
    ):
        config.load(path)


def test_sync_verify_regexp_is_go_syntax_and_errors_name_the_field(tmp_path: Path) -> None:
    path = _one_sync(
        tmp_path, "{identityRegexp: '^https://github\\.com/(?=acme)', issuer: https://issuer.test}"
    )
    with pytest.raises(UsageError) as caught:
        config.load(path)
    assert caught.value.message.startswith(
        f"{path}:7: Sync/web: spec.verify.identityRegexp: "
        "invalid regular expression '^https://github\\.com/(?=acme)': "
        "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"
    )


def test_sync_verify_identity_regexp_matches_the_whole_value_with_go_classes(tmp_path: Path) -> None:
    path = _one_sync(tmp_path, "{identityRegexp: '[[:alpha:]]+@example\\.com', issuer: https://issuer.test}")
    (sync,) = config.load(path).syncs
    policy = sync.source.policy
    assert isinstance(policy, KeylessPolicy)
    assert policy.identity.matches("ci@example.com")
    assert not policy.identity.matches("ci@example.com.evil.test")


def _file(tmp_path: Path, *docs: str) -> Path:
    path = tmp_path / "syncs.yaml"
    path.write_text("---\n".join(docs))
    return path


def _sync(name: str, extra: str = "") -> str:
    return (
        f"apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {{name: {name}}}\n"
        f"spec:\n  url: oci://127.0.0.1:5000/{name}\n  interval: 5m\n"
        f"  verify: {{insecureSkip: true}}\n{extra}"
    )


def _problems(path: Path) -> list[str]:
    with pytest.raises(UsageError) as caught:
        config.load(path)
    lines = caught.value.message.splitlines()
    return [line.strip() for line in lines[1:]] if len(lines) > 1 else lines


def test_schedule_health_checks_rollback_and_secret_refs_become_options(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        _sync(
            "web",
            "  retryInterval: 30s\n  driftInterval: 2h\n  suspend: true\n  rollback: onHealthFailure\n"
            "  dependsOn: [db, {name: cache}]\n  secretRef: {name: pull}\n"
            "  healthChecks:\n  - {apiVersion: apps/v1, kind: Deployment, name: web, namespace: app}\n",
        ),
        _sync("db"),
        _sync("cache"),
        "apiVersion: lockgate.dev/v1alpha1\nkind: Runner\nspec: {namespace: runners, concurrency: 2}\n",
    )
    loaded = config.load(path)
    web = loaded.syncs[0]
    assert web.schedule == reconcile.Schedule(
        interval=300, retry_interval=30, drift_interval=7200, depends_on=("db", "cache"), suspend=True
    )
    assert web.health_checks == (reconcile.ObjectRef("apps/v1", "Deployment", "web", "app"),)
    assert (web.rollback, web.source.secret_ref, web.namespace) == ("onHealthFailure", "pull", "runners")
    assert loaded.syncs[1].schedule == reconcile.Schedule(interval=300)
    assert loaded.runner == config.RunnerSettings(namespace="runners", concurrency=2)
    assert loaded.digest == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def test_without_a_runner_document_the_settings_are_the_defaults(tmp_path: Path) -> None:
    loaded = config.load(_file(tmp_path, _sync("web")))
    assert loaded.runner == config.RunnerSettings()
    assert (loaded.runner.metrics_address, loaded.runner.webhook_address) == (":8080", ":9292")
    assert loaded.runner.webhook.secret_ref is None and loaded.syncs[0].namespace is None


def test_verify_secret_ref_defers_the_policy_to_the_pass(tmp_path: Path) -> None:
    text = _sync("web").replace("verify: {insecureSkip: true}", "verify: {secretRef: {name: keys}}")
    (sync,) = config.load(_file(tmp_path, text)).syncs
    assert (sync.source.policy, sync.source.verify_secret_ref) == (None, "keys")
    both = _sync("web").replace("verify: {insecureSkip: true}", "verify: {secretRef: {name: k}, key: a.pub}")
    assert _problems(_file(tmp_path, both)) == [
        f"{tmp_path}/syncs.yaml:7: Sync/web: spec.verify.secretRef cannot be combined with spec.verify.key, "
        "the keyless fields or spec.verify.insecureSkip"
    ]


def test_interval_is_required(tmp_path: Path) -> None:
    path = _file(tmp_path, _sync("web").replace("  interval: 5m\n", ""))
    assert _problems(path) == [f"{path}:4: Sync/web: spec.interval: required field is missing"]


def test_unknown_field_with_did_you_mean(tmp_path: Path) -> None:
    path = _file(tmp_path, _sync("web", "  prnue: true\n"))
    assert _problems(path) == [f"{path}:8: Sync/web: spec.prnue: unknown field; did you mean prune?"]


def test_duplicate_names_are_named(tmp_path: Path) -> None:
    path = _file(tmp_path, _sync("web"), _sync("web"))
    assert _problems(path) == [
        f"{path}:11: Sync/web: metadata.name: duplicate name 'web' (first at {path}:3); "
        "sync names must be unique"
    ]


def test_depends_on_an_unknown_sync(tmp_path: Path) -> None:
    path = _file(tmp_path, _sync("web", "  dependsOn: [dbb]\n"), _sync("db"))
    assert _problems(path) == [
        f"{path}:8: Sync/web: spec.dependsOn[0]: no Sync named 'dbb' in this file; did you mean db?"
    ]


@pytest.mark.parametrize(
    ("deps", "cycle"),
    [
        ({"a": "[b]", "b": "[a]"}, "a -> b -> a"),
        ({"a": "[a]", "b": "[]"}, "a -> a"),
        ({"a": "[b]", "b": "[c]", "c": "[b]"}, "b -> c -> b"),
        ({"a": "[b, c]", "b": "[]", "c": "[{name: a}]"}, "a -> c -> a"),
    ],
)
def test_depends_on_cycles_are_named(tmp_path: Path, deps: dict[str, str], cycle: str) -> None:
    path = _file(tmp_path, *(_sync(name, f"  dependsOn: {d}\n") for name, d in deps.items()))
    (problem,) = _problems(path)
    assert problem.endswith(f"spec.dependsOn: dependency cycle {cycle}")


def test_at_most_one_runner_document(tmp_path: Path) -> None:
    runner = "apiVersion: lockgate.dev/v1alpha1\nkind: Runner\n"
    path = _file(tmp_path, _sync("web"), runner, runner)
    assert _problems(path) == [
        f"{path}:12: Runner: at most one Runner document per file (the first is at line 9)"
    ]


def test_runner_settings_are_validated(tmp_path: Path) -> None:
    runner = (
        "apiVersion: lockgate.dev/v1alpha1\nkind: Runner\n"
        "spec: {logFormat: yaml, metricsAddress: localhost, webhook: {secretRef: {name: token}}}\n"
    )
    assert _problems(_file(tmp_path, _sync("web"), runner)) == [
        f"{tmp_path}/syncs.yaml:11: Runner: spec.metricsAddress: 'localhost' does not match ^[^:]*:[0-9]+$",
        f"{tmp_path}/syncs.yaml:11: Runner: spec.logFormat: expected one of text, json; got 'yaml'",
    ]
    ok = runner.replace("logFormat: yaml, metricsAddress: localhost", "logFormat: json, metricsAddress: ':0'")
    settings = config.load(_file(tmp_path, _sync("web"), ok)).runner
    assert (settings.log_format, settings.metrics_address, settings.webhook.secret_ref) == (
        "json",
        ":0",
        "token",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- a\n", "syncs.yaml:1: expected a Sync or Runner document (a mapping), got a list"),
        ("kind: Sync\nmetadata: {name: a}\n", "syncs.yaml:1: Sync/a: apiVersion: required field is missing"),
        (
            "apiVersion: lockgate.dev/v1alpha1\nkind: Sink\n",
            "syncs.yaml:2: Sink: kind: expected Sync or Runner",
        ),
        ("apiVersion: lockgate.dev/v1alpha1\nkind: Runner\n", "syncs.yaml: no Sync documents"),
        ("a: [1\n", "syncs.yaml:2:1: invalid YAML"),
    ],
)
def test_what_is_not_a_config_file(tmp_path: Path, text: str, expected: str) -> None:
    (problem,) = _problems(_file(tmp_path, text))
    assert problem.startswith(f"{tmp_path}/{expected}")


def _decryption_sync(tmp_path: Path, decryption: str) -> Path:
    path = tmp_path / "syncs.yaml"
    path.write_text(
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
        "spec:\n  url: oci://127.0.0.1:5000/web\n  interval: 5m\n  verify: {insecureSkip: true}\n"
        f"  decryption: {decryption}\n"
    )
    return path


def test_decryption_is_read_as_fluxs_and_leaves_the_mac_rule_to_the_origin_by_default(tmp_path: Path) -> None:
    (sync,) = config.load(_decryption_sync(tmp_path, "{provider: sops, secretRef: {name: sops-age}}")).syncs
    assert sync.decryption is not None
    assert (sync.decryption.provider, sync.decryption.secret_ref, sync.decryption.check_mac) == (
        "sops",
        "sops-age",
        None,  # checked for objects from files, not for what kustomize rebuilt (decrypt._check_mac)
    )
    (off,) = config.load(
        _decryption_sync(tmp_path, "{provider: sops, secretRef: {name: k}, checkMAC: false}")
    ).syncs
    assert off.decryption is not None and off.decryption.check_mac is False
    flags = config.sync_options(
        name="web", url="oci://h/r:1", verify=VerifyOptions(insecure_skip=True), decryption_secret="k"
    )
    assert flags.decryption is not None and flags.decryption.secret_ref == "k"
    plain = config.sync_options(name="web", url="oci://h/r:1", verify=VerifyOptions(insecure_skip=True))
    assert plain.decryption is None


def test_an_unknown_decryption_provider_is_refused_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"spec\.decryption\.provider"):
        config.load(_decryption_sync(tmp_path, "{provider: vault, secretRef: {name: k}}"))


ROUNDS = """\
apiVersion: lockgate.dev/v1alpha1
kind: Sync
metadata: {name: web}
spec:
  url: oci://127.0.0.1:5000/web:v1
  intervall: 1m
---
apiVersion: lockgate.dev/v1alpha1
kind: Runner
metadata: {name: lockgate}
spec:
  receivers: [{name: hub, type: dockerhub, secretRef: {name: s}, resources: [{name: wbe}]}]
  concurrncy: 2
---
apiVersion: lockgate.dev/v1alpha1
kind: Sync
metadata: {name: api}
spec:
  url: oci://127.0.0.1:5000/api:v1
  interval: 1m
  dependsOn: [{name: wbe}, {name: broken}]
  verify: {insecureSkip: true, keyy: cosign.pub}
---
apiVersion: lockgate.dev/v1alpha1
kind: Sync
metadata: {name: broken}
spec:
  interval: 1m
  verify: {insecureSkip: true}
"""


def test_every_problem_is_found_in_one_round_and_listed_in_file_order() -> None:
    """Typos do not hide the checks that come after decoding (a missing policy, an unknown
    dependsOn name, a receiver naming no sync): one run lists them all, by line."""
    with pytest.raises(UsageError) as caught:
        config.parse(ROUNDS.encode(), "rounds.yaml")
    lines = caught.value.message.splitlines()
    assert lines[0] == "7 problems:"
    assert [line.split(": ", 1)[0].strip() for line in lines[1:]] == [
        "rounds.yaml:4",
        "rounds.yaml:6",
        "rounds.yaml:12",
        "rounds.yaml:13",
        "rounds.yaml:21",
        "rounds.yaml:22",
        "rounds.yaml:27",
    ], caught.value.message
    said = caught.value.message
    assert "rounds.yaml:4: Sync/web: spec.verify: no verification policy" in said
    assert "rounds.yaml:6: Sync/web: spec.intervall: unknown field; did you mean interval?" in said
    assert "rounds.yaml:12: spec.receivers[0].resources[0].name: no Sync named 'wbe'" in said
    assert "rounds.yaml:13: Runner/lockgate: spec.concurrncy: unknown field" in said
    assert (
        "rounds.yaml:21: Sync/api: spec.dependsOn[0]: no Sync named 'wbe' in this file; did you mean web?"
        in said
    )
    assert "rounds.yaml:22: Sync/api: spec.verify.keyy: unknown field; did you mean key?" in said
    assert "rounds.yaml:27: Sync/broken: spec.url: required field is missing" in said
    # a Sync whose own fields are wrong is still a Sync another may depend on
    assert "'broken'" not in said.split("dependsOn")[1].split("\n")[0]
    # a field reported wrong is not reported again by the checks after decoding
    assert [line for line in lines if "Sync/api: spec.verify" in line] == [lines[6]]


def test_a_relative_key_path_is_relative_to_the_configuration_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As kustomize reads a kustomization's paths (issue 36, Low): the same file works
    whatever directory lockgate is started from."""
    from lockgate.signing import keys

    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "cosign.pub").write_bytes(keys.generate_key_pair(b"pw").public_pem)
    path = config_dir / "syncs.yaml"
    path.write_text(
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
        "spec:\n  url: oci://127.0.0.1:5000/web:v1\n  interval: 5m\n  verify: {key: cosign.pub}\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    (web,) = config.load(path, dry_run=True).syncs
    assert web.source.policy is not None
    assert str(config_dir / "cosign.pub") in str(web.source.policy)
