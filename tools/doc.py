"""`python tools/doc.py PAGE_OR_PDF... --out DIR [--format markdown,json,html]`: the same as `oarkit doc ...`."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["doc", *sys.argv[1:]]))
