"""`python tools/prepare_data.py digits --out data/digits`: the same as `oarkit prepare-data ...`."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["prepare-data", *sys.argv[1:]]))
