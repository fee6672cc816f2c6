"""The OCR pipeline in the browser against onnxruntime in Python, on the same ONNX files and threads.

    python bench/web_ocr.py --pipeline PIPELINE_FOLDER [--int8 PIPELINE_FOLDER_INT8] [--runs 5]

For each pipeline folder (``oarkit.ocr.export_pipeline``, or what ``oarkit export ocr --format web`` exports
inside), the web folder is written (``oarkit.ocr.web_export.web_export``), served on 127.0.0.1 and driven in
headless Debian Chromium (playwright). Measured:

- cold start: a fresh browser context (empty cache) navigates to ``index.html``; the time from the navigation's
  start to ``window.oarkit.ready`` resolving, and to the first result on a rendered page (median of 3);
- browser ms per page: the median of ``--runs`` warm ``predict`` calls (the page's own ``oarkit.last.ms``), one
  wasm thread (the page is not cross-origin isolated) and 2 threads (COOP/COEP headers, ``?threads=2``);
- Python: ``OCR(folder, runtime_options={"threads": N})`` on the same page, median ms over ``--runs``;
- sizes: the web folder in all, its models, onnxruntime-web's files.

Prints a Markdown table (the OCR section of bench/results/web_latency.md).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import os
import statistics
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import cv2
import numpy as np

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
#: Paddle.js OCR (@paddlejs-models/ocr 1.2.4, the npm registry's latest): lib/index.js (the package's only code file,
#: bundling paddlejs and its OpenCV build) plus the two models it fetches at init from bcebos: PP-OCRv2 det and rec,
#: whose Paddle inference models PaddleOCR's model list gives as 3.0 MB and 8.5 MB
PADDLEJS_OCR_MB = {"lib/index.js": 1.62, "ch_PP-OCRv2_det": 3.0, "ch_PP-OCRv2_rec": 8.5}


def _server(folder: Path, isolated: bool) -> tuple[ThreadingHTTPServer, str]:
    class Handler(SimpleHTTPRequestHandler):
        extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".js": "text/javascript",
                          ".mjs": "text/javascript", ".wasm": "application/wasm"}

        def end_headers(self) -> None:
            if isolated:
                self.send_header("Cross-Origin-Opener-Policy", "same-origin")
                self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            super().end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"


RESULTS = Path(__file__).resolve().parent / "results" / "web_latency.md"
SECTION = "## OCR pipeline (bench/web_ocr.py)"


def _files(path: Path) -> list[Path]:
    return [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file() and p.name != "page.png")


def _size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in _files(path)) / 1e6


def _gzip_mb(path: Path) -> float:
    """What a server that compresses (gzip -6) sends of the folder."""
    return sum(len(gzip.compress(p.read_bytes(), 6)) for p in _files(path)) / 1e6


def write_section(path: Path, text: str) -> None:
    """Put ``text`` in ``path`` as its OCR section: in place of the one there, else at the end."""
    old = path.read_text() if path.is_file() else "# Web latency\n"
    start = old.find(SECTION)
    if start >= 0:
        end = old.find("\n## ", start + len(SECTION))
        old = old[:start].rstrip("\n") + ("\n\n" + old[end + 1:] if end >= 0 else "")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(old.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n")


def measure_browser(web: Path, page_file: str, runs: int) -> dict[str, float]:
    """Cold start and warm ms per page in Chromium, 1 thread and 2 threads."""
    from playwright.sync_api import sync_playwright

    out: dict[str, float] = {}
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        for threads, isolated in ((1, False), (2, True)):
            httpd, url = _server(web, isolated)
            colds, firsts = [], []
            for _ in range(3):
                context = browser.new_context(service_workers="block")  # a fresh cache each time
                page = context.new_page()
                page.set_default_timeout(180_000)
                page.goto(f"{url}index.html?threads={threads}")
                timing = page.evaluate(
                    "async (file) => { await window.oarkit.ready; const ready = performance.now(); "
                    "await window.oarkit.predict(file); return [ready, performance.now()]; }", page_file)
                colds.append(timing[0])
                firsts.append(timing[1])
                warm = []
                if len(colds) == 3:
                    assert page.evaluate("window.oarkit.threads") == threads
                    for _ in range(runs):
                        page.evaluate("async (file) => { await window.oarkit.predict(file); }", page_file)
                        warm.append(page.evaluate("window.oarkit.last.ms"))
                    out[f"browser_ms_{threads}"] = statistics.median(warm)
                context.close()
            out[f"cold_ready_s_{threads}"] = statistics.median(colds) / 1000
            out[f"cold_first_s_{threads}"] = statistics.median(firsts) / 1000
            httpd.shutdown()
        browser.close()
    return out


def measure_python(folder: Path, image: np.ndarray, runs: int) -> dict[str, float]:
    """``OCR(folder)`` on onnxruntime, 1 and 2 threads: median ms per page."""
    from oarkit.ocr import OCR

    out = {}
    for threads in (1, 2):
        ocr = OCR(folder, runtime_options={"threads": threads})
        ocr(image)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            ocr(image)
            times.append((time.perf_counter() - start) * 1000)
        out[f"python_ms_{threads}"] = statistics.median(times)
    return out


def main() -> None:
    from oarkit.ocr import OCR, render_page
    from oarkit.ocr.web_export import web_export

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipeline", type=Path, required=True, help="a float OCR pipeline folder")
    parser.add_argument("--int8", type=Path, help="an OCR pipeline folder whose stages are onnx_int8")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write", default=str(RESULTS), help="the Markdown file whose OCR section is written")
    args = parser.parse_args()
    image = np.asarray(render_page(8, size=(640, 800), language="en", seed=21).image)
    rows = []
    with tempfile.TemporaryDirectory(prefix="web_ocr_") as tmp:
        for label, folder in (("float", args.pipeline), ("int8", args.int8)):
            if folder is None:
                continue
            web = web_export(folder, out=Path(tmp) / label)
            cv2.imwrite(str(web / "page.png"), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
            row = {"label": label, "folder_mb": _size_mb(web), "gzip_mb": _gzip_mb(web),
                   "models_mb": _size_mb(web / "models"), "ort_mb": _size_mb(web / "ort"),
                   "lines": len(OCR(folder)(image).lines)}
            row.update(measure_browser(web, "page.png", args.runs))
            row.update(measure_python(folder, image, args.runs))
            rows.append(row)
    paddle = sum(PADDLEJS_OCR_MB.values())
    parts = ", ".join(f"{k} {v} MB" for k, v in PADDLEJS_OCR_MB.items())
    load = os.getloadavg()[0]
    text = [SECTION, "",
            f"`.venv/bin/python bench/web_ocr.py --pipeline ... --int8 ... --runs {args.runs}` on {os.cpu_count()} "
            f"cores shared with other work (load average {load:.1f} when it finished): the default OCR() pipeline "
            "(PP-OCRv6 small det + rec) as ONNX, float and int8, on a rendered English page of 8 lines, 640x800 "
            "(height x width). "
            "Cold start: a fresh browser context, from the navigation's start (median of 3). Browser and Python "
            "run the same ONNX files with the same intra-op threads (2 threads: the page is served with COOP/COEP).",
            "",
            "| pipeline | folder MB (gzip) | models MB | ort MB | cold: ready s | cold: first result s | "
            "browser ms/page 1 thr | python ORT ms/page 1 thr | ratio | browser 2 thr | python 2 thr | ratio |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        text.append(f"| {r['label']} | {r['folder_mb']:.1f} ({r['gzip_mb']:.1f}) | {r['models_mb']:.1f} | "
                    f"{r['ort_mb']:.1f} | {r['cold_ready_s_1']:.2f} | {r['cold_first_s_1']:.2f} | "
                    f"{r['browser_ms_1']:.0f} | {r['python_ms_1']:.0f} | {r['browser_ms_1'] / r['python_ms_1']:.2f}x | "
                    f"{r['browser_ms_2']:.0f} | {r['python_ms_2']:.0f} | {r['browser_ms_2'] / r['python_ms_2']:.2f}x |")
    text += ["", f"Paddle.js OCR's download (@paddlejs-models/ocr 1.2.4, PP-OCRv2 det + rec): {paddle:.1f} MB "
             f"({parts}; the model sizes are PaddleOCR's model list's inference-model sizes, not measured here)."]
    print("\n".join(text))
    if args.write:
        write_section(Path(args.write), "\n".join(text))
        print(f"wrote the OCR section of {args.write}")

if __name__ == "__main__":
    main()
