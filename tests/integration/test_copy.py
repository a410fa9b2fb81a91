"""``lockgate copy`` to a second registry and to an OCI image layout directory (issue 22 item 3).

The source is the world's registry (Distribution 2.8: no referrers API, so signatures and
attestations are found through cosign's ``.sig`` tag and the tag-schema fallback index);
the mirror is a second Distribution started here; the layout is a temporary directory.
After a copy the mirror and the layout accept the same signatures and attestations with
lockgate's verifier, a Sync source (``runner.pipeline.source``) and the real cosign CLI.
An interrupted copy leaves nothing reachable that points at missing content and a rerun
completes it; a tampered layout blob is refused naming its file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lockgate.errors import ExitCode, VerificationError
from lockgate.registry import copy as copying
from lockgate.registry.client import RegistryClient
from lockgate.registry.oci import is_artifact_tag
from lockgate.registry.reference import parse
from lockgate.signing import attest, layout, verify
from lockgate.signing.policy import KeyPolicy
from runner.pipeline import source
from tests.integration.copy_support import layout_problems, lockgate, signed_artifact
from tests.integration.signing_support import client_for
from tests.integration.test_signing_cosign import cosign_verify
from tests.world.kube import Cluster
from tests.world.registry import Registry, start_registry

pytestmark = [
    pytest.mark.world,
    # Fulcio's ephemeral CA names its country "USA"; cryptography warns that it is not 2 letters
    pytest.mark.filterwarnings("ignore:Attribute's length must be:UserWarning"),
]


@pytest.fixture(scope="module")
def mirror(world_dir: Path) -> Iterator[Registry]:
    reg = start_registry(world_dir, name="mirror-registry")
    yield reg
    reg.stop()


class Interrupted(Exception):
    """Raised from a copy's step hook: the process stops half way, as a killed copy would."""


def run_copy(
    src: str, dst: str, *, options: copying.CopyOptions | None = None
) -> copying.CopyResult:
    src_ref, dst_ref = parse(src), parse(dst)
    return copying.copy(
        RegistryClient.for_reference(src_ref),
        src_ref,
        copying.destination_client(dst_ref),
        dst_ref,
        options,
    )


def test_copy_to_a_second_registry_keeps_key_signature_and_attestation(
    registry: Registry, mirror: Registry, unique: str, tmp_path: Path
) -> None:
    signed = signed_artifact(registry, unique, tmp_path)
    plain = signed_artifact(registry, unique, tmp_path, tag="0.9.0", attested=False)
    options = copying.CopyOptions(tags=("1.0.0", "0.9.0"))
    first = run_copy(registry.oci(unique), mirror.oci(f"mirrored/{unique}"), options=options)
    assert [(a.tag, a.digest) for a in first.artifacts] == [("1.0.0", signed.digest), ("0.9.0", plain.digest)]
    copied = first.artifacts[0]
    assert copied.cosign_tags == (layout.signature_tag(signed.digest),)
    assert len(copied.referrers) == 2  # the key signature's bundle and the health attestation
    mirrored = mirror.oci(f"mirrored/{unique}", ":1.0.0")

    # the key signature names the repository it was made for: the mirror is verified against it
    with pytest.raises(VerificationError, match="--signed-repository"):
        verify.verify(mirrored, signed.policy)
    result = verify.verify(mirrored, signed.policy, signed_repository=signed.repository)
    assert result.digest == signed.digest
    found = attest.verify_attestation(
        mirror.oci(f"mirrored/{unique}", f"@{signed.digest}"), signed.attestation_policy, attest.HEALTHY
    )
    assert [a.predicate["cluster"] for a in found] == ["staging"]
    # the fallback index is the source's, byte for byte
    index = layout.referrers_tag(signed.digest)
    assert (
        client_for(mirror, f"mirrored/{unique}").get_manifest(f"mirrored/{unique}", index).digest
        == client_for(registry, unique).get_manifest(unique, index).digest
    )
    accepted = cosign_verify(mirrored, signed.public, tmp_path)
    assert accepted.returncode == 0, accepted.stderr
    accepted = cosign_verify(mirror.oci(f"mirrored/{unique}", ":0.9.0"), plain.public, tmp_path)
    assert accepted.returncode == 0, accepted.stderr
    assert plain.digest in accepted.stdout
    refused = cosign_verify(mirror.oci(f"mirrored/{unique}", ":0.9.0"), signed.public, tmp_path)
    assert refused.returncode != 0

    again = run_copy(registry.oci(unique), mirror.oci(f"mirrored/{unique}"), options=options)
    assert again.copied("blob") == again.copied("manifest") == again.copied("tag") == 0
    assert again.skipped("blob") == first.copied("blob") > 0
    assert again.skipped("manifest") == first.copied("manifest")


