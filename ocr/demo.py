"""``make demo-ocr``: PP-OCRv4 on rendered pages, then fine-tuned for a domain it reads poorly, then exported.

The domain: dot-matrix lot and expiry codes (``LOT 4A7-193``, ``EXP 2027/03/14``, ``BK220 18:42``), the marks inkjet
and dot-matrix coders print on packaging. Paddle's PP-OCRv4 reads few of them right (its training lines are solid
strokes); a short fine-tune from its own weights on rendered codes teaches it the dots.

Steps (each a sub-command, so the Makefile shows them)::

    python -m oarkit.ocr.demo prepare --out data/ocr_demo      # pages + the dot-matrix line set
    python -m oarkit.ocr.demo page data/ocr_demo/pages --save-dir runs/x   # the pipeline: text, CER, picture
    python -m oarkit.ocr.demo accuracy --data data/ocr_demo/dotmatrix [--run runs/x]  # before / after
    python -m oarkit.ocr.demo export --rec runs/x --out runs/x/pipeline          # det + rec to ONNX, pipeline.yaml
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from pathlib import Path

import cv2

from oarkit.core.cli import setup_environment

from .metrics import character_error_rate
from .render import LineStyle, render_page, write_rec_set

logger = logging.getLogger(__name__)

LETTERS = "ABCDEFGHJKLMNPRSTUVWXYZ"
DIGITS = "0123456789"
#: the dot pitch of the demo's codes (pixels at line height 48)
DOT_PITCH = 4


def code_line(rng: random.Random) -> str:
    """A lot number, an expiry date or a batch code with a time."""
    kind = rng.randrange(3)
    if kind == 0:
        return "LOT " + "".join(rng.choice(LETTERS + DIGITS) for _ in range(3)) + "-" + \
            "".join(rng.choice(DIGITS) for _ in range(3))
    if kind == 1:
        return f"EXP {rng.randint(2024, 2031):04d}/{rng.randint(1, 12):02d}/{rng.randint(1, 28):02d}"
    return "".join(rng.choice(LETTERS) for _ in range(2)) + "".join(rng.choice(DIGITS) for _ in range(3)) + \
        f" {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"


def prepare(out: str | Path, *, train: int = 800, val: int = 100, seed: int = 0) -> Path:
    """Render the demo's data: two pages (English, Chinese) with their texts, and the dot-matrix line set."""
    out = Path(out)
    pages = out / "pages"
    pages.mkdir(parents=True, exist_ok=True)
    for language, page_seed in (("en", 21), ("ch", 22)):
        page = render_page(7, size=(480, 640), language=language, seed=page_seed, angle=2.0)
        cv2.imwrite(str(pages / f"page_{language}.png"), cv2.cvtColor(page.image, cv2.COLOR_RGB2BGR))
        (pages / f"page_{language}.txt").write_text(page.text + "\n", encoding="utf-8")
    rng = random.Random(seed)
    texts = [code_line(rng) for _ in range(train + val)]
    style = LineStyle(dots=DOT_PITCH, color=False, noise=4.0)
    write_rec_set(out / "dotmatrix", train=train, val=0, style=style, seed=seed, texts=texts[:train])
    _write_val(out / "dotmatrix", texts[train:], style, seed)
    return out


