"""The world's binaries: what ``make setup`` builds, and that missing ones build two at a time.

The builds themselves take minutes each (the Go module proxy, then the compiler): here
``_build`` records what it is asked to build, and when, to check the scheduling alone.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.world import binaries, pins


def test_flux_s_controllers_are_part_of_the_world_and_their_crds_are_pinned() -> None:
    default = [n for n, c in pins.COMPONENTS.items() if not c.bench_only]
    assert {"source-controller", "kustomize-controller", "flux"} <= set(default)
    assert pins.MODULES["notification-controller"].module == "github.com/fluxcd/notification-controller"


def test_missing_components_build_two_at_a_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LOCKGATE_WORLD_CACHE", str(tmp_path))
    monkeypatch.delenv("LOCKGATE_BUILD_JOBS", raising=False)
    running: list[str] = []
    most = 0
    lock = threading.Lock()

    def build(component: pins.GoComponent) -> None:
        nonlocal most
        with lock:
            running.append(component.name)
            most = max(most, len(running))
        time.sleep(0.2)
        target = binaries.bin_dir(component)
        target.mkdir(parents=True)
        (target / ".complete").write_text(binaries._spec_hash(component) + "\n")
        with lock:
            running.remove(component.name)

    monkeypatch.setattr(binaries, "_build", build)
    names = ("source-controller", "kustomize-controller", "kustomize")
    built = binaries.ensure(*names)
    assert sorted(built) == sorted(names) and most == 2  # three builds, two at a time
    assert binaries.ensure(*names) == built  # cached: nothing built again
