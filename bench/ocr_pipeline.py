"""oarkit's OCR pipeline (eager PyTorch and exported ONNX) against RapidOCR (rapidocr-onnxruntime 1.4.4) on the
same rendered pages, the same PP-OCRv4 weights, the same thread count, interleaved.

    python bench/ocr_pipeline.py [--pages 6] [--rounds 3] [--threads 2] [--export runs/bench_ocr_pipeline]

Both pipelines run det -> cls -> rec with RapidOCR's settings (short side at least 736, mean/std 0.5, DB box
threshold 0.5, unclip 1.6, dilation), so the same text is expected. The ONNX pipeline is exported once into
``--export`` (``oarkit.ocr.export_pipeline``; reused when present). Each round visits the pages in turn and times
every engine on each page in a rotating order; the table gives the median latency per page, the CER against the
rendered truth, and how many pages each read exactly as RapidOCR did. Goal: ONNX at <= 1.0x RapidOCR's latency with
the same text.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from oarkit.core.deploy.pipeline import is_pipeline_dir  # noqa: E402
from oarkit.ocr import OCR, character_error_rate, export_pipeline, render_page  # noqa: E402

#: rapidocr-onnxruntime 1.4.4's config.yaml, as OCR() options
RAPID_DET = {"limit_side_len": 736, "limit_type": "min", "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}
RAPID_DB = {"thresh": 0.3, "box_thresh": 0.5, "unclip_ratio": 1.6, "use_dilation": True, "score_mode": "fast"}


def rapid_text(result: tuple) -> str:
    lines = result[0] or []
    return "\n".join(line[1] for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=6, help="rendered pages, half English, half Chinese")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--export", default="runs/bench_ocr_pipeline", help="the ONNX pipeline folder")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    pages = [render_page(7, size=(480, 640), language="en" if i % 2 == 0 else "ch", seed=500 + i, angle=2.0)
             for i in range(args.pages)]
    if not is_pipeline_dir(args.export):
        print(f"exporting the pipeline to {args.export} ...")
        export_pipeline(args.export, det="ocr/ppocrv4_det_mobile", rec="ocr/ppocrv4_rec_mobile",
                        cls="ocr/cls_mv3_mobile", det_example=(320, 320), verify=False)

    from rapidocr_onnxruntime import RapidOCR

    rapid = RapidOCR(intra_op_num_threads=args.threads, inter_op_num_threads=1)
    options = {"det_preprocess": RAPID_DET, "det_postprocess": RAPID_DB}
    engines = {
        "rapidocr": lambda image: rapid_text(rapid(np.ascontiguousarray(image[..., ::-1]))),  # it takes BGR
        "oarkit onnx": (lambda o: lambda image: o(image).text)(
            OCR(args.export, runtime_options={"threads": args.threads}, **options)),
        "oarkit eager": (lambda o: lambda image: o(image).text)(OCR(use_cls=True, **options)),
    }
    texts: dict[str, list[str]] = {name: [""] * len(pages) for name in engines}
    times: dict[str, list[float]] = {name: [] for name in engines}
    for run in engines.values():  # warm-up
        run(pages[0].image)
    names = list(engines)
    for r in range(args.rounds):
        for p, page in enumerate(pages):
            order = names[(r + p) % len(names):] + names[:(r + p) % len(names)]
            for name in order:
                tic = time.perf_counter()
                texts[name][p] = engines[name](page.image)
                times[name].append(time.perf_counter() - tic)
    truth = [page.text.replace("\n", "") for page in pages]
    rapid_ms = statistics.median(times["rapidocr"]) * 1000
    print(f"\n{len(pages)} pages of 640x480, {args.rounds} rounds, {args.threads} threads, torch "
          f"{torch.__version__}\n")
    print("| engine | median ms / page | x rapidocr | CER | pages reading as rapidocr |")
    print("|---|---|---|---|---|")
    for name in engines:
        ms = statistics.median(times[name]) * 1000
        cer = character_error_rate([t.replace("\n", "") for t in texts[name]], truth)
        same = sum(a == b for a, b in zip(texts[name], texts["rapidocr"]))
        print(f"| {name} | {ms:.0f} | {ms / rapid_ms:.2f} | {100 * cer:.2f}% | {same}/{len(pages)} |")
    for p in range(len(pages)):
        if texts["oarkit onnx"][p] != texts["rapidocr"][p]:
            print(f"\npage {p}: oarkit onnx {texts['oarkit onnx'][p]!r}\n        rapidocr    {texts['rapidocr'][p]!r}")
    print(f"\nexported pipeline: {Path(args.export).resolve()}")


if __name__ == "__main__":
    main()
