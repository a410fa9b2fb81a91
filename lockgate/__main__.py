"""``python -m lockgate`` and the console script.

``lockgate --version`` is answered before click and the command tree are imported: it is
what CI logs call first, and it should cost no more than the interpreter's own start-up.
"""

import sys


def run() -> None:
    if sys.argv[1:] == ["--version"]:
        from lockgate import __version__

        print(f"lockgate {__version__}")
        sys.exit(0)
    from lockgate.cli import main

    sys.exit(main())


if __name__ == "__main__":
    run()
