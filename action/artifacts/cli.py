"""Click commands for the artifact verbs: parse flags, make one library call, print the value.

Each command imports the library it calls inside its body: loading this module (to run one
command, or for its ``--help``) must not import the registry's HTTP stack, YAML, or the
other commands' code.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from action import cliopts
from lockgate import output, terminal
from lockgate.artifact import limits

if TYPE_CHECKING:
    from action.artifacts import source

F = TypeVar("F", bound=Callable[..., Any])


def _build_options(func: F) -> F:
    for decorator in reversed(
        (
            click.option("--render", is_flag=True, help="Render a kustomization or a Helm chart first."),
            click.option(
                "--values", "values", multiple=True, type=click.Path(path_type=Path), help="Helm values file."
            ),
            click.option("--set", "set_values", multiple=True, metavar="KEY=VALUE", help="Helm --set value."),
            click.option("--release-name", help="Helm release name (default: the chart's directory name)."),
            click.option("--namespace", "helm_namespace", help="Helm release namespace (Release.Namespace)."),
            click.option(
                "--skip-crds", is_flag=True, help="Leave the charts' crds/ out (Helm's --skip-crds)."
            ),
            click.option(
                "--allow-lookup",
                is_flag=True,
                help="Render a chart that calls lookup (it returns an empty map in CI), with a warning.",
            ),
            click.option(
                "--kube-version", help="Kubernetes version for .Capabilities.KubeVersion (as helm template)."
            ),
            click.option(
                "--api-versions",
                "api_versions",
                multiple=True,
                metavar="GROUP/VERSION[/KIND]",
                help="Add to .Capabilities.APIVersions (repeatable, as helm template).",
            ),
            click.option(
                "--capabilities-from",
                metavar="oci://REGISTRY/REPO",
                help="Render the chart with the Kubernetes and API versions the --cluster runners attested "
                "there (their Runner's spec.capabilities).",
            ),
            click.option(
                "--cluster",
                "clusters",
                multiple=True,
                metavar="NAME",
                help="A clusterName for --capabilities-from (repeatable: what all of them serve).",
            ),
            click.option(
                "--capabilities-key",
                "capabilities_keys",
                multiple=True,
                type=click.Path(path_type=Path),
                help="Public key of a runner that attests capabilities (repeatable; <clusterName>.pub binds "
                "it to that cluster).",
            ),
            click.option("--ignore-paths", multiple=True, help="Extra ignore patterns (.gitignore syntax)."),
            click.option(
                "--resolve-symlinks", is_flag=True, help="Copy the targets of symlinks inside the tree."
            ),
            click.option("--no-validate", is_flag=True, help="Do not parse the YAML files before packing."),
            click.option(
                "--allow-private-keys",
                is_flag=True,
                help="Pack files holding a private key (refused by default).",
            ),
            click.option(
                "--strict", is_flag=True, help="A plain (unencrypted) Secret is an error, not a warning."
            ),
            click.option(
                "--max-ratio",
                type=click.FloatRange(min=0, min_open=True),
                default=limits.Limits.max_ratio,
                show_default=True,
                help="Refuse a layer compressing better than runners extract (their --max-ratio).",
            ),
        )
    ):
        func = decorator(func)
    return func


def _build(
    render: bool,
    values: tuple[Path, ...],
    set_values: tuple[str, ...],
    release_name: str | None,
    helm_namespace: str | None,
    skip_crds: bool,
    allow_lookup: bool,
    kube_version: str | None,
    api_versions: tuple[str, ...],
    capabilities_from: str | None,
    clusters: tuple[str, ...],
    capabilities_keys: tuple[Path, ...],
    ignore_paths: tuple[str, ...],
    resolve_symlinks: bool,
    no_validate: bool,
    allow_private_keys: bool,
    strict: bool,
    max_ratio: float,
    creds: str | None = None,
    insecure: bool = False,
) -> source.BuildOptions:
    """The build's options; with ``--capabilities-from``, the clusters' attested capabilities are
    read (and verified) here, once for every directory a push packs."""
    from action.artifacts import capabilities, source
    from lockgate.render import HelmOptions

    helm = HelmOptions(
        values=values,
        set_values=set_values,
        release=release_name,
        namespace=helm_namespace,
        skip_crds=skip_crds,
        allow_lookup=allow_lookup,
        kube_version=kube_version,
        api_versions=api_versions,
    )
    request = capabilities.CapabilitiesRequest(
        url=capabilities_from, clusters=clusters, keys=capabilities_keys
    )
    helm = capabilities.for_clusters(
        request, helm, render=render, client_for=lambda ref: _client(ref, creds, insecure)
    )
    return source.BuildOptions(
        ignore_paths=ignore_paths,
        resolve_symlinks=resolve_symlinks,
        render=render,
        helm=helm,
        validate=not no_validate,
        allow_private_keys=allow_private_keys,
        strict=strict,
        max_ratio=max_ratio,
    )


def _emit(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=False))


_output = cliopts.output_option
#: ``--quiet``: no progress line on a terminal (there is none elsewhere)
_quiet = click.option("--quiet", "-q", is_flag=True, help="No progress line on the terminal.")
_registry_options = cliopts.registry_options
_client = cliopts.client_for


@click.command("build")
@click.argument("path")
@click.option(
    "--out",
    "-O",
    "out",
    type=output.OutPath(path_type=Path),
    help="Write the layer (tar+gzip) to this file (default: nowhere, only its digest is printed).",
)
@_build_options
@_output
@_quiet
def build(path: str, out: Path | None, output: str, quiet: bool, **flags: Any) -> None:
    """Pack PATH (a directory, a file or - for stdin) into a reproducible tar+gzip layer."""
    from action.artifacts import push as push_mod
    from lockgate import paths, progress

    if out is not None:
        paths.require_writable_file(out, "--out")
    options = _build(**flags)
    with tempfile.TemporaryDirectory(prefix="lockgate-build-") as tmp, progress.shown(quiet=quiet):
        dest = out or Path(tmp) / "artifact.tgz"
        layer = push_mod.build_layer(path, dest, options)
    files = sum(1 for e in layer.entries if not e.is_dir)
    if output == "json":
        _emit(
            {"digest": layer.digest, "size": layer.size, "files": files, "output": str(out) if out else None}
        )
        return
    terminal.echo(f"{layer.digest} {files} files, {layer.size} bytes" + (f" -> {out}" if out else ""))


@click.command("push")
@click.argument("args", nargs=-1, metavar="PATH oci://REGISTRY/REPO:TAG")
@click.option(
    "--each", "each", metavar="GLOB", help="Push one artifact per matching directory; {name} in the target."
)
@click.option("--source", help="Source URL annotation (default: from GitHub Actions or the Git remote).")
@click.option("--revision", help="Revision annotation, <branch>@sha1:<sha> (default: from Actions or Git).")
@click.option(
    "--created", help="'now', epoch seconds or RFC 3339 (default: SOURCE_DATE_EPOCH or commit time)."
)
@click.option(
    "-a",
    "--annotation",
    "annotations",
    multiple=True,
    metavar="KEY=VALUE",
    help="Manifest annotation (repeatable), as flux push artifact --annotations.",
)
@click.option("--tag", "tags", multiple=True, help="Also point these tags at the artifact.")
@click.option(
    "--sign",
    "sign_mode",
    type=click.Choice(["key", "keyless"]),
    help="Sign the pushed digest: with --key (password from LOCKGATE_PASSWORD/COSIGN_PASSWORD) or keyless.",
)
@click.option("--key", "key_path", type=click.Path(path_type=Path), help="cosign private key for --sign key.")
@click.option(
    "--identity-token", envvar="SIGSTORE_ID_TOKEN", help="OIDC token for --sign keyless (else ambient)."
)
@click.option(
    "--trust-config",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="Sigstore client trust config of a private Sigstore (--sign keyless).",
)
@_output
@_build_options
@_registry_options
@_quiet
def push(
    args: tuple[str, ...],
    each: str | None,
    source: str | None,
    revision: str | None,
    created: str | None,
    annotations: tuple[str, ...],
    tags: tuple[str, ...],
    sign_mode: str | None,
    key_path: Path | None,
    identity_token: str | None,
    trust_config: Path | None,
    output: str,
    creds: str | None,
    insecure: bool,
    quiet: bool,
    **flags: Any,
) -> None:
    """Build and push PATH to oci://REGISTRY/REPO:TAG in Flux's artifact format."""
    _require_push_arguments(args, each)
    from action.artifacts import push as push_mod
    from action.artifacts import signer as signer_mod
    from lockgate import progress
    from lockgate.artifact import manifest

    options = push_mod.PushOptions(
        source=source,
        revision=revision,
        created=created,
        annotations=manifest.parse_annotations(annotations),
        extra_tags=tags,
        build=_build(**flags, creds=creds, insecure=insecure),
    )
    sign = signer_mod.SignOptions(
        mode=sign_mode, key_path=key_path, token=identity_token, trust_config=trust_config
    )
    try:
        with progress.shown(quiet=quiet):
            results = push_mod.push_targets(
                args,
                each=each,
                options=options,
                sign=sign,
                client_for=lambda ref: _client(ref, creds, insecure),
            )
    except push_mod.PartialPush as partial:
        # every directory's outcome, then the error (exit 10): what went out is not hidden
        if output == "json":
            _emit(push_mod.partial_json(partial))
            partial.json_reported = True  # the rows include the failure: no second JSON document
        else:
            for r in partial.results:
                terminal.echo(f"{r.status.value} {r.reference}@{r.digest}")
            terminal.echo(f"failed {partial.failed}")
            for path in partial.left:
                terminal.echo(f"not attempted {path}")
        raise
    if output == "json":
        _emit(results[0].to_json() if each is None else push_mod.results_json(results))
        return
    for r in results:
        terminal.echo(f"{r.status.value} {r.reference}@{r.digest}")
        if r.signed is not None:
            terminal.echo(r.signed.describe())


