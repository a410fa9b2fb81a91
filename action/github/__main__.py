"""``python -m action.github run``: the GitHub Action's run step (see ``action.github.run``)."""

from __future__ import annotations

import os
import sys

from action.github import run


def main(argv: list[str]) -> int:
    if argv != ["run"]:
        print("usage: python -m action.github run  (inputs from LOCKGATE_INPUT_* variables)", file=sys.stderr)
        return 2
    return run.run(os.environ)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
