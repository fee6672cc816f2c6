"""`python tools/models.py 'clas/pp_*'`: the same as `oarkit models ...`."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["models", *sys.argv[1:]]))
