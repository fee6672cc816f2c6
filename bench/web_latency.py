"""Browser (onnxruntime-web, wasm) against native onnxruntime in Python on the same ONNX model, same threads.

For each row a registry model is exported with ``--format web`` (random weights: latency does not depend on them),
its folder served on 127.0.0.1 with COOP/COEP (cross-origin isolated, so wasm threads are allowed) and opened in
headless Debian Chromium. Both sides run the model's own input shape on random data; the median of ``--runs``
``session.run`` calls after warm-up is reported, and the page's whole ``predict`` (decode, preprocessing, model,
post-processing) on an image of the row's size beside it.

    .venv/bin/python bench/web_latency.py                    # every row, 1 and 2 threads
    .venv/bin/python bench/web_latency.py --only clas,seg --runs 10

Add a row by appending a :class:`Row` to :data:`ROWS` (its ``build`` writes the web folder; ``inputs`` says the
feeds of one run); the OCR pipeline's row does so from its kit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
RESULTS = Path(__file__).resolve().parent / "results" / "web_latency.md"


@dataclass
class Row:
    """One benchmarked web folder.

    Attributes:
        name: the row's key for ``--only`` (``clas``, ``seg``, ``det``, ``ocr``).
        title: what the table calls it.
        build: ``(folder) -> None``: writes the web folder there.
        model: the model of deploy.json whose session is timed.
        image_hw: the size of the picture the page's whole ``predict`` is timed on.
    """

    name: str
    title: str
    build: Callable[[Path], object]
    model: str = "model"
    image_hw: tuple[int, int] = (480, 640)
    notes: list[str] = field(default_factory=list)


def _registry_row(name: str, title: str, kit: str, model: str, image_hw: tuple[int, int]) -> Row:
    def build(folder: Path) -> None:
        import importlib

        importlib.import_module(f"oarkit.{kit}.web_export").web_export(model, out=folder, pretrained=False)

    return Row(name, title, build, image_hw=image_hw)


#: the benchmarked rows, in table order (append to add one)
ROWS: list[Row] = [
    _registry_row("clas", "PP-LCNet x1.0 224 (clas/pp_lcnet_x1_0)", "clas", "clas/pp_lcnet_x1_0", (375, 500)),
    _registry_row("seg", "PP-LiteSeg STDC1 512x1024 (seg/pp_liteseg_stdc1)", "seg", "seg/pp_liteseg_stdc1",
                  (512, 1024)),
    _registry_row("det", "PP-YOLOE+-s 640 (det/ppyoloe_plus_crn_s)", "det", "det/ppyoloe_plus_crn_s", (480, 640)),
]


def _ocr_row() -> Row:
    """The OCR pipeline's detector (``oarkit export ocr --format web``: PP-OCRv6 small det + rec) at a page's size.
    The pipeline's inputs are dynamic; the row's random feeds take the page's 640x800 (bench/web_ocr.py times the
    whole pipeline on a rendered page, its cold start and its folder size)."""

    def build(folder: Path) -> None:
        import json

        from oarkit.ocr.web_export import web_export

        web_export("ocr", out=folder)  # the published weights: on the noise picture they find little text
        deploy = json.loads((folder / "deploy.json").read_text())
        deploy["models"]["det"]["inputs"][0]["shape"] = [1, 3, 640, 800]  # the timed feeds' shape (ocr.js reads none)
        (folder / "deploy.json").write_text(json.dumps(deploy, indent=1))

    return Row("ocr", "PP-OCRv6 small det of the OCR pipeline (ocr), page 640x800", build, model="det",
               image_hw=(640, 800))


ROWS.append(_ocr_row())

BROWSER_TIMING = """async ([name, runs, warmup]) => {
  await window.oarkit.ready;
  const ort = window.oarkit.ort, session = await window.oarkit.session(name);
  if (!window.benchFeeds) {
    const feeds = {};
    for (const input of window.oarkit.deploy.models[name].inputs) {
      const shape = input.shape.map((d) => (typeof d === "number" ? d : 1));
      const size = shape.reduce((a, b) => a * b, 1), data = new Float32Array(size);
      for (let i = 0; i < size; i++) data[i] = Math.random() * 2 - 1;
      feeds[input.name] = new ort.Tensor("float32", data, shape);
    }
    window.benchFeeds = feeds;
  }
  const times = [];
  for (let i = 0; i < warmup + runs; i++) {
    const start = performance.now();
    await session.run(window.benchFeeds);
    if (i >= warmup) times.push(performance.now() - start);
  }
  return {times, threads: window.oarkit.threads, isolated: window.crossOriginIsolated};
}"""

PREDICT_TIMING = """async ([url, runs]) => {
  await window.oarkit.ready;
  const blob = await (await fetch(url)).blob();
  await window.oarkit.predict(blob);
  const times = [];
  for (let i = 0; i < runs; i++) { await window.oarkit.predict(blob); times.push(window.oarkit.last.ms); }
  times.sort((a, b) => a - b);
  return times[times.length >> 1];
}"""


class Native:
    """onnxruntime (CPU) on an ONNX file with ``threads`` intra-op threads and random inputs of its shape."""

    def __init__(self, onnx: Path, deploy: dict, threads: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(onnx), options, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        self.feeds = {i["name"]: rng.uniform(-1, 1, [d if isinstance(d, int) else 1 for d in i["shape"]]
                                             ).astype(np.float32) for i in deploy["inputs"]}

    def times(self, runs: int, warmup: int) -> list[float]:
        out = []
        for i in range(warmup + runs):
            start = time.perf_counter()
            self.session.run(None, self.feeds)
            if i >= warmup:
                out.append((time.perf_counter() - start) * 1000)
        return out


def _key(line: str) -> tuple[str, str]:
    cells = [c.strip() for c in line.strip("|").split("|")]
    return cells[0], cells[2]  # the model and the thread count


def merge_rows(existing: list[str], rows: list[str], command: str | None) -> list[str]:
    """``existing`` (the results file's lines) with ``rows`` in its first table: a row of the same model and thread
    count replaced, a new one added after the table's last row; every other line kept (the notes of earlier runs,
    other sections). ``command``: a new line describing the run, in place of the third line (a full run)."""
    out = list(existing)
    if command is not None and len(out) > 2:
        out[2] = command
    start = next((i for i, line in enumerate(out) if line.startswith("|---")), None)
    if start is None:
        return out + [""] + rows
    end = start + 1
    while end < len(out) and out[end].startswith("| "):
        end += 1
    table = out[start + 1:end]
    for row in rows:
        same = [i for i, line in enumerate(table) if _key(line) == _key(row)]
        if same:
            table[same[0]] = row
        else:
            table.append(row)
    return out[:start + 1] + table + out[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated row names (default: all: " +
                        ", ".join(r.name for r in ROWS) + ")")
    parser.add_argument("--threads", default="1,2", help="thread counts, comma-separated (default: 1,2)")
    parser.add_argument("--runs", type=int, default=20, help="timed runs per measurement (default: 20)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=4, help="native and wasm take turns this many times, so that "
                        "both see the same load (default: 4)")
    parser.add_argument("--work", help="keep the web folders here (default: a temporary folder)")
    parser.add_argument("--reuse", action="store_true", help="reuse the web folders already in --work")
    parser.add_argument("--write", default=str(RESULTS), help=f"the Markdown file whose table the rows go into, "
                        f"replacing rows of the same model and threads, other lines kept (default: {RESULTS})")
    args = parser.parse_args(argv)

    import json

    from PIL import Image
    from playwright.sync_api import sync_playwright

    from oarkit.core.export.web.server import StaticServer

    wanted = set(args.only.split(",")) if args.only else {r.name for r in ROWS}
    unknown = wanted - {r.name for r in ROWS}
    if unknown:
        parser.error(f"--only {sorted(unknown)}: the rows are {[r.name for r in ROWS]}")
    threads = [int(t) for t in args.threads.split(",")]
    work = Path(args.work or tempfile.mkdtemp(prefix="oarkit-web-bench-"))
    lines = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        version = browser.version
        for row in (r for r in ROWS if r.name in wanted):
            folder = work / row.name
            if not (args.reuse and (folder / "deploy.json").exists()):
                tic = time.perf_counter()
                row.build(folder)
                print(f"{row.name}: web folder in {time.perf_counter() - tic:.0f} s", flush=True)
            deploy = json.loads((folder / "deploy.json").read_text())["models"][row.model]
            onnx = folder / deploy["file"]
            rng = np.random.default_rng(0)
            Image.fromarray(rng.integers(0, 256, (*row.image_hw, 3), dtype=np.uint8)).save(folder / "bench.png")
            server = StaticServer(folder, isolated=True)
            try:
                for n in threads:
                    native = Native(onnx, deploy, n)
                    context = browser.new_context()
                    page = context.new_page()
                    page.set_default_timeout(300_000)
                    page.goto(f"{server.url}?threads={n}")
                    per_round = max(1, args.runs // args.rounds)
                    native_times, wasm_times = [], []
                    for turn in range(args.rounds):  # taking turns: a change of load hits both sides
                        warmup = args.warmup if turn == 0 else 1
                        native_times += native.times(per_round, warmup)
                        run = page.evaluate(BROWSER_TIMING, [row.model, per_round, warmup])
                        wasm_times += run["times"]
                    assert run["threads"] == n and run["isolated"], run
                    predict = page.evaluate(PREDICT_TIMING, [f"{server.url}bench.png", max(3, args.runs // 4)])
                    context.close()
                    native_ms, wasm = statistics.median(native_times), {"median": statistics.median(wasm_times)}
                    ratio = wasm["median"] / native_ms
                    shape = "x".join(str(d if isinstance(d, int) else 1) for d in deploy["inputs"][0]["shape"])
                    lines.append(f"| {row.title} | {shape} | {n} | {native_ms:.1f} | {wasm['median']:.1f} | "
                                 f"{ratio:.2f}x | {'yes' if ratio <= 3 else 'no'} | {predict:.1f} "
                                 f"({row.image_hw[0]}x{row.image_hw[1]}) |")
                    print(lines[-1], flush=True)
            finally:
                server.close()
        browser.close()
    cpu = os.popen("lscpu | grep 'Model name' | head -1").read().split(":")[-1].strip()
    header = [
        "# Web latency: onnxruntime-web (wasm, SIMD) in headless Chromium against onnxruntime in Python",
        "",
        f"`{' '.join(['.venv/bin/python', 'bench/web_latency.py', *(argv if argv is not None else sys.argv[1:])])}`"
        f" on {cpu}, {os.cpu_count()} cores (shared with other work while measured), Chromium "
        f"{version}; same ONNX file, same thread count, random "
        f"inputs of the model's shape, median of {args.runs} runs in {args.rounds} turns (native, then wasm, "
        f"{args.warmup} warm-up runs before the first turn, one before each other). The page is "
        "served with COOP/COEP (cross-origin isolated) so wasm threads are allowed. `predict` is the page's whole "
        "call on a picture of the given size (decode, preprocessing, model, post-processing). Goal: wasm within 3x "
        "of native.",
        "",
        "| model | input | threads | native ms | wasm ms | wasm / native | within 3x | page predict ms (image) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    if args.write:
        path = Path(args.write)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = merge_rows(path.read_text().splitlines(), lines, header[2] if not args.only else None) \
            if path.exists() else header + lines
        path.write_text("\n".join(text) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
