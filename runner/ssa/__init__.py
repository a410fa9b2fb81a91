"""Server-side apply as Flux's ``ssa`` package does it: one small manager, one module per verb.

``manager`` holds what the verbs share (the client, the field manager, the ApplySet ID,
the thread pool); ``apply`` applies a stage, ``wait`` waits for health, ``prune`` deletes
what left the set. The decisions they carry out are made in ``runner.plan``.
"""
