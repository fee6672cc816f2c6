"""`python tools/convert.py paddle SRC --model NAME --out DIR`: the same as `oarkit convert ...` (see `--help`)."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["convert", *sys.argv[1:]]))
