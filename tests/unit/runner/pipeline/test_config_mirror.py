"""A Sync reading a mirror: ``spec.url`` as ``oci-layout://DIR``, and ``spec.verify.signedRepository``
(the repository its key signatures name) read, normalised and refused at load when malformed."""

from __future__ import annotations

from pathlib import Path, PurePath

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
    text = sync(
        "oci-layout:///srv/mirror:1.0.0", f"{{key: {public}, signedRepository: oci://ghcr.io/org/app}}"
    )
    [options] = config.parse(text, "lockgate.yaml", directory=PurePath("/srv")).syncs
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


RUNNER = "apiVersion: lockgate.dev/v1alpha1\nkind: Runner\nspec:\n  namespace: platform\n{roots}---\n"


def _file(url: str, *, namespace: str | None = None, roots: str = "") -> bytes:
    spec = f"  namespace: {namespace}\n" if namespace else ""
    return RUNNER.format(roots=roots).encode() + sync(url, "{insecureSkip: true}").replace(
        b"spec:\n", b"spec:\n" + spec.encode()
    )


def test_a_platform_sync_reads_layouts_under_its_config_files_directory(tmp_path: Path) -> None:
    [options] = config.parse(_file(f"oci-layout://{tmp_path}/m/app:1"), "l.yaml", directory=tmp_path).syncs
    assert options.source.layout_root == str(tmp_path)
    assert "spec.layoutRoots for namespace platform" in options.source.layout_setting
    with pytest.raises(UsageError) as refused:
        config.parse(_file("oci-layout:///srv/team-b/app:1"), "l.yaml", directory=tmp_path)
    said = refused.value.message
    assert (
        "l.yaml:10: Sync/web: spec.url: oci-layout:///srv/team-b/app: the syncs of namespace platform "
        in said
    )
    assert (
        f"may read layouts only under {tmp_path}; add a root holding it to the Runner's spec.layoutRoots"
        in said
    )
    # a layout named with .. is judged where it lands
    with pytest.raises(UsageError):
        config.parse(_file(f"oci-layout://{tmp_path}/../x:1"), "l.yaml", directory=tmp_path)


def test_a_tenant_sync_reads_none_until_its_namespace_has_a_root() -> None:
    with pytest.raises(UsageError) as refused:
        config.parse(
            _file("oci-layout:///srv/team-a/app:1", namespace="team-a"), "l.yaml", directory=PurePath("/srv")
        )
    assert (
        "a tenant's sync (its namespace is not the Runner's, platform) reads no layout"
        in refused.value.message
    )
    roots = "  layoutRoots:\n    - namespace: team-a\n      paths: [/srv/team-a]\n"
    text = _file("oci-layout:///srv/team-a/app:1", namespace="team-a", roots=roots)
    [options] = config.parse(text, "l.yaml").syncs
    assert options.source.layout_root == "/srv/team-a"
    # an entry replaces the platform's default too
    roots = "  layoutRoots:\n    - namespace: platform\n      paths: [/mirrors]\n"
    with pytest.raises(UsageError):
        config.parse(_file("oci-layout:///srv/app:1", roots=roots), "l.yaml", directory=PurePath("/srv"))


def test_a_root_must_be_absolute() -> None:
    roots = "  layoutRoots:\n    - namespace: team-a\n      paths: [mirrors]\n"
    with pytest.raises(UsageError) as refused:
        config.parse(_file("oci://ghcr.io/org/app:1", roots=roots), "l.yaml")
    assert (
        "l.yaml:7: Runner: spec.layoutRoots[0].paths[0]: 'mirrors' is not absolute" in refused.value.message
    )
