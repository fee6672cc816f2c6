"""`python tools/train.py ...`: the same as `oarkit train ...` (see `--help`)."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
