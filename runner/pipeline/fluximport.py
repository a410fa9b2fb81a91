"""``lockgate import``'s one library call: read Flux objects, convert them, refuse what must
be refused, and write the files whole or not at all.

Reading is ``fluxread``'s, converting ``runner.plan.fluximport``'s. An OCIRepository without
``verify`` stops the import (every one named) unless ``--allow-unsigned``; ``--strict`` stops
it at any report row. Files are written to a temporary name and renamed into place, so an
interrupted import leaves the old file or the new one, never half of one.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from lockgate.errors import UsageError, VerificationError
from runner.kube.client import Kube
from runner.pipeline import fluxread
from runner.plan.fluximport import convert


@dataclass(frozen=True)
class ImportRequest:
    #: ``--from-files``: directories or files; empty: ``--from-cluster``
    files: tuple[Path, ...] = ()
    #: ``-n``: only this namespace's objects
    namespace: str | None = None
    options: convert.ImportOptions = field(default_factory=convert.ImportOptions)
    kubeconfig: Path | None = None
    context: str | None = None


def run(request: ImportRequest) -> convert.Imported:
    """Read and convert; raises ``VerificationError`` for unsigned sources (unless allowed)."""
    if request.files:
        found = fluxread.from_files(request.files, namespace=request.namespace)
        where = "--from-files " + " ".join(str(p) for p in request.files)
    else:
        kube = Kube.from_kubeconfig(request.kubeconfig, context=request.context, pool=4)
        found = fluxread.from_cluster(kube, namespace=request.namespace)
        where = "--from-cluster" + (f" -n {request.namespace}" if request.namespace else "")
    if not any(o.kind == "Kustomization" for o in found):
        raise UsageError(f"{where}: no Flux Kustomization found; nothing to import")
    result = convert.convert(found, request.options)
    if result.unsigned:
        raise VerificationError(
            f"{len(result.unsigned)} OCIRepository object(s) have no spec.verify: Flux applies their "
            "artifacts unsigned, lockgate refuses them. Sign in CI and set spec.verify, or import with "
            "--allow-unsigned (written as verify.insecureSkip, reported as security rows); nothing was "
            "written",
            details=result.unsigned,
        )
    return result


def write_whole(path: Path, text: str) -> None:
    """``text`` to ``path`` by a rename, so the file is the old one or the new one."""
    fd, name = tempfile.mkstemp(dir=path.absolute().parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
