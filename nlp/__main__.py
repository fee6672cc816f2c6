"""``python -m oarkit.nlp TASK MODEL [TEXT ...]``: Taskflow on the command line, one JSON result per line.

Without texts, the intent demo's example sentences are used (``make demo-nlp``). ``--schema`` takes the
information-extraction schema as JSON (``'["person", {"company": ["founder"]}]'``).
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    from oarkit.core.cli import setup_environment

    setup_environment()
    parser = argparse.ArgumentParser(prog="python -m oarkit.nlp", description="Taskflow predictions, as JSON lines")
    parser.add_argument("task", help="text_classification, ner, information_extraction or question_answering")
    parser.add_argument("model", help="a run directory, a model directory or a registry name")
    parser.add_argument("texts", nargs="*", help="inputs (default: the intent demo's example sentences)")
    parser.add_argument("--schema", help="information_extraction schema, as JSON")
    parser.add_argument("--topk", type=int, default=None, help="classes per text (text_classification)")
    args = parser.parse_args(argv)

    from oarkit.core.errors import OarkitError
    from oarkit.nlp.demo import EXAMPLES
    from oarkit.nlp.taskflow import Taskflow

    kwargs = {"topk": args.topk} if args.topk else {}
    try:
        flow = Taskflow(args.task, model=args.model, schema=json.loads(args.schema) if args.schema else None,
                        **kwargs)
        for result in flow(args.texts or EXAMPLES):
            print(json.dumps(result, ensure_ascii=False))
    except (OarkitError, json.JSONDecodeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
