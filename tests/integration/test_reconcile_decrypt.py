"""SOPS decryption against the real world: files encrypted by the pinned sops CLI with age keys
from Debian's age-keygen, decrypted by lockgate in the pass, applied to the real cluster.

What Flux's kustomize-controller decrypts is decrypted: objects with a top-level ``sops``
block (YAML with ``encrypted_regex``, JSON with every value encrypted) and Secret entries
holding sops documents (dotenv under ``data`` and ``stringData``, YAML); the opt-out
annotation leaves an object as it is; decryption comes before postBuild substitution. A wrong
key, a tampered value or MAC and a missing key Secret fail the pass naming the object and its
file, with nothing applied and no plaintext in the message, the Events or the inventory.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockgate.errors import ExitCode
from runner.kube.client import Kube
from runner.pipeline import config
from runner.pipeline import reconcile as pipeline
from runner.pipeline.result import Result
from tests.integration import sops_support
from tests.integration.history_support import sync_file
from tests.integration.reconcile_support import cli, configmap, dump, get, namespace, push_tree
from tests.world import binaries
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

PASSWORD = "correct-horse-battery-4417"
TOKEN = "tok-8d1f0c2e"
DOTENV = f"USER=admin\nPASSWORD={PASSWORD}\n"


def _key_secret(cluster: Cluster, ns: str, name: str, entries: dict[str, str]) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ns},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in entries.items()},
    }
    cluster.kubectl("create", "namespace", ns, check=False)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(body))


def _pass(cluster: Cluster, tmp_path: Path, name: str, url: str, runner: str, **spec: Any) -> Result:
    path = sync_file(tmp_path / "syncs.yaml", name, url, runner, **spec)
    (options,) = config.load(path).syncs
    return pipeline.reconcile(options, kube=Kube.from_kubeconfig(cluster.kubeconfig))


def _secret_doc(name: str, ns: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": ns}, **fields}


def _decoded(secret: dict[str, Any] | None) -> dict[str, str]:
    assert secret is not None
    return {k: base64.b64decode(v).decode() for k, v in secret.get("data", {}).items()}


def _no_plaintext(cluster: Cluster, runner: str, *texts: str) -> None:
    """Neither the Events nor the inventory Secret of the runner namespace hold a plaintext."""
    events = cluster.kubectl("get", "events", "-n", runner, "-o", "json").stdout
    inventories = cluster.kubectl("get", "secrets", "-n", runner, "-o", "json").stdout
    decoded = "".join(
        base64.b64decode(v).decode("utf-8", "replace")
        for item in json.loads(inventories)["items"]
        for v in (item.get("data") or {}).values()
    )
    for text in texts:
        assert text not in events and text not in decoded


def test_documents_and_secret_entries_are_decrypted_before_substitution(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    key = sops_support.age_key()
    _key_secret(cluster, runner, "sops-age", {"identity.agekey": key.identity, "readme.txt": "not a key"})
    work = tmp_path / "sops"
    # YAML, only data/stringData encrypted; the label's ${team} is unencrypted but under the MAC,
    # so substituting before decrypting would fail the MAC check
    regex_secret = sops_support.encrypt(
        work,
        "creds.yaml",
        dump(
            _secret_doc(
                "creds",
                unique,
                stringData={"password": PASSWORD, "greeting": "hi-${team}"},
                data={"token": base64.b64encode(TOKEN.encode()).decode()},
            )
            | {"metadata": {"name": "creds", "namespace": unique, "labels": {"team": "${team}"}}}
        ),
        key,
        "--encrypted-regex",
        "^(data|stringData)$",
    )
    assert PASSWORD not in regex_secret and "ENC[AES256_GCM" in regex_secret
    # JSON, every value encrypted (apiVersion, kind and name too)
    whole = sops_support.encrypt(
        work,
        "settings.json",
        json.dumps(configmap("settings", unique, {"level": "debug", "token": TOKEN})),
        key,
    )
    assert json.loads(whole)["kind"].startswith("ENC[")
    env_data = sops_support.encrypt(work, "app.env", DOTENV, key)
    env_string = sops_support.encrypt(work, "db.env", "DB_PASSWORD=" + PASSWORD + "\n", key)
    yaml_entry = sops_support.encrypt(work, "config.yaml", yaml.safe_dump({"apiKey": TOKEN}), key)
    ini_entry = sops_support.encrypt(work, "db.ini", f"[db]\nuser = admin\npassword = {PASSWORD}\n", key)
    entries = _secret_doc(
        "entries",
        unique,
        data={
            "app.env": base64.b64encode(env_data.encode()).decode(),
            "config.yaml": base64.b64encode(yaml_entry.encode()).decode(),
            "settings.json": base64.b64encode(ini_entry.encode()).decode(),  # INI in, JSON out
            "plain": base64.b64encode(b"as-is").decode(),
        },
        stringData={"db.env": env_string},
    )
    kept = _secret_doc(
        "kept",
        unique,
        data={"app.env": base64.b64encode(env_data.encode()).decode()},
    ) | {
        "metadata": {
            "name": "kept",
            "namespace": unique,
            "annotations": {"kustomize.toolkit.fluxcd.io/decrypt": "disabled"},
        }
    }
    url = push_tree(
        registry,
        unique,
        {
            "ns.yaml": dump(namespace(unique)),
            "creds.yaml": regex_secret,
            "settings.yaml": whole,  # JSON is YAML: the artifact's loader reads it
            "entries.yaml": dump(entries, kept),
        },
    )
    result = _pass(
        cluster,
        tmp_path,
        unique,
        url,
        runner,
        decryption={"provider": "sops", "secretRef": {"name": "sops-age"}},
        postBuild={"substitute": {"team": "blue"}},
    )
    assert result.error is None, result.error.message
    creds = get(cluster, "secret", "creds", unique)
    assert creds is not None and "sops" not in creds
    assert creds["metadata"]["labels"]["team"] == "blue"
    assert _decoded(creds) == {"password": PASSWORD, "greeting": "hi-blue", "token": TOKEN}
    settings = get(cluster, "configmap", "settings", unique)
    assert settings is not None and settings["data"] == {"level": "debug", "token": TOKEN}
    decoded = _decoded(get(cluster, "secret", "entries", unique))
    assert decoded["app.env"] == DOTENV
    assert decoded["db.env"] == f"DB_PASSWORD={PASSWORD}\n"
    assert yaml.safe_load(decoded["config.yaml"]) == {"apiKey": TOKEN}
    assert json.loads(decoded["settings.json"]) == {"db": {"user": "admin", "password": PASSWORD}}
    assert decoded["plain"] == "as-is"
    assert _decoded(get(cluster, "secret", "kept", unique))["app.env"] == env_data  # opted out
    _no_plaintext(cluster, runner, PASSWORD, TOKEN)


def _encrypted_artifact(
    registry: Registry,
    unique: str,
    tmp_path: Path,
    key: sops_support.AgeKey,
    tamper: str = "",
    password: str = PASSWORD,
) -> str:
    text = sops_support.encrypt(
        tmp_path / "sops",
        "creds.yaml",
        dump(_secret_doc("creds", unique, stringData={"password": password}, type="Opaque")),
        key,
        "--encrypted-regex",
        "^(data|stringData)$",
    )
    doc = yaml.safe_load(text)
    if tamper == "value":  # another ciphertext of the same length: AES-GCM refuses it
        value = doc["stringData"]["password"]
        data = value.split("data:", 1)[1].split(",", 1)[0]
        forged = base64.b64encode(bytes(b ^ 1 for b in base64.b64decode(data))).decode()
        doc["stringData"]["password"] = value.replace(data, forged)
    elif tamper == "mac":
        mac = doc["sops"]["mac"]
        data = mac.split("data:", 1)[1].split(",", 1)[0]
        forged = base64.b64encode(bytes(b ^ 1 for b in base64.b64decode(data))).decode()
        doc["sops"]["mac"] = mac.replace(data, forged)
    elif tamper == "type":  # an unencrypted field under the MAC
        doc["type"] = "kubernetes.io/basic-auth"
    files = {"ns.yaml": dump(namespace(unique)), "x/creds.yaml": yaml.safe_dump(doc, sort_keys=False)}
    files["other.yaml"] = dump(configmap("other", unique, {"a": "1"}))
    tag = tamper or ("latest" if password == PASSWORD else "rotated")
    return push_tree(registry, unique, files, tag=tag)


DECRYPTION = {"provider": "sops", "secretRef": {"name": "sops-age"}}


def _failed(result: Result) -> str:
    assert result.error is not None, "the pass succeeded"
    assert result.error.exit_code == ExitCode.VERIFICATION
    message = result.error.message
    assert PASSWORD not in message
    return message


def _nothing_applied(cluster: Cluster, unique: str) -> None:
    assert get(cluster, "namespace", unique) is None
    assert get(cluster, "configmap", "other", unique) is None


def test_a_wrong_age_key_fails_naming_the_object_and_file_and_applies_nothing(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    key, wrong = sops_support.age_key(), sops_support.age_key()
    _key_secret(cluster, runner, "sops-age", {"wrong.agekey": wrong.identity})
    url = _encrypted_artifact(registry, unique, tmp_path, key)
    message = _failed(_pass(cluster, tmp_path, unique, url, runner, decryption=DECRYPTION))
    assert f"Secret/{unique}/creds (x/creds.yaml:1)" in message
    assert f"cannot be decrypted with the age identities of Secret/{runner}/sops-age" in message
    assert key.recipient in message and wrong.recipient in message
    assert "AGE-SECRET-KEY" not in message
    _nothing_applied(cluster, unique)


@pytest.mark.parametrize(
    ("tamper", "words"),
    [
        ("value", "the value at stringData.password does not authenticate"),
        ("mac", "its MAC does not authenticate"),
        ("type", "MAC mismatch: the document was changed after sops encrypted it"),
    ],
)
def test_a_tampered_file_fails_and_applies_nothing(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path, tamper: str, words: str
) -> None:
    runner = f"{unique}-r"
    key = sops_support.age_key()
    _key_secret(cluster, runner, "sops-age", {"identity.agekey": key.identity})
    url = _encrypted_artifact(registry, unique, tmp_path, key, tamper)
    message = _failed(_pass(cluster, tmp_path, unique, url, runner, decryption=DECRYPTION))
    assert f"Secret/{unique}/creds (x/creds.yaml:1)" in message and words in message
    _nothing_applied(cluster, unique)


def test_a_missing_key_secret_fails_and_applies_nothing(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    url = _encrypted_artifact(registry, unique, tmp_path, sops_support.age_key())
    message = _failed(_pass(cluster, tmp_path, unique, url, runner, decryption=DECRYPTION))
    assert f"Secret/{runner}/sops-age (spec.decryption.secretRef.name): not found" in message
    _nothing_applied(cluster, unique)


def test_an_encrypted_object_without_decryption_is_refused_not_applied(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    url = _encrypted_artifact(registry, unique, tmp_path, sops_support.age_key())
    message = _failed(_pass(cluster, tmp_path, unique, url, runner))
    assert f"Secret/{unique}/creds (x/creds.yaml:1): is SOPS-encrypted" in message
    assert "set spec.decryption" in message
    _nothing_applied(cluster, unique)


def test_an_object_kustomize_rebuilt_is_decrypted_without_its_mac_by_default(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kustomize sorts keys: the MAC's order is gone (Flux never checks it), so by default it is
    not checked for what kustomize built; values still authenticate. checkMAC: true insists."""
    monkeypatch.setenv("LOCKGATE_KUSTOMIZE", str(binaries.binary("kustomize")))
    runner = f"{unique}-r"
    key = sops_support.age_key()
    _key_secret(cluster, runner, "sops-age", {"identity.agekey": key.identity})
    unsorted = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",  # before stringData: kustomize moves it after
        "metadata": {"name": "creds", "namespace": unique},
        "stringData": {"password": PASSWORD},
    }
    text = sops_support.encrypt(
        tmp_path / "sops", "creds.yaml", dump(unsorted), key, "--encrypted-regex", "^(data|stringData)$"
    )
    files = {
        "kustomization.yaml": "resources:\n- ns.yaml\n- creds.yaml\n",
        "ns.yaml": dump(namespace(unique)),
        "creds.yaml": text,
    }
    url = push_tree(registry, unique, files)
    message = _failed(
        _pass(cluster, tmp_path, unique, url, runner, decryption={**DECRYPTION, "checkMAC": True})
    )
    assert "MAC mismatch" in message and "checkMAC: false" in message
    _nothing_applied(cluster, unique)
    result = _pass(cluster, tmp_path, unique, url, runner, decryption=DECRYPTION)
    assert result.error is None, result.error.message
    assert _decoded(get(cluster, "secret", "creds", unique)) == {"password": PASSWORD}


def test_the_cli_decrypts_with_decryption_secret_and_prints_no_plaintext(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner = f"{unique}-r"
    key = sops_support.age_key()
    _key_secret(cluster, runner, "sops-age", {"identity.agekey": key.identity})
    url = _encrypted_artifact(registry, unique, tmp_path, key)
    flags = ("--name", unique, "-n", runner, "--insecure-skip-verify", "--decryption-secret", "sops-age")
    run = cli(cluster, url, *flags)
    assert run.code == 0, run.err
    assert PASSWORD not in run.out + run.err
    assert _decoded(get(cluster, "secret", "creds", unique)) == {"password": PASSWORD}
    _no_plaintext(cluster, runner, PASSWORD)
    # a changed password: the dry run's field diff shows Flux's masks, neither value
    changed = _encrypted_artifact(registry, unique, tmp_path, key, password="rotated-pass-9931")
    dry = cli(cluster, changed, *flags, "--dry-run", "-o", "json")
    assert dry.code == 0, dry.err
    assert "***" in dry.out
    for text in (PASSWORD, "rotated-pass-9931"):
        assert text not in dry.out + dry.err
