"""``lockgate import``'s decisions: Flux objects in, a lockgate config and a report out.

Pure. ``objects`` reads a Flux object (from a file or the cluster, the same dict either
way) into a typed value; ``source`` (OCIRepository) and ``kustomization`` map one pair to a
Sync's spec; ``controller`` the kustomize-controller's flags to the Runner; ``alerts``
Alert + Provider to ``notify``; ``receivers`` Receivers; ``images`` the image automation
kinds to a ``lockgate images`` config and a workflow; ``replacements`` the sources and
HelmReleases a Sync cannot read, with the CI step that replaces them; ``naming`` the sync
names; ``convert`` puts them together and ``render`` writes the file. Every field that is
not carried, or whose meaning changes, becomes a ``report.Row``. The I/O (reading files or
the cluster) is ``runner.pipeline.fluxread``; the command is ``runner.commands.fluximport``.
"""
