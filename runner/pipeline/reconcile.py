"""One reconcile pass end to end: resolve, verify, pull, render (``source``), decrypt and
substitute (``prepare_fetched``), then the cluster half (``passes.Pass``).

``reconcile`` never raises a ``LockgateError``: the pass's ``Result`` carries it. What a pass
writes to the cluster, and why in that order, is ``passes``; a failure before the cluster is
touched is recorded by ``records``; a health failure may be followed by ``rollback``.
``SyncOptions`` and its parts live in ``options`` and are re-exported here for callers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from lockgate import registry
from lockgate.errors import HealthError, LockgateError, RenderError
from lockgate.manifests import K8sObject
from runner.kube.client import Kube
from runner.pipeline import (
    attesting,
    decrypt,
    records,
    secretrefs,
    source,
    substitute,
)
from runner.pipeline.options import (
    DEFAULT_NAMESPACE,
    SA_NAMESPACE_FILE,
    ObjectRef,
    Schedule,
    SyncOptions,
    check_name,
    runner_namespace,
)
from runner.pipeline.passes import Pass
from runner.pipeline.result import Result
from runner.plan import (
    overlay,
    secret_origin,
)

__all__ = [
    "DEFAULT_NAMESPACE",
    "SA_NAMESPACE_FILE",
    "ObjectRef",
    "Pass",
    "Schedule",
    "SyncOptions",
    "check_name",
    "prepare_fetched",
    "reconcile",
    "runner_namespace",
]


def prepare_fetched(
    objects: list[K8sObject], options: SyncOptions, client: Kube, namespace: str
) -> list[K8sObject]:
    """The fetched objects as the sync applies them: decrypted, substituted, with the sync's
    commonMetadata, secrets marked.

    A pass and a rollback both go through here, so a rolled-back revision is never applied as
    written (ciphertext, ``${VAR}``). ``client`` is the runner's own: the key and variable
    sources live in the runner's namespace, as for secretRefs.
    """
    # decrypted per object before substitution, as Flux does
    objects = decrypt.apply(objects, options.decryption, client, namespace)
    secret_variables: list[str] = []
    if options.post_build is not None and options.post_build.wanted:
        variables = substitute.load_variables(options.post_build, client, namespace)
        objects = substitute.apply(objects, variables, always=options.post_build.always)
        secret_variables = [variables.values[name] for name in variables.secret]
    if options.common_metadata is not None:  # after substitution, as Flux sets it at apply
        objects = overlay.with_common_metadata(objects, options.common_metadata)
    # what is secret by origin goes with the objects to their diffs (lockgate.diff.secret_values)
    return secret_origin.share(objects, secret_variables)


def reconcile(
    options: SyncOptions,
    *,
    kube: Kube | None = None,
    kubeconfig: Path | None = None,
    context: str | None = None,
    guard: Callable[[], None] | None = None,
    retry_rejected: bool = False,
    requested_at: str = "",
    registry_client: registry.RegistryClient | None = None,
    applying: Callable[[Result], None] | None = None,
    served_by: str = "",
) -> Result:
    """Run one pass; never raises ``LockgateError`` (it is in ``Result.error``).

    ``kube`` is a client to reuse (a long-running runner keeps one); else one is built from
    ``kubeconfig``, ``$KUBECONFIG`` or the in-cluster service account. ``guard`` is called
    before every write and raises ``Abandoned`` to stop the pass there (shutdown, Lease lost).
    A digest that was rolled back from is skipped unless ``retry_rejected``: a person asked,
    e.g. ``requested_at``, the inventory's ``lockgate.dev/requestedAt`` this pass answers (it
    implies ``retry_rejected`` and is recorded as handled). ``registry_client`` is a client
    for the source's registry to reuse (``serve`` keeps one per host, with its credentials).
    ``applying`` is called once the artifact is loaded and verified, before anything is applied
    (notifications post ``pending`` there); it must not block. ``served_by``: see ``Pass``.
    """
    # imported here: the rollback is built on ``Pass``
    from runner.pipeline import rollback

    started = time.monotonic()
    result = Result(name=options.name, dry_run=options.dry_run)
    client: Kube | None = kube
    run: Pass | None = None
    try:
        check_name(options.name)
        result.namespace = runner_namespace(options.namespace)
        secrets = None
        if options.source.needs_secrets:  # credentials or keys from Secrets: the cluster is read first
            client = client or Kube.from_kubeconfig(kubeconfig, context=context, pool=options.concurrency + 4)
            secrets = secretrefs.SecretReader(client, result.namespace)
        try:
            fetched = source.fetch(
                options.source, client=registry_client, secrets=secrets, timings=result.timings
            )
        except source.Waiting as waiting:
            # nothing has the evidence yet: nothing is applied, and the parent says why
            result.waiting = result.skipped = waiting.reason
            client = client or Kube.from_kubeconfig(kubeconfig, pool=options.concurrency + 4)
            if not options.dry_run:
                records.waiting(
                    _writer(client, options, result.namespace, records.recording(guard)),
                    result,
                    handled_request=requested_at,
                )
            return result
        result.url, result.digest, result.revision = fetched.url, fetched.digest, fetched.revision
        result.waiting = fetched.waiting
        result.notes.extend(fetched.notes)
        result.verified_by = fetched.verified_by
        result.admitted = fetched.admitted
        result.source_url, result.source_revision = fetched.source_url, fetched.source_revision
        if not fetched.objects and not options.prune:
            raise RenderError(
                f"{fetched.url}{'/' + options.source.path if options.source.path else ''} holds no objects"
            )
        client = client or Kube.from_kubeconfig(kubeconfig, context=context, pool=options.concurrency + 4)
        with result.timings.phase("prepare"):
            objects = prepare_fetched(fetched.objects, options, client, result.namespace)
        writer = _writer(client, options, result.namespace, guard)
        recorder = _writer(client, options, result.namespace, records.recording(guard))
        with result.timings.phase("inventory"):
            run = Pass(writer, options, result, request=requested_at, recorder=recorder, served_by=served_by)
        result.previous_digest = run.inventory.digest
        result.previous_status = str(run.inventory.last_result.get("status") or "")
        result.previous_waiting = run.inventory.waiting
        if rollback.refused(run.inventory, result, retry=retry_rejected or bool(requested_at)):
            return result
        if applying is not None:
            applying(result)
        try:
            run.run(objects)
        except LockgateError as exc:
            run.record_failure(exc)
            if isinstance(exc, HealthError) and options.attest is not None and options.attest.on_failure:
                _attest(options, result, client, fetched.client, healthy=False)
            if rollback.wanted(options, run.inventory, exc, result.digest):
                raise rollback.after_failure(
                    writer, options, run.inventory, result, exc, recorder=recorder
                ) from exc
            raise
        if options.attest is not None and run.awaits and not options.dry_run:
            with result.timings.phase("attest"):
                _attest(options, result, client, fetched.client, healthy=True, fatal=True)
    except LockgateError as exc:
        result.error = exc
        if run is None and result.namespace and not options.dry_run and records.recordable(exc):
            # failed before the cluster was touched: the parent still tells it, and a person's
            # request is answered all the same (as Flux's lastHandledReconcileAt), never replayed
            try:
                client = client or Kube.from_kubeconfig(kubeconfig, context=context, pool=4)
                records.early_failure(
                    _writer(client, options, result.namespace, records.recording(guard)),
                    result,
                    exc,
                    handled_request=requested_at,
                )
            except LockgateError as why:
                result.notes.append(f"the failure was not recorded in the cluster: {why.summary()}")
    finally:
        result.seconds = time.monotonic() - started
        if client is not None:
            result.requests = client.counts
    return result


def _attest(
    options: SyncOptions,
    result: Result,
    kube: Kube,
    client: registry.RegistryClient | None,
    *,
    healthy: bool,
    fatal: bool = False,
) -> None:
    """Write the pass's health attestation; a failure is the pass's error when ``fatal`` (so
    the pass is retried), else a note (the health failure stays the error)."""
    assert options.attest is not None
    try:
        result.attested = attesting.write(
            options.attest,
            sync=options.name,
            url=result.url,
            revision=result.revision,
            health=result.health,
            healthy=healthy,
            secrets=secretrefs.SecretReader(kube, result.namespace),
            client=client,
            layout_tree=options.source.layout_tree(),
        )
    except LockgateError as exc:
        if fatal:
            result.notes.append("applied and healthy, but the health attestation was not written")
            raise
        result.notes.append(f"the failing attestation was not written: {exc.message}")


def _writer(client: Kube, options: SyncOptions, namespace: str, guard: Callable[[], None] | None) -> Kube:
    """The client a pass writes with: guarded, and as the tenant's ServiceAccount when it names one."""
    writer = client if guard is None else client.guarded(guard)
    user = options.impersonated_user(namespace)
    if user is not None:  # a tenant's pass: the API server allows what its RBAC allows
        writer = writer.impersonating(user)
    return writer
