"""`python tools/check_data.py -c RECIPE [key=value ...] [--json]`: the same as `oarkit check-data ...`."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["check-data", *sys.argv[1:]]))
