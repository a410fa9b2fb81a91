"""``python -m lockgate`` and the console script."""

import sys

from lockgate.cli import main


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
