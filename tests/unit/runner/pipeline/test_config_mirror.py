"""A Sync reading a mirror: ``spec.url`` as ``oci-layout://DIR``, and ``spec.verify.signedRepository``
(the repository its key signatures name) read, normalised and refused at load when malformed."""

from __future__ import annotations

from pathlib import Path

import pytest

from lockgate.errors import UsageError
from lockgate.signing import keys
from runner.pipeline import config


def sync(url: str, verify: str) -> bytes:
    return (
        "apiVersion: lockgate.dev/v1alpha1\nkind: Sync\nmetadata: {name: web}\n"
        f"spec:\n  url: {url}\n  interval: 5m\n  verify: {verify}\n"
    ).encode()


def test_a_layout_url_and_the_signed_repository_become_options(tmp_path: Path) -> None:
    public = tmp_path / "k.pub"
    public.write_bytes(keys.generate_key_pair(b"").public_pem)
    text = sync("oci-layout:///srv/mirror:1.0.0", f"{{key: {public}, signedRepository: oci://ghcr.io/org/app}}")
    [options] = config.parse(text, "lockgate.yaml").syncs
    assert options.source.url == "oci-layout:///srv/mirror:1.0.0"
    assert options.source.signed_repository == "ghcr.io/org/app"
    [plain] = config.parse(sync("oci://ghcr.io/org/app:1.0.0", "{insecureSkip: true}"), "l.yaml").syncs
    assert plain.source.signed_repository is None


@pytest.mark.parametrize(
    ("url", "verify", "says"),
    [
        (
            "oci-layout:///srv/m",
            "{insecureSkip: true, signedRepository: 'ghcr.io/org/app:1.0'}",
            "lockgate.yaml:7: Sync/web: spec.verify.signedRepository 'ghcr.io/org/app:1.0': "
            "expected REGISTRY/REPOSITORY, without a tag or digest",
        ),
        ("oci-layout:///srv/m:bad tag", "{insecureSkip: true}", "spec.url: invalid tag 'bad tag'"),
        ("https://mirror/app", "{insecureSkip: true}", "does not match ^oci(-layout)?://"),
    ],
)
def test_bad_mirror_settings_are_refused_at_load(url: str, verify: str, says: str) -> None:
    with pytest.raises(UsageError) as refused:
        config.parse(sync(url, verify), "lockgate.yaml")
    assert says in refused.value.message
