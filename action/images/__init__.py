"""Image automation from CI: scan registries, elect tags with Flux's policy semantics,
rewrite ``$imagepolicy`` setter markers byte-exactly, then commit and push safely.

Pure planning: ``semver`` and ``constraints`` (Masterminds ports), ``policy`` (tag
selection), ``config``/``native``/``fields`` (configuration), ``markers`` and ``setters``
(find and rewrite marked scalars), ``update`` (scoping, the change model), ``message``
(commit templates). I/O seams: ``scan`` and ``credentials`` for registries, ``gitops``
(the commit, push and retry policy over the ``lockgate.git`` seam) and ``commitsign`` for
Git, ``pullrequest`` for the forge (over ``lockgate.forge``), ``files`` for the tree; ``run`` and
``cli`` on top.
"""
