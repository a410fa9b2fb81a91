"""``lockgate fleet`` against the world (issue 24 item 3): where each release runs, and since when.

Five runners of five clusterNames (ap-1, eu-1, eu-2, us-1, us-2), each with its own runner
namespace, target namespace and key (tests/integration/fleet_support.py), apply and attest
the releases of one repository with real passes: all five run 1.0.0; eu-1, eu-2 and us-1 move
to 1.1.0; eu-1 finds 2.0.0 broken and attests it as failing. A key no runner holds signs
"healthy in ap-1" for 1.1.0. ``lockgate fleet`` then shows revision x cluster from the
registry alone: healthy since each runner's ``healthyAt``, failing since its ``failedAt``,
unverified for the forged one (never healthy), nothing where no runner has been; ``--semver``,
``--last`` and a tag select rows; with one key left out, that runner's attestations are
unverified. A refresh through the same reader costs only the tag list, the HEADs and the
referrers requests. ``--watch`` refreshes until SIGINT (exit 0), redrawing on a terminal.
Keys and a keyless identity count side by side (the world's private Sigstore). With
``--bind-keys-to-clusters`` a key file ``<clusterName>.pub`` attests for that cluster only: one
runner's claim for another cluster is unverified.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pty
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from lockgate import registry as registry_mod
from lockgate.errors import ExitCode
from lockgate.fleet import evidence
from lockgate.signing import attest, keys
from lockgate.signing.policy import KeyPolicy, KeySetPolicy
from tests.integration.fleet_support import CLUSTERS, Runners, digest, fleet
from tests.integration.reconcile_support import LOCKGATE
from tests.integration.signing_support import client_for
from tests.world.kube import Cluster
from tests.world.registry import Registry
from tests.world.sigstore import DEFAULT_IDENTITY, SigstoreStack

pytestmark = [
    pytest.mark.world,
    pytest.mark.filterwarnings("ignore:Attribute's length must be:UserWarning"),
]


def releases(runners: Runners) -> dict[str, str]:
    """1.0.0 everywhere, 1.1.0 in eu-1, eu-2 and us-1, 2.0.0 failing in eu-1, a forged ap-1."""
    urls = {"1.0.0": runners.push("1.0.0")}
    for name in CLUSTERS:
        done = runners.run(name)
        assert done.error is None and done.attested.startswith(f"attested healthy in {name}"), done.error
    urls["1.1.0"] = runners.push("1.1.0")
    for name in ("eu-1", "eu-2", "us-1"):
        done = runners.run(name)
        assert done.error is None and done.revision.startswith("1.1.0@"), done.error
    urls["2.0.0"] = runners.push("2.0.0", broken=True)
    broken = runners.run("eu-1")
    assert broken.error is not None and broken.attested.startswith("attested unhealthy in eu-1")
    forger = keys.load_private_key(keys.generate_key_pair(b"x").private_pem, b"x")
    attest.attest_with_key(
        urls["1.1.0"],
        forger,
        predicate_type=attest.HEALTHY,
        predicate=attest.health_predicate(
            cluster="ap-1", sync="app", revision="1.1.0", healthy=True, at=dt.datetime.now(dt.UTC), objects={}
        ),
    )
    return urls


def states(doc: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {
        r["revision"]: {name: cell["state"] for name, cell in r["clusters"].items()} for r in doc["revisions"]
    }


def test_the_fleet_shows_where_each_release_runs_and_since_when(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runners = Runners(cluster, registry, unique, tmp_path)
    urls = releases(runners)

    shown = fleet(runners.url, *runners.key_flags(), "-o", "json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["repository"] == f"{registry.host}/{unique}" and doc["clusters"] == list(CLUSTERS)
    assert [(r["revision"], r["digest"]) for r in doc["revisions"]] == [
        (version, digest(urls[version])) for version in ("2.0.0", "1.1.0", "1.0.0")
    ]
    assert states(doc) == {
        "2.0.0": {"ap-1": "none", "eu-1": "failing", "eu-2": "none", "us-1": "none", "us-2": "none"},
        "1.1.0": {
            "ap-1": "unverified",
            "eu-1": "healthy",
            "eu-2": "healthy",
            "us-1": "healthy",
            "us-2": "none",
        },
        "1.0.0": dict.fromkeys(CLUSTERS, "healthy"),
    }
    rows = {r["revision"]: r["clusters"] for r in doc["revisions"]}
    # since when: each runner's own healthyAt (failedAt), as it signed it
    for version, row in rows.items():
        for name, cell in row.items():
            if cell["state"] in ("healthy", "failing"):
                predicate = runners.attestation(name, urls[version])
                assert cell["since"] == predicate["healthyAt" if cell["state"] == "healthy" else "failedAt"]
                assert cell["syncs"] == ["app"] and cell["signers"][0].startswith("key ")
                assert str(runners.pub(name)) in cell["signers"][0]
    forged = rows["1.1.0"]["ap-1"]
    assert forged["since"] == "" and forged["unverified"] == 1 and "not signed by" in forged["reason"]

    table = fleet(runners.url, *runners.key_flags())
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["REVISION", "DIGEST", *CLUSTERS]
    eu1_failed = rows["2.0.0"]["eu-1"]["since"]
    assert lines[1].split() == [
        "2.0.0",
        digest(urls["2.0.0"])[:19],
        "—",
        "failing",
        "since",
        eu1_failed,
        "—",
        "—",
        "—",
    ]
    assert lines[2].split()[:4] == ["1.1.0", digest(urls["1.1.0"])[:19], "unverified", "healthy"]
    assert lines[2].split()[-1] == "—"  # us-2 never ran 1.1.0
    assert lines[3].split().count("healthy") == 5
    assert "unverified (signed by no --key or identity given):" in table.stdout
    assert "1.1.0 in ap-1: referrer sha256:" in table.stdout

    # one tag; a semver range; the newest digest only
    one = json.loads(fleet(f"{runners.url}:1.0.0", *runners.key_flags(), "-o", "json").stdout)
    assert [r["revision"] for r in one["revisions"]] == ["1.0.0"] and one["clusters"] == list(CLUSTERS)
    ranged = json.loads(fleet(runners.url, "--semver", ">=1.1.0", *runners.key_flags(), "-o", "json").stdout)
    assert [r["revision"] for r in ranged["revisions"]] == ["2.0.0", "1.1.0"]
    last = json.loads(fleet(runners.url, "--last", "1", *runners.key_flags(), "-o", "json").stdout)
    assert [r["revision"] for r in last["revisions"]] == ["2.0.0"]
    by_digest = fleet(f"{runners.url}@{digest(urls['1.1.0'])}", *runners.key_flags())
    assert by_digest.returncode == 0 and by_digest.stdout.splitlines()[1].startswith("sha256:")

    # us-2's key left out: its attestation is no longer evidence, and says why
    partial = fleet(runners.url, *runners.key_flags(CLUSTERS[:-1]), "-o", "json")
    assert partial.returncode == 0, partial.stderr
    cell = {r["revision"]: r["clusters"] for r in json.loads(partial.stdout)["revisions"]}["1.0.0"]["us-2"]
    assert cell["state"] == "unverified" and "not signed by" in cell["reason"]
    assert str(runners.pub("us-2")) not in cell["reason"] and str(runners.pub("eu-1")) in cell["reason"]


def test_a_refresh_reads_only_the_listing_and_the_referrers(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runners = Runners(cluster, registry, unique, tmp_path, names=("eu-1", "us-1"))
    v1 = runners.push("1.0.0")
    for name in runners.names:
        assert runners.run(name).error is None
    runners.push("1.1.0")
    assert runners.run("eu-1").error is None
    client = client_for(registry, unique)
    policy = KeySetPolicy(tuple(KeyPolicy(runners.keys[n].public_key(), n) for n in runners.names))
    reader = evidence.Reader(client, unique, [policy])
    ref = registry_mod.parse(runners.url)
    first = reader.fleet(ref, evidence.Selection())
    assert [r.revision.label for r in first.rows] == ["1.1.0", "1.0.0"]
    before = client.counts
    again = reader.fleet(ref, evidence.Selection())
    spent = {verb: n - before.get(verb, 0) for verb, n in client.counts.items() if n != before.get(verb, 0)}
    # the tag list, a HEAD per tag, and per digest the referrers (Distribution 2.8 has no
    # referrers API: a 404, then the fallback index); no referrer is fetched or verified again
    assert spent == {"get": 1 + 2 * 2, "head": 2}
    assert again.rows == first.rows and again.clusters == first.clusters
    # a new attestation is read at the next refresh, and only it is fetched
    assert runners.run("us-1").error is None
    before = client.counts
    newer = reader.fleet(ref, evidence.Selection())
    spent = {verb: n - before.get(verb, 0) for verb, n in client.counts.items() if n != before.get(verb, 0)}
    assert spent == {"get": 1 + 2 * 2 + 2, "head": 2}  # + its referrer manifest and bundle blob
    assert newer.rows[0].cell("us-1").state.value == "healthy"
    assert newer.rows[1].cell("us-1").since == runners.attestation("us-1", v1)["healthyAt"]


def _lines_until(proc: subprocess.Popen[str], done: Any, *, timeout: float) -> list[str]:
    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if done(seen):
            return seen
    raise AssertionError(f"--watch did not print what was expected; it printed:\n{''.join(seen)}")


def test_watch_refreshes_until_interrupted(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runners = Runners(cluster, registry, unique, tmp_path, names=("eu-1", "us-1"))
    runners.push("1.0.0")
    assert runners.run("eu-1").error is None
    args = [*LOCKGATE, "fleet", runners.url, *runners.key_flags(), "--watch", "--interval", "1s"]

    # JSON: one document per line and refresh; a new attestation shows up by itself
    proc = subprocess.Popen([*args, "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        (first,) = _lines_until(proc, lambda seen: len(seen) == 1, timeout=60)
        assert states(json.loads(first)) == {"1.0.0": {"eu-1": "healthy"}}
        assert runners.run("us-1").error is None
        seen = _lines_until(
            proc, lambda s: states(json.loads(s[-1]))["1.0.0"].get("us-1") == "healthy", timeout=60
        )
        assert all(json.loads(line)["repository"].endswith(unique) for line in seen)
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(20)
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert code == 0 and "Traceback" not in err and "aborted" not in err, err

    # a pipe: one table per refresh, under the time it was read; SIGTERM ends it too
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = _lines_until(proc, lambda s: sum(line.startswith("REVISION") for line in s) == 2, timeout=60)
        assert seen[0].strip().endswith("Z") and seen[1].split() == ["REVISION", "DIGEST", "eu-1", "us-1"]
        assert "\x1b[" not in "".join(seen)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0

    # a terminal: redrawn in place
    main, child = pty.openpty()
    proc = subprocess.Popen(args, stdout=child, stderr=subprocess.PIPE, text=True)
    os.close(child)
    try:
        out = b""
        deadline = time.monotonic() + 60
        while out.count(b"\x1b[H\x1b[2J") < 2 and time.monotonic() < deadline:
            out += os.read(main, 65536)
        assert out.count(b"\x1b[H\x1b[2J") >= 2, out
        assert f"Every 1s: lockgate fleet {runners.url}".encode() in out and b"REVISION" in out
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0
        os.close(main)


def test_fleet_refuses_bad_input_before_any_request(registry: Registry, unique: str, tmp_path: Path) -> None:
    pub = tmp_path / "a.pub"
    pub.write_bytes(keys.generate_key_pair(b"x").public_pem)
    (tmp_path / "broken.pub").write_text("not a key")
    url = registry.oci(unique)
    cases = [
        ((url,), "whose attestations count? pass --key FILE"),
        ((url, "--key", str(tmp_path / "missing.pub")), "cannot read public key"),
        ((url, "--key", str(tmp_path / "broken.pub")), "broken.pub"),
        ((url, "--key", str(pub), "--semver", "not a range"), "--semver 'not a range'"),
        ((url, "--key", str(pub), "--last", "0"), "--last 0: give how many digests to show, at least 1"),
        ((f"{url}:1.0.0", "--key", str(pub), "--semver", ">=1"), f"give oci://{registry.host}/{unique}"),
        ((url, "--certificate-identity", "a@b.test"), "--certificate-oidc-issuer"),
        ((url, "--key", str(pub), "--watch", "--interval", "0s"), "--interval 0: give a duration above zero"),
        ((url, "--key", str(pub), "--watch", "--interval", "soon"), "invalid duration 'soon'"),
    ]
    for args, message in cases:
        refused = fleet(*args)
        assert refused.returncode == ExitCode.USAGE, (args, refused.stderr)
        assert message in refused.stderr and "Traceback" not in refused.stderr, (args, refused.stderr)
    unreachable = fleet("oci://127.0.0.1:9/nothing", "--key", str(pub), "-o", "json")
    assert unreachable.returncode == ExitCode.REGISTRY, unreachable.stderr
    assert json.loads(unreachable.stdout)["error"]["exitCode"] == ExitCode.REGISTRY


def test_a_keyless_attester_counts_by_its_identity(
    sigstore_stack: SigstoreStack, cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    """Keys and a keyless identity at once: eu-1's runner signs with its key, an edge cluster's
    attestation is signed keyless (``lockgate attest --keyless``, the world's private Sigstore)."""
    runners = Runners(cluster, registry, unique, tmp_path, names=("eu-1",))
    v1 = runners.push("1.0.0")
    assert runners.run("eu-1").error is None
    for edge, identity in (("edge-1", DEFAULT_IDENTITY), ("edge-2", "someone@else.test")):
        predicate = attest.health_predicate(
            cluster=edge, sync="app", revision="1.0.0", healthy=True, at=dt.datetime.now(dt.UTC), objects={}
        )
        (tmp_path / f"{edge}.json").write_text(json.dumps(predicate))
        made = subprocess.run(
            [
                *LOCKGATE,
                "attest",
                v1,
                "--keyless",
                "--identity-token",
                sigstore_stack.token(identity),
                "--trust-config",
                str(sigstore_stack.trust_config),
                "--predicate-type",
                attest.HEALTHY,
                "--predicate",
                str(tmp_path / f"{edge}.json"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert made.returncode == 0, made.stderr
    shown = fleet(
        runners.url,
        *runners.key_flags(),
        "--certificate-identity",
        DEFAULT_IDENTITY,
        "--certificate-oidc-issuer",
        sigstore_stack.issuer,
        "--trusted-root",
        str(sigstore_stack.trusted_root),
        "-o",
        "json",
    )
    assert shown.returncode == 0, shown.stderr
    (row,) = json.loads(shown.stdout)["revisions"]
    cells = row["clusters"]
    assert {name: cell["state"] for name, cell in cells.items()} == {
        "edge-1": "healthy",
        "edge-2": "unverified",
        "eu-1": "healthy",
    }
    assert cells["edge-1"]["signers"] == [f"{DEFAULT_IDENTITY} (issuer {sigstore_stack.issuer})"]
    assert "someone@else.test" in cells["edge-2"]["reason"]
    assert cells["eu-1"]["since"] == runners.attestation("eu-1", v1)["healthyAt"]


def test_bound_keys_show_a_runners_claim_for_another_cluster_as_unverified(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runners = Runners(cluster, registry, unique, tmp_path, names=("eu-1", "us-1"))
    url = runners.push("1.0.0")
    at = dt.datetime.now(dt.UTC)
    for claimed in ("eu-1", "us-1"):  # eu-1's runner signs for itself, then as us-1
        predicate = attest.health_predicate(
            cluster=claimed, sync="app", revision="1.0.0", healthy=True, at=at, objects={}
        )
        attest.attest_with_key(url, runners.keys["eu-1"], predicate_type=attest.HEALTHY, predicate=predicate)

    loose = fleet(runners.url, *runners.key_flags(), "-o", "json")
    assert loose.returncode == 0, loose.stderr
    assert states(json.loads(loose.stdout)) == {"1.0.0": {"eu-1": "healthy", "us-1": "healthy"}}
    assert "2 keys, bound to no cluster: each is trusted to attest for every cluster" in loose.stderr

    bound = fleet(runners.url, *runners.key_flags(), "--bind-keys-to-clusters", "-o", "json")
    assert bound.returncode == 0, bound.stderr
    assert "bound to no cluster" not in bound.stderr
    doc = json.loads(bound.stdout)
    assert states(doc) == {"1.0.0": {"eu-1": "healthy", "us-1": "unverified"}}
    forged = doc["revisions"][0]["clusters"]["us-1"]
    assert forged["reason"].endswith(f"signed by the key for eu-1 ({runners.pub('eu-1')}), claims us-1")

    # us-1's runner attests with its own key: now it counts
    predicate = attest.health_predicate(
        cluster="us-1", sync="app", revision="1.0.0", healthy=True, at=at, objects={}
    )
    attest.attest_with_key(url, runners.keys["us-1"], predicate_type=attest.HEALTHY, predicate=predicate)
    again = fleet(runners.url, *runners.key_flags(), "--bind-keys-to-clusters", "-o", "json")
    assert states(json.loads(again.stdout)) == {"1.0.0": {"eu-1": "healthy", "us-1": "healthy"}}
