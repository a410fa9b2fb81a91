"""The files of a chart and of its subcharts, as Helm loads them: ``templates/``, ``crds/`` and
``values.yaml`` of the chart, and of every chart under ``charts/`` (a directory, or a packaged
``.tgz`` as ``helm dependency build`` leaves it, read in memory).

Within Helm's own bounds on a chart (``helm.sh/helm/v3/pkg/chart/loader``: 100 MiB in all,
5 MiB a file): a bigger chart is a ``RenderError`` naming it, as Helm would refuse it. Each
file is named as a user finds it: ``templates/x.yaml``, ``charts/db/templates/x.yaml``, or
``charts/db-1.0.0.tgz:db/templates/x.yaml`` inside an archive.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lockgate.errors import RenderError

MAX_CHART_BYTES = 100 * 1024 * 1024
MAX_FILE_BYTES = 5 * 1024 * 1024
#: the directories of a chart whose files are read (``charts/`` holds the subcharts)
_READ = ("templates/", "crds/", "charts/")
_VALUES = "values.yaml"
_CHART = "Chart.yaml"
_ARCHIVES = (".tgz", ".tar.gz")


@dataclass(frozen=True)
class ChartFile:
    """One file of a chart: its path in its chart (``templates/x.yaml``), how a user finds it
    (``shown``), and the chart it belongs to as a user finds that (``""`` for the top chart)."""

    name: str
    shown: str
    chart: str
    data: bytes

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class _Budget:
    def __init__(self, root: str) -> None:
        self.root = root
        self.used = 0

    def take(self, size: int, shown: str) -> None:
        if size > MAX_FILE_BYTES:
            raise RenderError(
                f"{shown}: {size:,} bytes is over the {MAX_FILE_BYTES:,} Helm allows in one chart file"
            )
        self.used += size
        if self.used > MAX_CHART_BYTES:
            raise RenderError(
                f"{self.root}: the chart and its subcharts hold over the {MAX_CHART_BYTES:,} bytes Helm loads"
            )


def files(chart: Path) -> list[ChartFile]:
    """The ``templates/``, ``crds/`` and ``values.yaml`` files of ``chart`` and its subcharts."""
    budget = _Budget(str(chart))
    tree = dict(_directory(chart, budget))
    return list(_chart(tree, shown="", chart_shown="", budget=budget))


def _directory(root: Path, budget: _Budget) -> Iterator[tuple[str, bytes]]:
    """(relative path, bytes) of every file Helm would read here; symlinked directories are
    not followed (a loop would never end)."""
    for top in (_VALUES, _CHART):
        if (root / top).is_file():
            data = _read(root / top, budget)
            yield top, data
    for directory in _READ:
        base = root / directory.rstrip("/")
        if not base.is_dir():
            continue
        for path in sorted(_walk(base)):
            relative = path.relative_to(root).as_posix()
            yield relative, _read(path, budget)


def _walk(base: Path) -> Iterator[Path]:
    for entry in base.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            yield from _walk(entry)
        elif entry.is_file():
            yield entry


def _read(path: Path, budget: _Budget) -> bytes:
    try:
        size = path.stat().st_size
        budget.take(size, str(path))
        return path.read_bytes()
    except OSError as exc:
        raise RenderError(f"{path}: cannot read ({exc.strerror})") from None


def _chart(tree: dict[str, bytes], *, shown: str, chart_shown: str, budget: _Budget) -> Iterator[ChartFile]:
    """The files of the chart whose files ``tree`` holds, then its subcharts' (depth first)."""
    for name in sorted(tree):
        if name == _VALUES or name.startswith(("templates/", "crds/")):
            yield ChartFile(name, shown + name, chart_shown, tree[name])
    subcharts: dict[str, dict[str, bytes]] = {}
    for name in sorted(tree):
        if not name.startswith("charts/"):
            continue
        rest = name.removeprefix("charts/")
        first, _, inner = rest.partition("/")
        if inner:
            subcharts.setdefault(first, {})[inner] = tree[name]
        elif first.endswith(_ARCHIVES):
            archive = f"{shown}charts/{first}"
            for top, members in _archive(tree[name], archive, budget).items():
                yield from _chart(
                    members, shown=f"{archive}:{top}/", chart_shown=f"{archive}:{top}", budget=budget
                )
    for directory, members in subcharts.items():
        if _CHART in members:
            where = f"{shown}charts/{directory}"
            yield from _chart(members, shown=where + "/", chart_shown=where, budget=budget)


def _archive(data: bytes, shown: str, budget: _Budget) -> dict[str, dict[str, bytes]]:
    """The charts a ``.tgz`` holds (normally one): top directory -> its files, as ``_READ`` selects."""
    found: dict[str, dict[str, bytes]] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            for member in archive:
                if not member.isfile():
                    continue
                top, _, inner = member.name.lstrip("./").partition("/")
                if not inner or not (inner in (_VALUES, _CHART) or inner.startswith(_READ)):
                    continue
                budget.take(member.size, f"{shown}:{member.name}")
                stream = archive.extractfile(member)
                if stream is not None:
                    found.setdefault(top, {})[inner] = stream.read(MAX_FILE_BYTES + 1)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise RenderError(f"{shown}: not a readable chart archive ({exc})") from None
    return found
