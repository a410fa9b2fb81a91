"""The pure half of ``lockgate preview``: what a sync's next pass does, decided without a cluster.

``plan`` decides it from two revisions' objects with the pass's own rules; ``scopes`` and
``immutable`` are the tables that stand in for what a pass asks the API server; ``model`` holds
the result as values and ``report`` renders them (a table, the pull-request comment's Markdown).
The I/O half (the registry, rendering, the comment) is ``runner.pipeline.preview``.
"""
