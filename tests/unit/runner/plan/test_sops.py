"""The pure parts of the SOPS reader: Go's number and time spellings the MAC depends on, the
metadata rules, flattened metadata, the formats of Secret entries. Real sops files are
decrypted in tests/integration/test_reconcile_decrypt.py (encrypted by the pinned sops)."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from lockgate.manifests import K8sObject
from runner.plan.sops import cipher, objects, stores, tree


@pytest.mark.parametrize(
    ("value", "go"),
    [
        (1.0, "1"),
        (1.5, "1.5"),
        (1e20, "100000000000000000000"),
        (1e-7, "0.0000001"),
        (-0.0, "-0"),
        (0.1, "0.1"),
    ],
)
def test_floats_are_spelled_as_go_formats_them(value: float, go: str) -> None:
    assert cipher.go_float(value) == go


@pytest.mark.parametrize(
    ("value", "go"),
    [
        ("2026-12-01T13:35:53Z", "2026-12-01T13:35:53Z"),
        ("2026-12-01T13:35:53.123456Z", "2026-12-01T13:35:53Z"),
        ("2026-12-01T15:35:53+02:00", "2026-12-01T15:35:53+02:00"),
        ("2026-12-01T13:35:53+00:00", "2026-12-01T13:35:53Z"),
        (dt.datetime(2026, 12, 1, 13, 35, 53, tzinfo=dt.UTC), "2026-12-01T13:35:53Z"),
    ],
)
def test_lastmodified_is_formatted_as_gos_rfc3339(value: object, go: str) -> None:
    assert tree.go_rfc3339(value) == go


def test_mac_bytes_follow_sops_to_bytes() -> None:
    assert [cipher.mac_bytes(v) for v in ("é", 7, True, False, 2.5)] == [
        "é".encode(),
        b"7",
        b"True",
        b"False",
        b"2.5",
    ]


def _meta(**block: Any) -> tree.Metadata:
    return tree.metadata({"lastmodified": "2026-01-01T00:00:00Z", "mac": "ENC[x]", **block})


def test_the_default_rule_is_the_unencrypted_suffix() -> None:
    meta = _meta()
    assert meta.encrypted(["data", "password"])
    assert not meta.encrypted(["data", "user_unencrypted"])


def test_regex_rules_match_any_key_of_the_path() -> None:
    meta = _meta(encrypted_regex="^(data|stringData)$")
    assert meta.encrypted(["stringData", "password"]) and not meta.encrypted(["metadata", "name"])
    assert not _meta(unencrypted_regex="^meta").encrypted(["metadata", "name"])
    assert _meta(encrypted_suffix="_secret").encrypted(["a", "b_secret"])


@pytest.mark.parametrize(
    ("block", "words"),
    [
        ({"encrypted_regex": "a", "unencrypted_suffix": "_u"}, "only one of them"),
        ({"encrypted_comment_regex": "x"}, "is not supported"),
        ({"key_groups": [{}, {}]}, "Shamir"),
        ({"mac": ""}, "has no mac"),
        ({"encrypted_regex": "(unclosed"}, "missing closing )"),
    ],
)
def test_metadata_sops_cannot_honour_is_refused(block: dict[str, Any], words: str) -> None:
    with pytest.raises(tree.SopsError, match=words.replace("(", r"\(").replace(")", r"\)")):
        _meta(**block)


def test_flattened_metadata_is_unflattened_as_sops_does() -> None:
    flat = {
        "age__list_0__map_enc": "E0",
        "age__list_0__map_recipient": "R0",
        "age__list_1__map_enc": "E1",
        "mac": "M",
    }
    assert stores.unflatten(flat) == {"age": [{"enc": "E0", "recipient": "R0"}, {"enc": "E1"}], "mac": "M"}


@pytest.mark.parametrize(
    ("key", "fmt"),
    [
        ("app.env", "dotenv"),
        ("a.yaml", "yaml"),
        ("a.yml", "yaml"),
        ("a.json", "json"),
        (".dockerconfigjson", "json"),
        ("a.ini", "ini"),
        ("token", "binary"),
    ],
)
def test_the_output_format_follows_the_entry_name(key: str, fmt: str) -> None:
    assert stores.output_format(key) == fmt


def test_a_value_is_decrypted_with_its_path_as_additional_data() -> None:
    key = bytes(range(32))
    iv = bytes(32)
    sealed = AESGCM(key).encrypt(iv, b"42", b"spec:replicas:")
    value = "ENC[AES256_GCM,data:{},iv:{},tag:{},type:int]".format(
        *(base64.b64encode(part).decode() for part in (sealed[:-16], iv, sealed[-16:]))
    )
    assert cipher.decrypt(value, key, "spec:replicas:") == 42
    with pytest.raises(cipher.CipherError, match="does not authenticate"):
        cipher.decrypt(value, key, "spec:other:")  # moved to another key
    with pytest.raises(cipher.CipherError) as caught:
        cipher.decrypt("ENC[AES256_GCM,data:%%%,iv:a,tag:b,type:str]", key, "a:")
    assert "%%%" not in str(caught.value)


def _obj(body: dict[str, Any]) -> K8sObject:
    return K8sObject(body=body, file="app/secret.yaml", line=3)


def test_the_opt_out_is_case_insensitive_and_a_pass_without_decryption_refuses_sops_blocks() -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "annotations": {objects.OPT_OUT: "Disabled"}},
        "sops": {"mac": "x"},
    }
    assert objects.disabled(_obj(body))
    objects.refuse_encrypted([_obj(body)])
    body["metadata"] = {"name": "s", "namespace": "n"}
    with pytest.raises(
        objects.DecryptionFailed, match=r"Secret/n/s \(app/secret.yaml:3\): is SOPS-encrypted"
    ):
        objects.refuse_encrypted([_obj(body)])
