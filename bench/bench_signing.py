"""Signature verification per artifact: ``lockgate verify`` against ``cosign verify``.

Both run against the same registry and the same signature, in the same run: a key
signature in the legacy ``.sig`` layout (written by lockgate) and in the cosign v3 bundle
layout (written by cosign, found through the referrers fallback index), and a keyless
signature (written by lockgate through the private Sigstore stack of tests/world/sigstore.py:
OIDC issuer, Fulcio, CT log, Rekor v2, TSA; stored as a bundle referrer), checked against
the stack's trusted root with the same certificate identity and OIDC issuer by both tools.
Each scenario times the ``lockgate verify`` CLI (a child process, like cosign) and the
library call the runner makes (in process). ``run(world)`` plugs into ``bench/run.py`` and
starts the Sigstore stack for the keyless scenario; ``python -m bench.bench_signing`` starts
its own registry and stack.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from bench.common import BenchResult, best_of
from lockgate import registry
from lockgate.signing import keys, layout, sign, verify
from lockgate.signing.policy import KeylessPolicy, KeyPolicy, Match
from tests.world.binaries import binary
from tests.world.sigstore import DEFAULT_IDENTITY, SigstoreStack, start_sigstore

PASSWORD = "bench"
REPEATS = 5


def _push(host: str, repo: str, content: bytes) -> str:
    ref = registry.parse(f"oci://{host}/{repo}")
    client = registry.RegistryClient.for_reference(ref)
    blobs = [
        (b"{}", "application/vnd.cncf.flux.config.v1+json"),
        (content, "application/vnd.cncf.flux.content.v1.tar+gzip"),
    ]
    for data, _ in blobs:
        client.upload_blob(repo, data, digest=layout.sha256_digest(data), size=len(data))
    manifest = {
        "schemaVersion": 2,
        "mediaType": layout.OCI_MANIFEST,
        "config": layout.descriptor(blobs[0][1], blobs[0][0]),
        "layers": [layout.descriptor(blobs[1][1], blobs[1][0])],
    }
    digest = client.put_manifest(repo, "latest", json.dumps(manifest).encode(), layout.OCI_MANIFEST)
    return f"oci://{host}/{repo}@{digest}"


def _run(argv: list[str], cwd: Path) -> None:
    env = dict(
        os.environ,
        COSIGN_PASSWORD=PASSWORD,
        LOCKGATE_PASSWORD=PASSWORD,
        TUF_ROOT=str(cwd / "tuf"),
        HOME=str(cwd),
    )
    subprocess.run(argv, cwd=cwd, env=env, check=True, capture_output=True, stdin=subprocess.DEVNULL)


def collect(host: str, workdir: Path) -> list[BenchResult]:
    cosign = str(binary("cosign"))
    pair = keys.generate_key_pair(PASSWORD.encode())
    (workdir / "bench.key").write_bytes(pair.private_pem)
    (workdir / "bench.pub").write_bytes(pair.public_pem)
    legacy = _push(host, "bench-signing-legacy", b"legacy")
    sign.sign_with_key(legacy, keys.load_private_key(pair.private_pem, PASSWORD.encode()))
    bundled = _push(host, "bench-signing-bundle", b"bundle")
    _run(
        [
            cosign,
            "sign",
            "--key",
            "bench.key",
            "--tlog-upload=false",
            "--use-signing-config=false",
            "--allow-http-registry",
            "--yes",
            bundled.removeprefix("oci://"),
        ],
        workdir,
    )
    results = []
    policy = KeyPolicy.from_file(workdir / "bench.pub")
    for scenario, ref in (("key, legacy .sig layout", legacy), ("key, cosign v3 bundle referrer", bundled)):
        ours = [sys.executable, "-m", "lockgate", "verify", ref, "--key", "bench.pub"]
        peer = [
            cosign,
            "verify",
            "--key",
            "bench.pub",
            "--insecure-ignore-tlog=true",
            "--allow-http-registry",
            ref.removeprefix("oci://"),
        ]
        _run(ours, workdir)
        _run(peer, workdir)
        peer_seconds = round(best_of(REPEATS, functools.partial(_run, peer, workdir)), 3)
        results.append(
            BenchResult(
                benchmark="verify",
                scenario=f"{scenario}, CLI",
                peer="cosign verify",
                peer_seconds=peer_seconds,
                ours_seconds=round(best_of(REPEATS, functools.partial(_run, ours, workdir)), 3),
                goal="no slower than cosign",
                extra={"repeats": REPEATS, "measure": "median wall time, child process"},
            )
        )
        # what the runner does: a library call in a long-running process
        results.append(
            BenchResult(
                benchmark="verify",
                scenario=f"{scenario}, library call (runner)",
                peer="cosign verify",
                peer_seconds=peer_seconds,
                ours_seconds=round(best_of(REPEATS, functools.partial(verify.verify, ref, policy)), 3),
                goal="no slower than cosign",
                extra={"repeats": REPEATS, "measure": "median wall time, in process"},
            )
        )
    return results


def collect_keyless(host: str, workdir: Path, stack: SigstoreStack) -> list[BenchResult]:
    """Keyless: lockgate signs through the stack; both tools verify identity, issuer and root."""
    cosign = str(binary("cosign"))
    ref = _push(host, "bench-signing-keyless", b"keyless")
    sign.sign_keyless(ref, token=stack.token(), trust_config=stack.trust_config)
    identity = ["--certificate-identity", DEFAULT_IDENTITY, "--certificate-oidc-issuer", stack.issuer]
    trusted_root = ["--trusted-root", str(stack.trusted_root)]
    ours = [sys.executable, "-m", "lockgate", "verify", ref, *identity, *trusted_root, "--insecure"]
    peer = [cosign, "verify", *trusted_root, *identity, "--allow-http-registry", ref.removeprefix("oci://")]
    policy = KeylessPolicy(
        identity=Match(DEFAULT_IDENTITY), issuer=Match(stack.issuer), trusted_root=stack.trusted_root
    )
    _run(ours, workdir)
    _run(peer, workdir)
    verify.verify(ref, policy)
    scenario = "keyless (Fulcio, Rekor v2, TSA), bundle referrer"
    peer_seconds = round(best_of(REPEATS, functools.partial(_run, peer, workdir)), 3)
    return [
        BenchResult(
            benchmark="verify",
            scenario=f"{scenario}, CLI",
            peer="cosign verify",
            peer_seconds=peer_seconds,
            ours_seconds=round(best_of(REPEATS, functools.partial(_run, ours, workdir)), 3),
            goal="no slower than cosign",
            extra={"repeats": REPEATS, "measure": "median wall time, child process"},
        ),
        BenchResult(
            benchmark="verify",
            scenario=f"{scenario}, library call (runner)",
            peer="cosign verify",
            peer_seconds=peer_seconds,
            ours_seconds=round(best_of(REPEATS, functools.partial(verify.verify, ref, policy)), 3),
            goal="no slower than cosign",
            extra={"repeats": REPEATS, "measure": "median wall time, in process"},
        ),
    ]


def _collect_all(host: str, workdir: Path) -> list[BenchResult]:
    results = collect(host, workdir)
    stack = start_sigstore(workdir)
    try:
        with warnings.catch_warnings():
            # Fulcio's ephemeral CA names its country "USA"; cryptography warns that it is not 2 letters
            warnings.filterwarnings("ignore", "Attribute's length must be", UserWarning)
            results.extend(collect_keyless(host, workdir, stack))
    finally:
        stack.stop()
    return results


def run(world: Any) -> list[BenchResult]:
    """The bench/run.py hook."""
    with tempfile.TemporaryDirectory(prefix="lockgate-bench-signing-") as tmp:
        return _collect_all(world.registry.host, Path(tmp))


def main() -> int:
    from tests.world.registry import start_registry

    with tempfile.TemporaryDirectory(prefix="lockgate-bench-signing-") as tmp:
        reg = start_registry(Path(tmp))
        try:
            for result in _collect_all(reg.host, Path(tmp)):
                print(json.dumps(result.as_dict()))
        finally:
            reg.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
