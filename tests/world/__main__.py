"""``make world``: start the whole world and keep it up until Ctrl-C, printing how to use it."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from tests.world import binaries
from tests.world.errors import WorldSetupError
from tests.world.world import World


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.world")
    parser.add_argument("--minimal", action="store_true", help="etcd + kube-apiserver only")
    parser.add_argument("--no-cluster", action="store_true", help="registry and git remote only")
    args = parser.parse_args()
    try:
        world = World.start(cluster=not args.no_cluster, full=not args.minimal)
    except WorldSetupError as exc:
        print(f"world: {exc}", file=sys.stderr)
        return 1
    print(world.describe())
    print(f"kubectl:    {binaries.binary('kubectl')}")
    # the virtualenv make setup made: lockgate is not on PATH unless it is activated
    print(f"lockgate:   {Path(sys.executable).parent / 'lockgate'}  (or: . .venv/bin/activate)")
    print("start-up:   " + ", ".join(f"{k} {v:.1f}s" for k, v in world.timings.items()))
    print("The world is up. Press Ctrl-C to stop it.", flush=True)
    stop = False

    def on_signal(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        while not stop:
            time.sleep(0.5)
            if world.cluster is not None:
                world.cluster.check()
    except WorldSetupError as exc:
        print(f"world: {exc}", file=sys.stderr)
        world.stop()
        return 1
    world.stop()
    print("world stopped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