def _require_push_arguments(args: tuple[str, ...], each: str | None) -> None:
    """Name what is missing from ``push``'s arguments (click would only say ``ARGS...``)."""
    from lockgate.errors import UsageError

    if each is not None:
        if not args:
            raise UsageError(
                "push --each needs the target: lockgate push --each 'apps/*' oci://REGISTRY/REPO/{name}:TAG"
            )
        return
    if not args:
        raise UsageError(
            "push needs the manifests' PATH and the target oci://REGISTRY/REPO:TAG, e.g. "
            "lockgate push ./deploy oci://ghcr.io/org/app:v1 (or --each GLOB and a target)"
        )
    if len(args) == 1:
        missing = (
            "the manifests' PATH before it"
            if args[0].startswith("oci://")
            else ("the target oci://REGISTRY/REPO:TAG after it")
        )
        raise UsageError(f"push {args[0]}: missing {missing}: lockgate push PATH oci://REGISTRY/REPO:TAG")


@click.command("pull")
@click.argument("reference")
@click.option(
    "--out",
    "-O",
    "out",
    type=output.OutPath(path_type=Path),
    required=True,
    help="Directory to create and extract into (it must not exist).",
)
@click.option("--media-type", help="Layer media type to extract (default: Flux's, else the first).")
@limits.options
@_output
@_registry_options
@_quiet
def pull(
    reference: str,
    out: Path,
    media_type: str | None,
    max_size: int,
    max_files: int,
    max_ratio: float,
    output: str,
    creds: str | None,
    insecure: bool,
    quiet: bool,
) -> None:
    """Pull an artifact by digest and extract it safely into a new directory."""
    from lockgate import paths, progress, registry
    from lockgate.artifact import metadata
    from lockgate.artifact import pull as pull_mod

    ref = registry.parse(reference, default_tag="latest")
    paths.require_new_directory(out, "--out")
    bounds = limits.Limits(max_total_bytes=max_size, max_files=max_files, max_ratio=max_ratio)
    with progress.shown(quiet=quiet):
        result = pull_mod.pull(_client(ref, creds, insecure), ref, out, media_type=media_type, limits=bounds)
    if output == "json":
        _emit(result.to_json())
        return
    revision = result.resolved.manifest.annotations.get(metadata.REVISION, "")
    terminal.echo(
        f"pulled {ref.name}@{result.resolved.digest} ({result.files} files) to {out}"
        + (f"; revision {revision}" if revision else "")
    )