def _write_val(root: Path, texts: list[str], style: LineStyle, seed: int) -> None:
    """Validation lines: codes drawn after the training ones, rendered with seeds of their own."""
    from .render import render_line

    rows = []
    for i, text in enumerate(texts):
        name = f"images/val_{i:05d}.png"
        image = render_line(text, seed=seed + 100_000 + i, style=style)
        cv2.imwrite(str(root / name), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
        rows.append(f"{name}\t{text}")
    (root / "val.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")


def read_pages(folder: str | Path, save_dir: str | Path | None = None, **ocr_options: object) -> dict[str, float]:
    """Run ``OCR(**ocr_options)`` on each ``page_*.png`` of ``folder``: print its text and CER against
    ``page_*.txt``, save the picture; returns the CER per page."""
    from .pipeline.ocr import OCR

    ocr = OCR(**ocr_options)  # type: ignore[arg-type]
    cers = {}
    for image in sorted(Path(folder).glob("page_*.png")):
        truth = image.with_suffix(".txt").read_text(encoding="utf-8").strip()
        tic = time.perf_counter()
        result = ocr(str(image))
        seconds = time.perf_counter() - tic
        cer = character_error_rate([result.text.replace("\n", "")], [truth.replace("\n", "")])
        cers[image.stem] = cer
        print(f"== {image.name}: {len(result.lines)} lines in {seconds:.2f}s, CER {100 * cer:.2f}%")
        print(result.text)
        if save_dir:
            print(f"picture: {result.save(Path(save_dir) / f'{image.stem}_ocr.png')}")
    return cers


def accuracy(data: str | Path, run: str | Path | None = None) -> dict[str, float]:
    """Line accuracy and CER on the ``val`` lines of ``data``: of Paddle's PP-OCRv4 recognizer and, with ``run``,
    of the fine-tuned one, through the same evaluation path (the task's validation step and metric)."""
    from oarkit.core.engine.evaluation import build_loader, evaluate_run, run_evaluation
    from oarkit.core.registry import create_model

    from .data.module import OCRRecData
    from .export import registry_meta
    from .tasks.rec import TextRecognitionTask

    name = "ocr/ppocrv4_rec_mobile"
    model = create_model(name, pretrained=True).eval()
    task = TextRecognitionTask(name)
    task.restore(registry_meta(name, model))
    rec_data = OCRRecData(root=str(data))
    task.configure_data(rec_data)
    dataset = rec_data.dataset("val")
    before, _ = run_evaluation(task, model, build_loader(dataset, rec_data, task, train=False, batch_size=16))
    out = {"before_acc": before["acc"], "before_cer": before["cer"]}
    print(f"PP-OCRv4 (Paddle's weights) on {len(dataset)} dot-matrix codes: accuracy {100 * before['acc']:.1f}%, "
          f"CER {100 * before['cer']:.2f}%")
    if run:
        after = evaluate_run(run, data_root=str(data))
        out.update(after_acc=after["acc"], after_cer=after["cer"])
        print(f"fine-tuned ({run}): accuracy {100 * after['acc']:.1f}%, CER {100 * after['cer']:.2f}%  "
              f"(before {100 * before['acc']:.1f}% / {100 * before['cer']:.2f}%)")
    return out


def export(rec: str | Path, out: str | Path, pages: str | Path | None = None) -> Path:
    """Export PP-OCRv4 det and the fine-tuned rec to ONNX as a pipeline folder; read the pages with it."""
    from .export import export_pipeline

    folder, reports = export_pipeline(out, det="ocr/ppocrv4_det_mobile", rec=rec, det_example=(320, 320))
    for stage, report in reports.items():
        print(f"-- {stage}\n{report.table()}")
    if pages:
        read_pages(pages, det=str(folder))
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m oarkit.ocr.demo", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", required=True)
    p.add_argument("--train", type=int, default=800)
    p.add_argument("--val", type=int, default=100)
    p = sub.add_parser("page")
    p.add_argument("folder")
    p.add_argument("--save-dir")
    p.add_argument("--rec", default="ocr/ppocrv4_rec_mobile")
    p = sub.add_parser("accuracy")
    p.add_argument("--data", required=True)
    p.add_argument("--run")
    p.add_argument("--json")
    p = sub.add_parser("export")
    p.add_argument("--rec", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--pages")
    args = parser.parse_args(argv)
    setup_environment()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if args.step == "prepare":
        print(f"demo data at {prepare(args.out, train=args.train, val=args.val)}")
    elif args.step == "page":
        read_pages(args.folder, args.save_dir, version="PP-OCRv4", rec=args.rec)  # the recognizer it fine-tunes
    elif args.step == "accuracy":
        numbers = accuracy(args.data, args.run)
        if args.json:
            Path(args.json).write_text(json.dumps(numbers, indent=2))
    elif args.step == "export":
        export(args.rec, args.out, args.pages)
    return 0


if __name__ == "__main__":
    sys.exit(main())