def test_copy_keyless_signature_to_mirror_and_layout(
    registry: Registry, mirror: Registry, unique: str, tmp_path: Path, sigstore_stack: object
) -> None:
    from lockgate.signing import sign
    from lockgate.signing.policy import KeylessPolicy, Match
    from tests.integration.signing_support import push_artifact
    from tests.integration.test_signing_keyless_e2e import cosign_verify as cosign_verify_keyless
    from tests.world.sigstore import DEFAULT_IDENTITY, SigstoreStack

    assert isinstance(sigstore_stack, SigstoreStack)
    url = push_artifact(registry, unique, tag="v1")
    sign.sign_keyless(url, token=sigstore_stack.token(), trust_config=sigstore_stack.trust_config)
    policy = KeylessPolicy(
        identity=Match(DEFAULT_IDENTITY), issuer=Match(sigstore_stack.issuer),
        trusted_root=sigstore_stack.trusted_root,
    )
    run_copy(registry.oci(unique, ":v1"), mirror.oci(unique))
    directory = tmp_path / "layout"
    run_copy(registry.oci(unique, ":v1"), f"oci-layout://{directory}")

    for where in (mirror.oci(unique, ":v1"), f"oci-layout://{directory}:v1"):
        assert verify.verify(where, policy).signer == DEFAULT_IDENTITY
    mirrored = mirror.oci(unique, ":v1")
    accepted = cosign_verify_keyless(mirrored, sigstore_stack, tmp_path, identity=DEFAULT_IDENTITY)
    assert accepted.returncode == 0, accepted.stderr
    refused = cosign_verify_keyless(mirrored, sigstore_stack, tmp_path, identity="x@lockgate.test")
    assert refused.returncode != 0


