"""One reconcile pass end to end, and what it is configured by and reports.

``config`` turns flags or ``Sync`` documents into ``SyncOptions`` (``options``); ``source``
resolves, verifies, pulls and renders the artifact; ``reconcile`` runs the pass end to end and
``passes`` its cluster half (inventory union, staged apply, prune, inventory shrink, wait);
``result`` and ``report`` are what it returns and how a person reads it.
"""