@click.command("tag")
@click.argument("reference")
@click.argument("tags", nargs=-1, required=True)
@_output
@_registry_options
def tag(reference: str, tags: tuple[str, ...], output: str, creds: str | None, insecure: bool) -> None:
    """Point new TAGS at the artifact REFERENCE resolves to."""
    from action.artifacts import inspect as inspect_mod
    from lockgate import registry

    ref = registry.parse(reference, default_tag="latest")
    digest = inspect_mod.tag(_client(ref, creds, insecure), ref, tags)
    if output == "json":
        _emit({"repository": ref.name, "digest": digest, "tags": list(tags)})
        return
    for new in tags:
        terminal.echo(f"tagged {ref.with_tag(new)}@{digest}")


@click.command("inspect")
@click.argument("reference")
@click.option("--media-type", help="Layer media type to list (default: Flux's, else the first).")
@_output
@_registry_options
def inspect(reference: str, media_type: str | None, output: str, creds: str | None, insecure: bool) -> None:
    """Show an artifact's manifest digest, annotations, layers and files."""
    from action.artifacts import inspect as inspect_mod
    from lockgate import registry

    ref = registry.parse(reference, default_tag="latest")
    info = inspect_mod.inspect(_client(ref, creds, insecure), ref, media_type=media_type)
    if output == "json":
        _emit(info.to_json())
        return
    value = info.to_json()
    terminal.echo(f"digest: {value['digest']}")
    terminal.echo(f"mediaType: {value['mediaType']}")
    if isinstance(info, inspect_mod.IndexInspection):
        for entry in value["manifests"]:
            platform = entry.get("platform") or {}
            where = "/".join(str(platform[k]) for k in ("os", "architecture", "variant") if k in platform)
            line = f"manifest {entry.get('mediaType', '-')} {entry.get('digest', '-')} {where}"
            terminal.echo(line.rstrip())
        terminal.echo(value["note"])
        return
    terminal.echo(f"config {value['config']['mediaType']} {value['config']['digest']}")
    for key, val in sorted(value["annotations"].items()):
        terminal.echo(f"annotation {key}: {val}")
    for layer in value["layers"]:
        terminal.echo(f"layer {layer['mediaType']} {layer['digest']} {layer['size']} bytes")
    for f in info.files:
        if not f.is_dir:
            terminal.echo(f"  {f.mode:04o} {f.size:>10} {f.name}")
    if info.note:
        terminal.echo(info.note)


