"""``lockgate preview``'s I/O: what each cluster runs, both sides rendered as a pass renders them.

``targets`` reads the clusters' configuration files, ``running`` reads what each cluster runs
from the registry's attestations, ``render`` packs PATH and pulls digests and renders both as
the sync does, ``offline`` stands in for the cluster's Secrets; ``run`` ties them together and
plans each target with ``runner.plan.preview``.
"""
