"""Nothing a tenant writes reaches a terminal raw (issue 30 item 7; docs/security.md §20).

A tenant writes text lockgate prints: its custom resources' status messages (which the health
wait quotes in its error, and the pass records in the inventory), and the inventory itself
(the ApplySet parent Secret sits where the tenant's identity may write: revision, source,
history). Printed raw, ``ESC ] 0 ; ... BEL`` retitles the terminal and CSI sequences (7-bit
``ESC [`` or the C1 ``U+009B``) move the cursor and erase what was shown; a bidi override
(``U+202E``) reverses what follows. Here a real sync's object says such a message, its
inventory Secret is rewritten with such values, and ``lockgate status``, ``lockgate status
NAME`` and ``serve``'s text log must carry none of those characters, only their escapes.
"""

from __future__ import annotations

import base64
import gzip
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.history_support import lockgate
from tests.integration.reconcile_support import configmap, dump, push_tree
from tests.integration.serve_support import start_serve, sync_doc
from tests.world.kube import Cluster
from tests.world.registry import Registry

pytestmark = pytest.mark.world

#: OSC 0 (set the title) ended by BEL, CSI erase-screen, the C1 CSI, a bidi override
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil"
#: what must never be printed raw
FORBIDDEN = ("\x1b", "\x07", "\x9b", "\u202e")
#: how it is printed instead
ESCAPED = "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eevil"
KIND, PLURAL = "Gadget", "gadgets"


def _crd(group: str) -> dict[str, Any]:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": KIND, "plural": PLURAL, "singular": "gadget"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
            ],
        },
    }


def _gadget(group: str, ns: str) -> dict[str, Any]:
    """Not ready, saying so in the tenant's words (no status subresource: the manifest writes it)."""
    ready = {"type": "Ready", "status": "False", "reason": "Hostile", "message": HOSTILE}
    return {
        "apiVersion": f"{group}/v1",
        "kind": KIND,
        "metadata": {"name": "g", "namespace": ns},
        "status": {"conditions": [ready]},
    }


def _raw(text: str) -> list[str]:
    return [repr(c) for c in FORBIDDEN if c in text]


def _rewrite_inventory(cluster: Cluster, runner_ns: str, name: str) -> None:
    """What a tenant who can write the parent Secret does: its own words in every field shown."""
    secret = json.loads(
        cluster.kubectl("get", "secret", f"lockgate-{name}", "-n", runner_ns, "-o", "json").stdout
    )
    doc = json.loads(gzip.decompress(base64.b64decode(secret["data"]["inventory.json.gz"])))
    doc["revision"] = f"v1{HOSTILE}"
    doc["source"] = f"oci://example.com/{HOSTILE}"
    for entry in doc.get("history") or []:
        entry["revision"] = f"v0{HOSTILE}"
    encoded = base64.b64encode(gzip.compress(json.dumps(doc).encode())).decode()
    patch = {"data": {"inventory.json.gz": encoded}}
    cluster.kubectl(
        "patch", "secret", f"lockgate-{name}", "-n", runner_ns, "--type=merge", "-p", json.dumps(patch)
    )


def test_status_and_serve_logs_show_a_tenants_control_characters_escaped(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns, group = f"{unique}-r", f"{unique}.example.com"
    cluster.kubectl("create", "namespace", unique)
    cluster.kubectl("create", "namespace", runner_ns)
    cluster.kubectl("apply", "-f", "-", input=json.dumps(_crd(group)))
    cluster.kubectl("wait", "--for=condition=Established", f"crd/{PLURAL}.{group}", "--timeout=60s")
    try:
        objects = [_gadget(group, unique), configmap("app", unique, {"v": "1"})]
        url = push_tree(registry, unique, {"app.yaml": dump(*objects)}).rsplit("@", 1)[0]
        sync = sync_doc("tenant", url, runner_ns, wait=True, timeout="3s")
        served = start_serve(cluster, tmp_path, [sync], runner={"namespace": runner_ns}, log_format="text")
        try:
            deadline = time.monotonic() + 90
            while "pass finished" not in served.log.read_text(errors="replace"):
                assert time.monotonic() < deadline, served.tail()
                assert served.proc.poll() is None, served.tail()
                time.sleep(0.2)
        finally:
            assert served.stop() == 0, served.tail()
        log = served.log.read_bytes().decode("utf-8", "replace")
        assert "pass finished" in log and "pwned" in log, log[-2000:]

        _rewrite_inventory(cluster, runner_ns, "tenant")
        table = lockgate(cluster, "status", "-n", runner_ns)
        detail = lockgate(cluster, "status", "tenant", "-n", runner_ns)
        assert table.code == 0 and detail.code == 0, table.err + detail.err
        printed = {
            "serve's text log": log,
            "status": table.out + table.err,
            "status NAME": detail.out + detail.err,
        }
        raw = {where: _raw(text) for where, text in printed.items() if _raw(text)}
        assert raw == {}, f"raw control characters printed: {raw}"
        assert ESCAPED in log, log[-2000:]
        assert "v1\\x1b]0;pwned\\x07" in table.out, table.out  # the column is cut
        assert f"oci://example.com/{ESCAPED}" in detail.out, detail.out
        assert "v0\\x1b]0;pwned\\x07" in detail.out, detail.out  # the history column is cut
        # JSON stays exact: the tenant's words as they are, escaped the JSON way
        as_json = lockgate(cluster, "status", "tenant", "-n", runner_ns, "-o", "json")
        assert json.loads(as_json.out)["revision"] == f"v1{HOSTILE}"
    finally:
        cluster.kubectl("delete", "crd", f"{PLURAL}.{group}", "--wait=false", check=False)
