"""``oarkit ocr IMAGE...``: the OCR pipeline on the command line (text to stdout, pictures, JSON)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from oarkit.core.data.images import IMAGE_SUFFIXES
from oarkit.core.errors import DataError
from oarkit.core.kits import Command


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("images", nargs="+", help="image files or folders of images")
    parser.add_argument("--ocr-version", default=None,
                        help="the det + rec of a PaddleOCR version: PP-OCRv4, PP-OCRv5, PP-OCRv6-tiny, PP-OCRv6-small "
                             "(default: OCR()'s)")
    parser.add_argument("--det", default=None, help="detector: registry name, run directory, export folder, or an "
                                                    "exported pipeline folder (default: the version's)")
    parser.add_argument("--rec", default=None, help="recognizer: registry name, run or export (default: the version's)")
    parser.add_argument("--cls", default=None, help="orientation classifier (default: none)")
    parser.add_argument("--use-cls", action="store_true", help="use the default orientation classifier")
    parser.add_argument("--drop-score", type=float, default=0.5, help="leave out lines scored under this")
    parser.add_argument("--save-dir", default=None, help="write <image>_ocr.png pictures here")
    parser.add_argument("--json", action="store_true", help="print one JSON object per image instead of text")
    parser.add_argument("--device", default="cpu")


def expand_inputs(items: list[str], *, suffixes: tuple[str, ...] = IMAGE_SUFFIXES, what: str = "images") -> list[str]:
    """Files as given and the ``suffixes`` files of folders (sorted), in order.

    Raises:
        DataError: an item that is neither a file nor a folder, or nothing found at all.
    """
    out = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            out += sorted(str(p) for p in path.iterdir() if p.suffix.lower() in suffixes)
        elif path.is_file():
            out.append(item)
        else:
            raise DataError(f"{item} is neither a file nor a folder of {what}")
    if not out:
        raise DataError(f"no {what} in {', '.join(items)}")
    return out


def _run(args: argparse.Namespace) -> int:
    from .pipeline.ocr import OCR

    ocr = OCR(args.det, args.rec, args.cls, version=args.ocr_version, use_cls=args.use_cls, device=args.device,
              drop_score=args.drop_score)
    images = expand_inputs(args.images)
    for path in images:
        result = ocr(path)
        if args.json:
            print(json.dumps(result.to_dict(), ensure_ascii=False))
        else:
            if len(images) > 1:
                print(f"== {path}")
            print(result.text)
        if args.save_dir:
            saved = result.save(Path(args.save_dir) / f"{Path(path).stem}_ocr.png")
            print(f"picture: {saved}", file=sys.stderr)
    return 0


OCR_COMMAND = Command(name="ocr", help="read text in images (PP-OCR det -> cls -> rec)", add_arguments=_add_arguments,
                      run=_run)
