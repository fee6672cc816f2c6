"""`python tools/eval.py ...`: the same as `oarkit eval ...` (see `--help`)."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["eval", *sys.argv[1:]]))