def test_layout_round_trip_pull_verify_sync_and_back(
    registry: Registry, mirror: Registry, unique: str, tmp_path: Path
) -> None:
    signed = signed_artifact(registry, unique, tmp_path)
    plain = signed_artifact(registry, unique, tmp_path, tag="0.9.0", attested=False)
    directory = tmp_path / "gap"
    target = f"oci-layout://{directory}"
    done = lockgate("copy", registry.oci(unique, ":1.0.0"), target, "-o", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["artifacts"][0]["digest"] == signed.digest
    assert report["blobs"]["copied"] >= 4 and report["blobs"]["skipped"] == 0
    assert json.loads((directory / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    assert layout_problems(directory) == []
    tags = [
        m.get("annotations", {}).get("org.opencontainers.image.ref.name")
        for m in json.loads((directory / "index.json").read_text())["manifests"]
    ]
    assert "1.0.0" in tags and layout.signature_tag(signed.digest) in tags

    pulled = lockgate("pull", f"oci-layout://{directory}:1.0.0", "-O", str(tmp_path / "out"), cwd=tmp_path)
    assert pulled.returncode == 0, pulled.stderr
    assert b"name: mirrored" in (tmp_path / "out" / "configmap.yaml").read_bytes()
    checked = lockgate(
        "verify", f"{target}:1.0.0", "--key", str(signed.public), "--signed-repository", signed.repository,
        cwd=tmp_path,
    )
    assert checked.returncode == 0, checked.stderr
    assert signed.digest in checked.stdout

    # a Sync whose url is the layout: the signature and the health attestation both count
    spec = source.SourceSpec(
        url=f"oci-layout://{directory}:1.0.0",
        policy=signed.policy,
        attestations=(source.AttestationSpec(cluster="staging", policy=signed.attestation_policy),),
        signed_repository=signed.repository,
    )
    fetched = source.fetch(spec)
    assert fetched.digest == signed.digest
    assert fetched.url == f"oci-layout://{directory}@{signed.digest}"
    assert [o.name for o in fetched.objects] == ["mirrored"]

    # the other side of the gap: layout -> registry, verified there by cosign too
    assert lockgate("copy", registry.oci(unique, ":0.9.0"), target, cwd=tmp_path).returncode == 0
    run_copy(target, mirror.oci(f"inside/{unique}"), options=copying.CopyOptions(tags=("1.0.0", "0.9.0")))
    inside = mirror.oci(f"inside/{unique}", ":1.0.0")
    assert verify.verify(inside, signed.policy, signed_repository=signed.repository).digest == signed.digest
    attest.verify_attestation(
        mirror.oci(f"inside/{unique}", f"@{signed.digest}"), signed.attestation_policy, attest.HEALTHY
    )
    accepted = cosign_verify(mirror.oci(f"inside/{unique}", ":0.9.0"), plain.public, tmp_path)
    assert accepted.returncode == 0, accepted.stderr


def test_semver_and_tags_select_what_is_copied(
    registry: Registry, mirror: Registry, unique: str, tmp_path: Path
) -> None:
    for version in ("1.0.0", "1.1.0", "2.0.0"):
        signed_artifact(registry, unique, tmp_path, tag=version)
    target = mirror.oci(f"semver/{unique}")
    chosen = run_copy(registry.oci(unique), target, options=copying.CopyOptions(semver=">=1.0.0 <2.0.0"))
    assert [a.tag for a in chosen.artifacts] == ["1.1.0", "1.0.0"]
    listed = client_for(mirror, f"semver/{unique}").list_tags(f"semver/{unique}")
    assert {t for t in listed if is_artifact_tag(t)} == {"1.0.0", "1.1.0"}
    picked = run_copy(registry.oci(unique), target, options=copying.CopyOptions(tags=("2.0.0",)))
    assert [a.tag for a in picked.artifacts] == ["2.0.0"]


@pytest.mark.parametrize("kind", ["registry", "layout"])
def test_an_interrupted_copy_references_nothing_missing_and_a_rerun_completes(
    registry: Registry, mirror: Registry, unique: str, tmp_path: Path, kind: str
) -> None:
    signed = signed_artifact(registry, unique, tmp_path)
    target = mirror.oci(f"cut/{unique}") if kind == "registry" else f"oci-layout://{tmp_path / 'cut'}"
    seen: list[copying.Step] = []

    def stop_half_way(step: copying.Step) -> None:
        seen.append(step)
        if step.kind == "blob" and sum(s.kind == "blob" for s in seen) == 2:
            raise Interrupted

    with pytest.raises(Interrupted):
        run_copy(registry.oci(unique, ":1.0.0"), target, options=copying.CopyOptions(on_step=stop_half_way))
    dst = parse(target)
    client = copying.destination_client(dst)
    # the destination lacks content half way: no tag and no fallback index point at it yet
    assert client.head_manifest(dst.repository, "1.0.0") is None
    assert client.head_manifest(dst.repository, layout.signature_tag(signed.digest)) is None
    assert client.head_manifest(dst.repository, layout.referrers_tag(signed.digest)) is None
    if kind == "layout":
        assert layout_problems(tmp_path / "cut") == []
        assert not [p for p in (tmp_path / "cut").rglob(".*") if p.is_file()]

    done = run_copy(registry.oci(unique, ":1.0.0"), target)
    assert done.skipped("blob") == 2
    mirrored = dst.with_tag("1.0.0")
    assert verify.verify(mirrored, signed.policy, signed_repository=signed.repository).digest == signed.digest
    attest.verify_attestation(dst.with_digest(signed.digest), signed.attestation_policy, attest.HEALTHY)
    if kind == "layout":
        assert layout_problems(tmp_path / "cut") == []
        # a blob lost from a complete layout is put back by the next copy, not skipped
        manifest = json.loads(client.get_manifest("", signed.digest).content)
        lost = tmp_path / "cut" / "blobs" / "sha256" / manifest["layers"][0]["digest"].split(":", 1)[1]
        lost.unlink()
        assert set(layout_problems(tmp_path / "cut")) == {manifest["layers"][0]["digest"]}
        repaired = run_copy(registry.oci(unique, ":1.0.0"), target)
        assert repaired.copied("blob") == 1 and repaired.copied("manifest") == 0
        assert layout_problems(tmp_path / "cut") == []


def test_a_tampered_layout_blob_is_refused_naming_the_file(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    signed = signed_artifact(registry, unique, tmp_path)
    directory = tmp_path / "tampered"
    run_copy(registry.oci(unique, ":1.0.0"), f"oci-layout://{directory}")
    store = RegistryClient.for_reference(parse(f"oci-layout://{directory}"))
    manifest = json.loads(store.get_manifest("", signed.digest).content)
    layer = directory / "blobs" / "sha256" / manifest["layers"][0]["digest"].split(":", 1)[1]
    original = layer.read_bytes()
    layer.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))

    pulled = lockgate("pull", f"oci-layout://{directory}:1.0.0", "-O", str(tmp_path / "out"), cwd=tmp_path)
    assert pulled.returncode == ExitCode.VERIFICATION, pulled.stderr
    assert str(layer) in pulled.stderr and "tampered" in pulled.stderr
    assert not (tmp_path / "out").exists()

    # a tampered signature manifest: verification fails closed, naming the file
    layer.write_bytes(original)
    sig = store.head_manifest("", layout.signature_tag(signed.digest))
    assert sig is not None
    sig_file = directory / "blobs" / "sha256" / sig.split(":", 1)[1]
    sig_file.write_bytes(sig_file.read_bytes().replace(b"simplesigning", b"simpleSIGNING"))
    with pytest.raises(VerificationError) as refused:
        verify.verify(f"oci-layout://{directory}:1.0.0", signed.policy, signed_repository=signed.repository)
    assert str(sig_file) in str(refused.value)
    # copying the tampered layout onward is refused as well, before anything is tagged
    with pytest.raises(VerificationError, match=str(sig_file)):
        run_copy(f"oci-layout://{directory}:1.0.0", f"oci-layout://{tmp_path / 'onward'}")
    onward = copying.destination_client(parse(f"oci-layout://{tmp_path / 'onward'}"))
    assert onward.head_manifest("", "1.0.0") is None


def test_oras_reads_our_layout_and_we_verify_what_oras_copies(
    registry: Registry, unique: str, tmp_path: Path
) -> None:
    """Interop with ``oras``: it fetches from a layout ``lockgate copy`` wrote; ``oras copy -r``
    into a layout carries the signature and the attestation, and lockgate verifies them there."""
    from tests.integration.test_artifacts_oras import oras

    signed = signed_artifact(registry, unique, tmp_path)
    ours = tmp_path / "ours"
    run_copy(registry.oci(unique, ":1.0.0"), f"oci-layout://{ours}")
    fetched = oras("manifest", "fetch", "--oci-layout", f"{ours}:1.0.0")
    assert layout.sha256_digest(fetched) == signed.digest

    theirs = tmp_path / "theirs"
    source_repo = f"{registry.host}/{unique}"
    oras("copy", "-r", "--from-plain-http", f"{source_repo}:1.0.0", "--to-oci-layout", f"{theirs}:1.0.0")
    sig = layout.signature_tag(signed.digest)
    oras("copy", "--from-plain-http", f"{source_repo}:{sig}", "--to-oci-layout", f"{theirs}:{sig}")
    from_oras = f"oci-layout://{theirs}:1.0.0"
    verified = verify.verify(from_oras, signed.policy, signed_repository=signed.repository)
    assert verified.digest == signed.digest
    found = attest.verify_attestation(from_oras, signed.attestation_policy, attest.HEALTHY)
    assert [a.predicate["cluster"] for a in found] == ["staging"]


def test_reconcile_applies_from_a_layout_verified_as_at_the_source(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """``lockgate reconcile oci-layout://DIR:TAG``: the key signature copied with the artifact is
    accepted (naming the repository it was made for), the objects applied; a layout whose
    signature no key of the policy made is refused and nothing is applied."""
    from lockgate.signing import keys, sign
    from tests.integration.copy_support import new_key
    from tests.integration.reconcile_support import cli, configmap, dump, get, namespace, push_tree

    files = {"a.yaml": dump(namespace(unique), configmap("gap", unique, {"k": "v"}))}
    url = push_tree(registry, unique, files, "1.0.0")
    key = new_key()
    sign.sign_with_key(url, key)
    public = tmp_path / "cosign.pub"
    public.write_bytes(keys.public_key_pem(key.public_key()))
    directory = tmp_path / "layout"
    run_copy(registry.oci(unique, ":1.0.0"), f"oci-layout://{directory}")
    source_repo = f"{registry.host}/{unique}"

    pass_args = (f"oci-layout://{directory}:1.0.0", "--name", unique, "-n", f"{unique}-r")
    refused = cli(cluster, *pass_args, "--verify-key", str(public))
    assert refused.code == ExitCode.VERIFICATION, refused.err
    assert "--signed-repository" in refused.err and get(cluster, "configmap", "gap", unique) is None

    mirror_args = ("--verify-key", str(public), "--verify-signed-repository", source_repo, "-o", "json")
    run = cli(cluster, *pass_args, *mirror_args)
    assert run.code == 0, run.err
    assert run.json()["url"] == f"oci-layout://{directory}@{url.rsplit('@', 1)[1]}"
    assert get(cluster, "configmap", "gap", unique)["data"] == {"k": "v"}  # type: ignore[index]


def test_a_copy_shows_progress_on_a_terminal_only(registry: Registry, unique: str, tmp_path: Path) -> None:
    import io

    from lockgate import progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    signed_artifact(registry, unique, tmp_path, attested=False)
    shown, piped = Terminal(), io.StringIO()
    with progress.shown(stream=shown, interval=0):
        run_copy(registry.oci(unique, ":1.0.0"), f"oci-layout://{tmp_path / 'a'}")
    with progress.shown(stream=piped, interval=0):
        run_copy(registry.oci(unique, ":1.0.0"), f"oci-layout://{tmp_path / 'b'}")
    assert "copying sha256:" in shown.getvalue() and "(100%)" in shown.getvalue()
    assert piped.getvalue() == ""


def test_cli_copy_into_a_registry_that_needs_credentials(
    registry: Registry, auth_registry: Registry, unique: str, tmp_path: Path
) -> None:
    signed_artifact(registry, unique, tmp_path, attested=False)
    assert auth_registry.username and auth_registry.password
    good = f"{auth_registry.username}:{auth_registry.password}"
    target = auth_registry.oci(unique)
    wrong = f"{auth_registry.username}:nope"
    refused = lockgate("copy", registry.oci(unique, ":1.0.0"), target, "--to-creds", wrong, cwd=tmp_path)
    assert refused.returncode == ExitCode.AUTH, refused.stderr
    assert "nope" not in refused.stderr + refused.stdout
    done = lockgate("copy", registry.oci(unique, ":1.0.0"), target, "--to-creds", good, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert auth_registry.password not in done.stderr + done.stdout
    assert "copied 1.0.0 sha256:" in done.stdout and "with 1 cosign tag(s)" in done.stdout


def test_an_index_is_copied_with_what_is_attached_to_each_manifest_it_lists(
    registry: Registry, mirror: Registry, unique: str, tmp_path: Path
) -> None:
    """As ``cosign copy`` does: a platform manifest signed on its own keeps its signature."""
    from lockgate.registry.oci import OCI_INDEX, Descriptor, ImageIndex
    from lockgate.signing import sign
    from tests.integration.copy_support import new_key
    from tests.integration.signing_support import push_artifact

    children = [push_artifact(registry, unique, f"arch: {a}\n".encode(), tag=a) for a in ("amd64", "arm64")]
    fetched = [client_for(registry, unique).get_manifest(unique, url.rsplit("@", 1)[1]) for url in children]
    index = ImageIndex(tuple(Descriptor(f.media_type, f.digest, len(f.content)) for f in fetched)).to_bytes()
    client_for(registry, unique).put_manifest(unique, "multi", index, OCI_INDEX)
    key = new_key()
    sign.sign_with_key(children[1], key)

    done = run_copy(registry.oci(unique, ":multi"), mirror.oci(f"multi/{unique}"))
    assert done.artifacts[0].cosign_tags == (layout.signature_tag(fetched[1].digest),)
    child = mirror.oci(f"multi/{unique}", f"@{fetched[1].digest}")
    upstream = f"{registry.host}/{unique}"
    verified = verify.verify(child, KeyPolicy(key.public_key()), signed_repository=upstream)
    assert verified.digest == fetched[1].digest
