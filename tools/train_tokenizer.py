"""`python tools/train_tokenizer.py corpus.txt --out tok/`: the same as `oarkit train-tokenizer ...`."""

import sys

from oarkit.core.cli import main

if __name__ == "__main__":
    sys.exit(main(["train-tokenizer", *sys.argv[1:]]))
