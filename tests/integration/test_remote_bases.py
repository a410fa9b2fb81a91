"""The runner's kustomize build reads the artifact alone (issue 21 item 8): a remote resource in a
kustomization is refused by default, naming the file and the URL, before anything is fetched,
and fetched once the Runner setting ``allowRemoteBases`` (``reconcile --allow-remote-bases``)
opts in. The "remote" is a plain HTTP file server on loopback, which is what kustomize fetches
an ``http://`` resource from; it records every request it gets."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.integration.reconcile_support import cli, configmap, dump, get, namespace, push_tree
from tests.integration.serve_support import runner_doc, sync_doc, write_config
from tests.world.kube import Cluster
from tests.world.process import free_port
from tests.world.registry import Registry

pytestmark = pytest.mark.world


@contextmanager
def remote_file(body: str) -> Iterator[tuple[str, list[str]]]:
    """``(url, requests)``: an HTTP server answering every GET with ``body``."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.path)
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/yaml")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/remote.yaml", seen
    finally:
        server.shutdown()
        server.server_close()


def test_a_remote_resource_is_refused_by_default_and_fetched_when_the_runner_allows_it(
    cluster: Cluster, registry: Registry, unique: str, tmp_path: Path
) -> None:
    runner_ns = f"{unique}-r"
    with remote_file(dump(configmap("remote", unique, {"from": "http"}))) as (url, seen):
        files = {
            "app/kustomization.yaml": f"resources:\n- ns.yaml\n- {url}\n",
            "app/ns.yaml": dump(namespace(unique)),
        }
        artifact = push_tree(registry, unique, files)
        args = ("--name", unique, "-n", runner_ns, "--insecure-skip-verify", "--path", "app")
        refused = cli(cluster, artifact, *args)
        assert refused.code == 8, refused.err
        assert f"app/kustomization.yaml: resources[1]: {url} is a remote reference" in refused.err
        assert "allowRemoteBases: true in the Runner document (reconcile --allow-remote-bases)" in refused.err
        assert seen == [] and get(cluster, "namespace", unique) is None  # nothing fetched, nothing applied

        config = tmp_path / "lockgate.yaml"
        sync = sync_doc(unique, artifact, runner_ns, path="app", prune=False)
        write_config(config, [runner_doc(free_port(), free_port()), sync])
        assert cli(cluster, "--config", str(config)).code == 8 and seen == []

        write_config(config, [runner_doc(free_port(), free_port(), allowRemoteBases=True), sync])
        allowed = cli(cluster, "--config", str(config))
        assert allowed.code == 0, allowed.err
        assert seen == ["/remote.yaml"]
        assert get(cluster, "configmap", "remote", unique)["data"] == {"from": "http"}  # type: ignore[index]
        again = cli(cluster, artifact, *args, "--allow-remote-bases", "--dry-run")
        assert again.code == 0, again.err
        assert seen == ["/remote.yaml", "/remote.yaml"]
