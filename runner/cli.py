"""``lockgate reconcile`` (one pass per source or per Sync of a ``--config`` file), ``serve``, ``delete``.

Thin: flags become ``SyncOptions`` (``pipeline.config``), each pass is one
``pipeline.reconcile.reconcile`` call, and the result is printed as a table or JSON
(``pipeline.report``). The exit code is that of the first failed pass
(``lockgate.errors.ExitCode``). With ``--config`` each pass holds its sync's Lease
(``serve.leases``): a sync another runner is reconciling is skipped, not failed. ``serve``
is ``serve.service.run``; ``delete`` (a sync's objects by its deletionPolicy, for the CronJob
mode) is one ``serve.departures.by_hand`` call.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import click
from click.core import ParameterSource

from lockgate import registry, terminal, tlsflags
from lockgate.artifact import limits
from lockgate.errors import Abandoned, LockgateError, UsageError
from lockgate.output import output_option
from lockgate.redact import scrub
from lockgate.signing import buildclaims, github
from lockgate.signing.buildclaims import BuildClaims
from lockgate.signing.github import GitHubClaims
from lockgate.signing.options import VerifyOptions
from runner.pipeline import capabilities, config, deletion, report
from runner.pipeline import reconcile as pipeline
from runner.pipeline.result import Result
from runner.plan import deletion as deletion_plan
from runner.serve import departures, leases
from runner.serve import log as log_mod
from runner.serve.notify import notifier as notify

#: the same words as ``status``, ``sync`` and ``rollback`` (runner.commands.history)
_KUBECONFIG = click.option(
    "--kubeconfig", type=click.Path(path_type=Path), help="Kubeconfig (default $KUBECONFIG, in-cluster)."
)
_CONTEXT = click.option("--context", help="The kubeconfig context to use (default: the current context).")


@click.command("reconcile")
@click.argument("url", required=False)
@click.option("--name", help="Sync name: the inventory is the Secret lockgate-NAME.")
@click.option("--semver", help="Pick the highest tag in this semver range (Flux OCIRepository semantics).")
@click.option("--path", "path", help="Subdirectory of the artifact to apply.")
@click.option("--prune", is_flag=True, help="Delete objects that left the set.")
@click.option("--wait", is_flag=True, help="Wait for applied objects to become healthy.")
@click.option("--timeout", default="5m", show_default=True, help="Health wait timeout (30s, 5m, 1h).")
@click.option("--namespace", "-n", help="Runner namespace holding the inventory (default lockgate-system).")
@click.option("--target-namespace", help="Put namespaced objects into this namespace.")
@click.option("--force", is_flag=True, help="Recreate objects whose immutable fields changed.")
@click.option(
    "--verify-key", type=click.Path(path_type=Path), help="cosign public key the artifact is signed with."
)
@click.option("--verify-identity", help="Keyless: expected certificate identity, exactly.")
@click.option("--verify-identity-regexp", help="Keyless: expected certificate identity, a full-match regexp.")
@click.option("--verify-issuer", help="Keyless: expected OIDC issuer, exactly.")
@click.option("--verify-issuer-regexp", help="Keyless: expected OIDC issuer, a full-match regexp.")
@click.option("--verify-github-repository", help=github.describe("repository"))
@click.option("--verify-github-ref", help=github.describe("ref"))
@click.option("--verify-github-workflow-trigger", help=github.describe("workflow_trigger"))
@click.option("--verify-github-workflow-sha", help=github.describe("workflow_sha"))
@click.option("--verify-github-workflow-name", help=github.describe("workflow_name"))
@click.option("--verify-source-repository-uri", help=buildclaims.describe("source_repository_uri"))
@click.option("--verify-source-repository-ref", help=buildclaims.describe("source_repository_ref"))
@click.option("--verify-source-repository-digest", help=buildclaims.describe("source_repository_digest"))
@click.option("--verify-build-trigger", help=buildclaims.describe("build_trigger"))
@click.option("--verify-build-config-uri", help=buildclaims.describe("build_config_uri"))
@click.option("--verify-runner-environment", help=buildclaims.describe("runner_environment"))
@click.option("--verify-trusted-root", type=click.Path(path_type=Path), help="Sigstore trusted_root.json.")
@click.option("--insecure-skip-verify", is_flag=True, help="Apply without verifying a signature (unsafe).")
@click.option(
    "--verify-signed-repository",
    metavar="REGISTRY/REPO",
    help="Key signatures name this repository (URL is a mirror or oci-layout:// copy of it).",
)
@click.option(
    "--dry-run", is_flag=True, help="Show what would be created, changed and pruned; change nothing."
)
@click.option("--allow-mass-prune", is_flag=True, help="Allow pruning every object or more than the share.")
@click.option("--max-prune-share", type=float, default=0.5, show_default=True, help="Largest share prunable.")
@click.option(
    "--prune-crds",
    is_flag=True,
    help="Also prune CRDs Helm would keep (helm.sh/resource-policy: keep, set on a chart's crds/).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Concurrent API requests.",
)
@_KUBECONFIG
@click.option(
    "--decryption-secret",
    help="Decrypt SOPS-encrypted objects with the age keys in this Secret's *.agekey entries "
    "(runner namespace), as Flux's --decryption-secret.",
)
@limits.options
@click.option(
    "--allow-remote-bases",
    is_flag=True,
    help="Let the artifact's kustomization fetch remote resources (refused by default).",
)
@click.option(
    "--provider",
    type=click.Choice(["generic", "aws", "azure", "gcp"]),
    default="generic",
    help="Registry credentials from this cloud's workload identity (a Sync's spec.provider).",
)
@_CONTEXT
@click.option("--config", "config_path", type=click.Path(path_type=Path), help="A file of Sync documents.")
@tlsflags.tls_options()
@output_option
def reconcile(
    url: str | None,
    name: str | None,
    semver: str | None,
    path: str | None,
    prune: bool,
    wait: bool,
    timeout: str,
    namespace: str | None,
    target_namespace: str | None,
    force: bool,
    verify_key: Path | None,
    verify_identity: str | None,
    verify_identity_regexp: str | None,
    verify_issuer: str | None,
    verify_issuer_regexp: str | None,
    verify_github_repository: str | None,
    verify_github_ref: str | None,
    verify_github_workflow_trigger: str | None,
    verify_github_workflow_sha: str | None,
    verify_github_workflow_name: str | None,
    verify_source_repository_uri: str | None,
    verify_source_repository_ref: str | None,
    verify_source_repository_digest: str | None,
    verify_build_trigger: str | None,
    verify_build_config_uri: str | None,
    verify_runner_environment: str | None,
    verify_trusted_root: Path | None,
    insecure_skip_verify: bool,
    verify_signed_repository: str | None,
    dry_run: bool,
    allow_mass_prune: bool,
    max_prune_share: float,
    prune_crds: bool,
    concurrency: int,
    kubeconfig: Path | None,
    decryption_secret: str | None,
    max_size: int,
    max_files: int,
    max_ratio: float,
    allow_remote_bases: bool,
    provider: str,
    context: str | None,
    config_path: Path | None,
    output: str,
) -> None:
    """Pull a verified artifact and converge the cluster (one pass)."""
    _check_flag_combinations(click.get_current_context(), url, semver)
    if config_path is not None:
        loaded = config.load(config_path, dry_run=dry_run)
        syncs, cluster = loaded.syncs, loaded.runner.cluster_name
        if not dry_run:  # the Runner's spec.capabilities: what this cluster serves, for CI
            published = capabilities.publish_once(loaded.runner, kubeconfig=kubeconfig, context=context)
            if published:
                click.echo(published, err=True)
    else:
        if not url or not name:
            raise UsageError("reconcile needs an oci:// URL and --name (or --config FILE)")
        verify = VerifyOptions(
            key=verify_key,
            identity=verify_identity,
            identity_regexp=verify_identity_regexp,
            issuer=verify_issuer,
            issuer_regexp=verify_issuer_regexp,
            github=GitHubClaims(
                repository=verify_github_repository,
                ref=verify_github_ref,
                workflow_trigger=verify_github_workflow_trigger,
                workflow_sha=verify_github_workflow_sha,
                workflow_name=verify_github_workflow_name,
            ),
            build=BuildClaims(
                source_repository_uri=verify_source_repository_uri,
                source_repository_ref=verify_source_repository_ref,
                source_repository_digest=verify_source_repository_digest,
                build_trigger=verify_build_trigger,
                build_config_uri=verify_build_config_uri,
                runner_environment=verify_runner_environment,
            ),
            trusted_root=verify_trusted_root,
            insecure_skip=insecure_skip_verify,
        )
        sync = config.sync_options(
            name=name,
            url=url,
            verify=verify,
            semver=semver,
            path=path,
            namespace=namespace,
            target_namespace=target_namespace,
            prune=prune,
            wait=wait,
            timeout=timeout,
            force=force,
            dry_run=dry_run,
            allow_mass_prune=allow_mass_prune,
            max_prune_share=max_prune_share,
            prune_crds=prune_crds,
            concurrency=concurrency,
            decryption_secret=decryption_secret,
            limits=limits.Limits(max_total_bytes=max_size, max_files=max_files, max_ratio=max_ratio),
            allow_remote_bases=allow_remote_bases,
            signed_repository=verify_signed_repository,
            provider=provider,
        )
        syncs, cluster = [sync], ""
    # read once, before any pass; with --config they stand for each Sync without a certSecretRef,
    # and a URL's sync names the flags in its TLS errors even when none were given
    flags = tlsflags.given_options() if config_path is not None else tlsflags.transport_options()
    syncs = [sync.with_flags(flags) for sync in syncs]
    for warning in (w for sync in syncs for w in sync.source.warnings):
        terminal.echo(f"warning: {warning}", err=True)
    # notifications (``--config`` syncs with ``notify``) are sent in the background and flushed
    # with a short deadline at the end; they never fail the pass
    notifier = notify.one_shot(kubeconfig, cluster=cluster, context=context)
    if any(sync.notify for sync in syncs):  # a notification given up is logged to stderr
        log_mod.configure("text", level=logging.WARNING)
    if config_path is not None and not dry_run:
        # the CronJob mode: each pass under its sync's Lease, as ``serve`` runs them
        keeper = leases.LeaseKeeper.from_kubeconfig(kubeconfig, context=context)

        def one(sync: pipeline.SyncOptions) -> Result:
            def run(hook: Callable[[Result], None] | None) -> Result:
                return leases.reconcile(keeper, sync, kubeconfig=kubeconfig, context=context, applying=hook)

            return notifier.around(sync, run)

        results = [one(sync) for sync in syncs]
    else:
        results = [pipeline.reconcile(sync, kubeconfig=kubeconfig, context=context) for sync in syncs]
    notifier.flush()
    if output == "json":
        docs = [r.to_json() for r in results]
        click.echo(json.dumps(docs[0] if config_path is None else docs, indent=2))
    else:
        for result in results:
            terminal.echo(report.table(result))
    failed: LockgateError | None = next((r.error for r in results if r.error is not None), None)
    if failed is not None:
        failed.json_reported = output == "json"
        raise failed


#: flags that work with ``--config`` too; every other flag describes the one sync of a URL
_CONFIG_FLAGS = frozenset({"config_path", "dry_run", "kubeconfig", "context", "output"})


def _flag(param: str) -> str:
    return "--" + param.removesuffix("_path").replace("_", "-")


def _check_flag_combinations(ctx: click.Context, url: str | None, semver: str | None) -> None:
    """Refuse flags that would be ignored or contradict each other (never drop them silently)."""
    given = {
        name
        for name in ctx.params
        if ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP, None)
    }
    if "config_path" in given:
        ignored = sorted(_flag(p) for p in given - _CONFIG_FLAGS - {"url"})
        if url:
            raise UsageError("--config cannot be combined with a URL: each Sync of the file names its own")
        if ignored:
            raise UsageError(
                f"{', '.join(ignored)}: not used with --config, where each Sync's spec holds its "
                "settings; set them in the file or drop --config"
            )
        return
    if "timeout" in given and "wait" not in given:
        raise UsageError("--timeout bounds the health wait; add --wait (or drop --timeout)")
    ref = registry.parse(url) if url else None
    if ref is not None and not semver and ref.tag is None and ref.digest is None:
        raise UsageError(
            f"{scrub(url or '')} names no tag: add :TAG or @sha256:DIGEST, or pick with --semver RANGE"
        )
    if ref is not None and semver and ref.tag is not None:
        raise UsageError(
            f"{scrub(url or '')} has a tag and --semver picks one: give either the tag or --semver "
            "(with a URL without a tag)"
        )


@click.command("serve")
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(path_type=Path),
    help="A file of Sync documents and at most one Runner document; reloaded when it changes.",
)
@_KUBECONFIG
@_CONTEXT
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    help="One line per event, as text or JSON (default: the Runner document's logFormat, else text).",
)
@click.option("--identity", help="This replica's name in Leases (default $POD_NAME, else host and pid).")
@click.option(
    "--grace-period",
    default="25s",
    show_default=True,
    help="How long SIGTERM waits for running passes (keep it under terminationGracePeriodSeconds).",
)
def serve(
    config_path: Path,
    kubeconfig: Path | None,
    context: str | None,
    log_format: str | None,
    identity: str | None,
    grace_period: str,
) -> None:
    """Keep every Sync converged: passes on intervals, webhooks, health and metrics."""
    from runner.serve import service

    clean = service.run(
        config_path,
        kubeconfig=kubeconfig,
        context=context,
        log_format=log_format,
        identity=identity,
        grace=config.parse_duration(grace_period),
    )
    if not clean:
        raise Abandoned("a pass was still running at the end of the grace period; the next pass converges")


@click.command("delete")
@click.argument("name")
@click.option(
    "--namespace",
    "-n",
    help="Runner namespace holding the sync's inventory (default: the Runner document's of --config, "
    "else lockgate-system).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    help="The CronJob's file of Sync documents: it must no longer have the sync (its next pass would "
    "apply it again); its Runner gives the namespace and defaultServiceAccount.",
)
@click.option(
    "--service-account",
    help="Delete as this ServiceAccount of the runner namespace (default: the Runner's "
    "defaultServiceAccount, of --config or of the runner installed in the namespace; never the one "
    "the inventory records, which the sync's own account can write).",
)
@click.option(
    "--deletion-policy",
    type=click.Choice([p.value for p in deletion_plan.Policy]),
    help="Instead of the deletionPolicy the sync recorded: MirrorPrune, Delete, WaitForTermination "
    "or Orphan.",
)
@click.option(
    "--timeout", help="How long WaitForTermination waits (default: the sync's timeout, as recorded)."
)
@click.option(
    "--allow-mass-prune",
    is_flag=True,
    help="Confirm deleting every object (or more than the share) under MirrorPrune with prune.",
)
@click.option(
    "--dry-run", is_flag=True, help="Show what would be deleted, kept and orphaned; change nothing."
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Concurrent API requests.",
)
@_KUBECONFIG
@_CONTEXT
@output_option
def delete(
    name: str,
    namespace: str | None,
    config_path: Path | None,
    service_account: str | None,
    deletion_policy: str | None,
    timeout: str | None,
    allow_mass_prune: bool,
    dry_run: bool,
    concurrency: int,
    kubeconfig: Path | None,
    context: str | None,
    output: str,
) -> None:
    """Delete a sync: its objects as its deletionPolicy says, then its inventory."""
    options = deletion.DeleteOptions(
        policy=deletion_plan.Policy(deletion_policy) if deletion_policy else None,
        timeout=config.parse_duration(timeout) if timeout else None,
        allow_mass_prune=allow_mass_prune,
        dry_run=dry_run,
        service_account=service_account,
        concurrency=concurrency,
    )
    result = departures.by_hand(
        name,
        namespace=namespace,
        config_path=config_path,
        options=options,
        kubeconfig=kubeconfig,
        context=context,
    )
    click.echo(
        json.dumps(result.to_json(), indent=2) if output == "json" else terminal.lines(report.table(result))
    )
    if result.error is not None:
        result.error.json_reported = output == "json"
        raise result.error
