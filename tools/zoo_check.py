"""`python tools/zoo_check.py 'clas/*' --write docs/model_zoo.md`: the same as `oarkit zoo-check ...`."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["zoo-check", *sys.argv[1:]]))
