"""The text kit's command-line verb: ``oarkit train-tokenizer`` (declared to core through
:func:`oarkit.core.kits.register_command`; core imports nothing of the kit)."""

from __future__ import annotations

import argparse

from oarkit.core.kits import Command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", help="corpus files")
    parser.add_argument("--out", required=True, help="the tokenizer directory to write")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--min-frequency", type=int, default=2)
    parser.add_argument("--cased", action="store_true",
                        help="keep case and accents (default: uncased, as BERT uncased)")


def _train_tokenizer(args: argparse.Namespace) -> int:
    from oarkit.nlp.tokenizer import train_wordpiece

    out = train_wordpiece(args.files, args.out, vocab_size=args.vocab_size, min_frequency=args.min_frequency,
                          lowercase=not args.cased)
    print(f"tokenizer written to {out}; train with task.tokenizer={out}")  # the verb's output, for the user
    return 0


TRAIN_TOKENIZER = Command(
    name="train-tokenizer",
    help="train a WordPiece tokenizer on text files (one text per line), for models trained from scratch",
    add_arguments=_arguments,
    run=_train_tokenizer,
)
