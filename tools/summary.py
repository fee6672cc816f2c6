"""`python tools/summary.py RUN_DIR`: the same as `oarkit summary RUN_DIR`."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["summary", *sys.argv[1:]]))
