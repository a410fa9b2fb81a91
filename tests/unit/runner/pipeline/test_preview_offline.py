"""A sync's postBuild and SOPS without the cluster: values CI cannot know are named, never guessed."""

from __future__ import annotations

import base64

import pytest

from lockgate.errors import VerificationError
from lockgate.manifests import K8sObject
from runner.pipeline import decrypt, substitute
from runner.pipeline.options import SyncOptions
from runner.pipeline.preview import offline
from runner.pipeline.source import SourceSpec


def options(**fields: object) -> SyncOptions:
    return SyncOptions(name="app", source=SourceSpec(url="oci://r/app:1"), **fields)  # type: ignore[arg-type]


def cm(data: dict[str, str]) -> K8sObject:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "a"},
        "data": data,
    }
    return K8sObject(body, "c.yaml", 1)


def test_inline_values_are_used_and_the_cluster_values_named() -> None:
    post = substitute.PostBuild(
        substitute={"COLOR": "red"}, substitute_from=(substitute.Source("Secret", "db"),)
    )
    (found,), notes = offline.prepare(
        [cm({"color": "${COLOR}", "url": "postgres://u:${PASSWORD}@db"})], options(post_build=post)
    )
    assert found.body["data"] == {"color": "red", "url": "postgres://u:(from Secret db)@db"}
    assert found.secret.holds("postgres://u:(from Secret db)@db")  # masked as a pass masks it
    assert "(from Secret db)" in notes[0]


def test_without_any_variable_nothing_is_substituted_as_flux_does() -> None:
    (found,), _ = offline.prepare(
        [cm({"v": "${X}"})], options(post_build=substitute.PostBuild(substitute={}))
    )
    assert found.body["data"] == {"v": "${X}"}


def test_an_undefined_variable_fails_as_the_pass_fails() -> None:
    with pytest.raises(Exception, match="variable not set"):
        offline.prepare([cm({"v": "${X}"})], options(post_build=substitute.PostBuild(substitute={"Y": "1"})))


SOPS = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "s", "namespace": "a"},
    "stringData": {"password": "ENC[AES256_GCM,data:abcd,iv:efgh,tag:ijkl,type:str]"},
    "sops": {"mac": "ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]", "version": "3.9.0"},
}


def test_sops_values_are_named_never_decrypted_nor_refused() -> None:
    decryption = decrypt.Decryption(secret_ref="sops-age")
    (found,), notes = offline.prepare([K8sObject(SOPS, "s.yaml", 1)], options(decryption=decryption))
    assert found.body["stringData"] == {"password": "(from Secret sops-age)"}
    assert "sops" not in found.body and "SOPS-encrypted" in notes[0]


def test_a_sops_entry_of_a_secret_is_named() -> None:
    entry = base64.b64encode(
        b"password: ENC[AES256_GCM,data:a,iv:b,tag:c,type:str]\n"
        b"sops:\n  mac: ENC[AES256_GCM,data:m,iv:i,tag:t,type:str]\n"
    )
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "a"}}
    body["data"] = {"app.yaml": entry.decode()}
    sealed, count = offline.seal([K8sObject(body, "s.yaml", 1)], decrypt.Decryption(secret_ref="keys"))
    assert count == 1
    assert base64.b64decode(sealed[0].body["data"]["app.yaml"]) == b"(from Secret keys)"


def test_without_decryption_an_encrypted_object_is_refused_as_the_pass_refuses_it() -> None:
    with pytest.raises(VerificationError, match="no decryption"):
        offline.prepare([K8sObject(SOPS, "s.yaml", 1)], options())
