"""Object diffs, one engine for every side of lockgate.

``lockgate diff`` (local manifests against a pushed artifact), the runner's drift report
and its ``--dry-run`` all compare objects here: ``normalize`` applies Flux's rules before
any comparison, ``fields`` lists the changed fields with readable paths (lists of named
items keyed by name) and masks Secret values and values secret by origin (``secret_values``),
and ``changeset`` holds the result as a value that tables, JSON and Kubernetes Events are
rendered from. Pure: no I/O.
"""