@click.command("list")
@click.argument("reference")
@click.option("--all", "show_all", is_flag=True, help="Also show .sig/.att/.sbom and sha256-* tags.")
@click.option(
    "--page-size",
    type=int,
    default=1000,
    show_default=True,
    help="Tags per registry page (n=); pages follow Link.",
)
@_output
@_registry_options
def list_(
    reference: str, show_all: bool, page_size: int, output: str, creds: str | None, insecure: bool
) -> None:
    """List the artifact tags of a repository."""
    from action.artifacts import inspect as inspect_mod
    from lockgate import registry
    from lockgate.errors import UsageError

    ref = registry.parse(reference)
    if ref.tag is not None or ref.digest is not None:
        raise UsageError(
            f"list takes a repository, not {'a tag' if ref.digest is None else 'a digest'}: "
            f"lockgate list oci://{ref.name}"
        )
    tags = inspect_mod.list_tags(_client(ref, creds, insecure), ref, show_all=show_all, page_size=page_size)
    if output == "json":
        _emit({"repository": ref.name, "tags": tags})
        return
    for t in tags:
        terminal.echo(t)


@click.command("diff")
@click.argument("path")
@click.argument("reference")
@click.option("--media-type", help="Layer media type of the remote artifact.")
@_output
@_build_options
@_registry_options
def diff(
    path: str,
    reference: str,
    media_type: str | None,
    output: str,
    creds: str | None,
    insecure: bool,
    **flags: Any,
) -> None:
    """Diff local manifests against a remote artifact, object by object; exit 1 when they differ."""
    from action.artifacts import diff as diff_mod
    from lockgate import registry

    ref = registry.parse(reference, default_tag="latest")
    result = diff_mod.diff(
        path,
        _client(ref, creds, insecure),
        ref,
        options=_build(**flags, creds=creds, insecure=insecure),
        media_type=media_type,
    )
    if output == "json":
        _emit(diff_mod.to_json(result))
    else:
        terminal.echo(diff_mod.render_text(result))
    if result.changed:
        raise click.exceptions.Exit(1)
