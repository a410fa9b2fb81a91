"""``lockgate serve``: the runner as a long-running service over the same pass as ``reconcile``.

Above ``runner.pipeline``: the scheduler (intervals, retries, dependsOn, reloads), the
HTTP endpoints (webhooks, health, metrics) and the Leases that keep replicas apart.
"""
