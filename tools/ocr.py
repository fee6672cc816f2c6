"""`python tools/ocr.py page.jpg --save-dir pics/`: the same as `oarkit ocr ...`."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["ocr", *sys.argv[1:]]))
