"""``oarkit doc PAGE_OR_PDF... --out DIR``: documents to Markdown (and JSON, HTML) on the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from oarkit.core.data.images import IMAGE_SUFFIXES
from oarkit.core.errors import DataError
from oarkit.core.kits import Command

from ..cli import expand_inputs


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", help="page images, PDFs, or folders of them")
    parser.add_argument("--out", required=True, help="the folder <stem>.md (and the other formats) go to")
    parser.add_argument("--format", default="markdown,json",
                        help="comma-separated outputs: markdown, json, html (default: markdown,json)")
    parser.add_argument("--layout", default=None, help="the layout model: registry name, run or export folder "
                                                       "(default: det/picodet_lcnet_x1_0_layout)")
    parser.add_argument("--ocr", default=None, help="an OCR pipeline folder (default: --ocr-version's models)")
    parser.add_argument("--ocr-version", default=None, help="PP-OCRv4, PP-OCRv5, PP-OCRv6-tiny, PP-OCRv6-small "
                                                            "(default: PP-OCRv6-tiny)")
    parser.add_argument("--no-table", action="store_true", help="keep tables as their OCR text (no SLANet-plus)")
    parser.add_argument("--layout-threshold", type=float, default=0.5)
    parser.add_argument("--dpi", type=float, default=144.0, help="resolution PDF pages are rendered at")
    parser.add_argument("--device", default="cpu")


def _expand(items: list[str]) -> list[Path]:
    """The inputs, folders expanded to their images and PDFs; two of one stem are refused (their outputs would
    overwrite each other)."""
    out = [Path(p) for p in expand_inputs(items, suffixes=(*IMAGE_SUFFIXES, ".pdf"), what="images or PDFs")]
    stems = [p.stem for p in out]
    clash = sorted({s for s in stems if stems.count(s) > 1})
    if clash:
        raise DataError(f"several inputs are named {', '.join(clash)} (their outputs would overwrite each other "
                        f"in one --out folder); give them distinct names or parse them into separate folders")
    return out


def _run(args: argparse.Namespace) -> int:
    from .layout import DEFAULT_LAYOUT
    from .parser import DEFAULT_OCR_VERSION, DEFAULT_TABLE, DocParser
    from .results import FORMATS

    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown or not formats:
        raise DataError(f"--format {args.format!r}: the formats are {', '.join(FORMATS)}")
    inputs = _expand(args.inputs)
    parser = DocParser(args.layout or DEFAULT_LAYOUT, ocr=args.ocr, ocr_version=args.ocr_version or DEFAULT_OCR_VERSION,
                       table=None if args.no_table else DEFAULT_TABLE, layout_threshold=args.layout_threshold,
                       dpi=args.dpi, device=args.device)
    for path in inputs:
        result = parser(str(path))
        written = result.save(args.out, formats)
        seconds = sum(page.seconds for page in result.pages)
        print(f"{path}: {len(result.pages)} page(s), {len(result.blocks)} blocks in {seconds:.2f} s -> "
              f"{', '.join(str(p) for p in written.values())}", file=sys.stderr)
    return 0


DOC_COMMAND = Command(name="doc", help="parse page images and PDFs into Markdown, JSON and HTML (layout, OCR, "
                                       "tables, reading order)", add_arguments=_add_arguments, run=_run)
