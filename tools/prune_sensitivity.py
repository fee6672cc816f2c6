"""`python tools/prune_sensitivity.py RUN [--ratios 0.1,0.3,0.5] [--layers N] ...`: the same as
`oarkit prune-sensitivity ...`."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["prune-sensitivity", *sys.argv[1:]]))
