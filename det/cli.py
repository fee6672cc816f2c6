"""The detection kit's command-line verb: ``oarkit det convert-dataset`` and ``oarkit det check-dataset``
(declared with :func:`oarkit.core.kits.register_command`; core imports nothing of the kit)."""

from __future__ import annotations

import argparse
import json
from collections import Counter

from oarkit.core.kits import Command

from .data.check import ACTIONS, check_records
from .data.formats import FORMATS, convert_dataset, read_split


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    verbs = parser.add_subparsers(dest="det_verb", required=True)
    p = verbs.add_parser("convert-dataset", help="convert a detection set between coco, voc and yolo layouts")
    p.add_argument("src", help="the dataset folder")
    p.add_argument("dst", help="the folder to write")
    p.add_argument("--from", dest="src_format", choices=FORMATS, required=True, help="the layout of SRC")
    p.add_argument("--to", dest="dst_format", choices=FORMATS, required=True, help="the layout to write")
    p.add_argument("--splits", nargs="+", default=["train", "val"], help="splits to convert (default: train val)")
    p.add_argument("--check", choices=ACTIONS, default="refuse",
                   help="bad boxes: refuse (stop, the default), fix (clip or drop) or report (keep)")
    p = verbs.add_parser("check-dataset", help="report degenerate, out-of-image and unknown-category boxes")
    p.add_argument("root", help="the dataset folder")
    p.add_argument("--format", choices=FORMATS, default="coco", help="its layout (default: coco)")
    p.add_argument("--splits", nargs="+", default=["train", "val"], help="splits to check (default: train val)")
    p.add_argument("--json", action="store_true", help="print the problems as JSON")


def _run(args: argparse.Namespace) -> int:
    if args.det_verb == "convert-dataset":
        counts = convert_dataset(args.src_format, args.src, args.dst_format, args.dst, args.splits, check=args.check)
        print(f"wrote {', '.join(f'{n} {s}' for s, n in counts.items())} images as {args.dst_format} to {args.dst}")
        return 0
    classes = None
    found = []
    for split in args.splits:
        records, classes = read_split(args.format, args.root, split, classes)
        _, issues = check_records(records, len(classes), action="report", source=f"{args.root} ({split})")
        found += [{"split": split, "kind": i.kind, "file": i.file, "image": i.image, "box": i.index,
                   "detail": i.detail} for i in issues]
        print(f"{split}: {len(records)} images, {sum(len(r.boxes) for r in records)} boxes, {len(issues)} problems")
    if args.json:
        print(json.dumps(found, indent=1))
    else:
        for kind, n in sorted(Counter(f["kind"] for f in found).items()):
            print(f"  {kind}: {n}")
    return 1 if found else 0


DET_COMMAND = Command(name="det", help="detection datasets: convert-dataset, check-dataset",
                      add_arguments=_add_arguments, run=_run)
