"""`python tools/det.py convert-dataset SRC DST --from coco --to yolo` (or `check-dataset ROOT`): the same as
`oarkit det ...`."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["det", *sys.argv[1:]]))
