"""`python tools/serve.py ...`: the same as `oarkit serve ...` (see `--help`)."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
