"""`python tools/predict.py ...`: the same as `oarkit predict ...` (see `--help`)."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["predict", *sys.argv[1:]]))
