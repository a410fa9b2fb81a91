"""The cluster side of lockgate: pull a verified artifact and converge the cluster.

Runs as a CronJob or a Deployment. Imports ``lockgate``, never ``action``. In layers, each
importing only those below it (an import-linter contract in ``make test``):

- ``cli``: the commands (``reconcile``, ``serve``, ``status``, ``sync``, ``rollback``);
- ``serve``: the long-running service: scheduler, webhooks/health/metrics, Leases;
- ``pipeline``: one pass end to end (configuration, source, the pass, its result);
- ``ssa`` (apply, wait, prune around one manager) and ``inventory`` (the ApplySet parent
  Secret and Events): the verbs that carry a plan out;
- ``kube``: the one seam to the API server (credentials, transport, discovery, watches);
- ``plan``: pure decisions (kind order, policies, health rules, prune plan, takeover).
"""
