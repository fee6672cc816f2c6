"""`python tools/export.py RUN_DIR_OR_NAME --format all --quantize int8 --verify`: the same as `oarkit export ...`."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["export", *sys.argv[1:]]))
