"""`python tools/tune.py ...`: the same as `oarkit tune ...` (see `--help`)."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["tune", *sys.argv[1:]]))
