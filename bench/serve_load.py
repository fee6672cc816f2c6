"""``oarkit serve`` against a naive FastAPI app that calls the same predictor once per request, side by side in
one run on this machine (localhost only), at concurrency 1, 8 and 32.

    python bench/serve_load.py [--requests 400] [--ocr-requests 64] [--seconds 20] [--out bench/results/serve_load.md]

Models: PP-LCNet x1.0 at 224 (ImageNet preprocessing, random weights: no weights download offline, and the
speed does not depend on them) and the OCR pipeline (``ocr``: PP-OCRv4 mobile det + rec on PaddleOCR's released
weights). Inputs: JPEG files of scikit-image's sample photographs (classifier) and rendered 480x640 pages (OCR),
sent as base64 JSON, the same bytes to both servers. The naive app is what a user writes by hand: a FastAPI
``def`` route under uvicorn that decodes the image and calls ``predictor([image])``; FastAPI runs it in its
thread pool, so concurrent requests run the model concurrently with no batching. ``oarkit serve`` runs with its
defaults (``--max-batch-size 16 --max-delay-ms 5``). Every run of one server is bounded in requests and seconds;
each client keeps one connection open. The in-process latencies are the predictor timed in this process with no
server running, on a decoded image and on the image file (the overhead goal is measured against the file call:
a server must decode what it is sent, as ``oarkit predict`` must read its file).

Goals (issue 23): at concurrency 32, >= 2x the naive app's throughput on the classifier with p99 no worse; at
concurrency 1, server overhead <= 10 % over the in-process latency.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import cv2  # noqa: E402
import numpy as np  # noqa: E402
from pydantic import BaseModel  # noqa: E402

CONCURRENCY = (1, 8, 32)
PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "cat", "camera", "coins", "immunohistochemistry")
IMAGENET = {"resize_short": 256, "crop": [224, 224], "interpolation": "bilinear", "mean": [0.485, 0.456, 0.406],
            "std": [0.229, 0.224, 0.225], "color": "RGB", "layout": "NCHW"}


# -- what is served -------------------------------------------------------------------------------------------------
def write_classifier(folder: Path) -> Path:
    """A model directory of PP-LCNet x1.0 (1000 classes, random weights) with ImageNet's 224 preprocessing."""
    from oarkit.core.engine.checkpoint import contiguous_state, write_model_dir
    from oarkit.core.registry import create_model

    model = create_model("clas/pp_lcnet_x1_0", pretrained=False)
    meta = {"task": "clas", "model": {"name": "clas/pp_lcnet_x1_0", "kwargs": {}},
            "labels": [f"class_{i}" for i in range(1000)], "preprocessing": IMAGENET}
    return write_model_dir(folder, weights=contiguous_state(model), meta=meta, config_yaml="{}\n")


def photo_files() -> list[bytes]:
    import skimage.data

    files = []
    for name in PHOTOS:
        image = np.asarray(getattr(skimage.data, name)())
        image = np.stack([image] * 3, -1) if image.ndim == 2 else image[..., :3]
        image = cv2.resize(image, (400, int(400 * image.shape[0] / image.shape[1])))
        files.append(cv2.imencode(".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 90])[1]
                     .tobytes())
    return files


def page_files() -> list[bytes]:
    from oarkit.ocr import render_page

    return [cv2.imencode(".png", cv2.cvtColor(render_page(6, size=(480, 640), seed=70 + i).image,
                                              cv2.COLOR_RGB2BGR))[1].tobytes() for i in range(4)]


def in_process(source: str, files: list[bytes], rounds: int, folder: Path) -> dict[str, float]:
    """The predictor timed in this process with no server running: the median ms of ``predictor([image])`` on a
    decoded image (``array``) and on the image file (``file``: decoding included, what ``oarkit predict`` pays),
    and the ms per image of one call on 16 images (``batch16``: what batching can reach on this machine)."""
    from oarkit.core.kits import source_entry

    predictor = source_entry(source).predictor(source, device="cpu")
    images = [cv2.cvtColor(cv2.imdecode(np.frombuffer(f, np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
              for f in files]
    paths = []
    for i, f in enumerate(files):
        suffix = "jpg" if f.startswith(b"\xff\xd8") else "png"
        paths.append(folder / f"input_{i}.{suffix}")
        paths[-1].write_bytes(f)
    predictor(images[:2])

    def median_ms(inputs: list[Any]) -> float:
        times = []
        for i in range(rounds):
            started = time.perf_counter()
            predictor([inputs[i % len(inputs)]])
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times)

    batch = (images * 16)[:16]
    predictor(batch)  # the first call of a new batch shape sets up its kernels
    started = time.perf_counter()
    for _ in range(3):
        predictor(batch)
    batch16 = (time.perf_counter() - started) * 1000 / 48
    return {"array": median_ms(images), "file": median_ms([str(p) for p in paths]), "batch16": batch16}


# -- the naive app ---------------------------------------------------------------------------------------------------
class Body(BaseModel):
    """The naive app's request: one base64 image."""

    image: str


def naive_app(source: str) -> Any:
    """A hand-written FastAPI app: decode, ``predictor([image])``, ``to_dict()``, one request at a time each."""
    from fastapi import FastAPI

    from oarkit.core.kits import source_entry

    predictor = source_entry(source).predictor(source, device="cpu")
    predictor([np.full((64, 64, 3), 127, np.uint8)])
    app = FastAPI()

    @app.get("/ready")
    def ready() -> dict[str, bool]:
        return {"ready": True}

    @app.post("/predict")
    def predict(body: Body) -> dict[str, Any]:
        data = np.frombuffer(base64.b64decode(body.image), np.uint8)
        image = cv2.cvtColor(cv2.imdecode(data, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
        return predictor([image])[0].to_dict()

    return app


def run_naive(source: str, port: int) -> None:
    import uvicorn

    uvicorn.run(naive_app(source), host="127.0.0.1", port=port, log_level="warning")


# -- servers as processes and the load -------------------------------------------------------------------------------
def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(kind: str, source: str, log: Path) -> tuple[subprocess.Popen, str, str]:
    """Start one server; returns the process, its predict URL and how a body wraps the base64 image."""
    import httpx

    port = free_port()
    if kind == "naive":
        command = [sys.executable, __file__, "--naive-server", source, "--port", str(port)]
        ready, url, form = f"http://127.0.0.1:{port}/ready", f"http://127.0.0.1:{port}/predict", "naive"
    else:
        command = [sys.executable, "-m", "oarkit.core.cli", "serve", source, "--port", str(port), "--name", "m"]
        ready, url, form = (f"http://127.0.0.1:{port}/v2/health/ready",
                            f"http://127.0.0.1:{port}/v1/models/m/predict", "oarkit")
    process = subprocess.Popen(command, stdout=open(log, "w"), stderr=subprocess.STDOUT)  # noqa: SIM115
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(ready, timeout=2).status_code == 200:
                return process, url, form
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    process.kill()
    raise SystemExit(f"{kind} server for {source} did not get ready:\n{log.read_text()[-3000:]}")


def body(form: str, file: bytes) -> bytes:
    image = base64.b64encode(file).decode()
    return json.dumps({"image": image} if form == "naive" else {"inputs": [{"image": image}]}).encode()


def load(url: str, bodies: list[bytes], concurrency: int, requests: int, seconds: float) -> dict[str, float]:
    """``concurrency`` clients, each on one kept-alive connection, until ``requests`` answers or ``seconds``."""
    import httpx

    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    issued = [0]
    stop_at = time.monotonic() + seconds

    def client() -> None:
        with httpx.Client(timeout=120, headers={"content-type": "application/json"}) as http:
            while time.monotonic() < stop_at:
                with lock:
                    if issued[0] >= requests:
                        return
                    index = issued[0]
                    issued[0] += 1
                started = time.perf_counter()
                answer = http.post(url, content=bodies[index % len(bodies)])
                took = (time.perf_counter() - started) * 1000
                with lock:
                    (latencies.append(took) if answer.status_code == 200 else
                     failures.append(f"{answer.status_code}: {answer.text[:200]}"))

    for b in bodies[:2]:  # warm the path
        httpx.post(url, content=b, headers={"content-type": "application/json"}, timeout=120)
    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    if failures:
        raise SystemExit(f"{len(failures)} requests to {url} failed, first: {failures[0]}")
    latencies.sort()
    return {"requests": len(latencies), "rps": len(latencies) / wall, "p50": statistics.median(latencies),
            "p99": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]}


# -- report ----------------------------------------------------------------------------------------------------------
def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else the machine type."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def report(rows: list[dict[str, Any]], in_process: dict[str, dict[str, float]], args: argparse.Namespace) -> str:
    lines = [f"# oarkit serve against a naive FastAPI app ({time.strftime('%Y-%m-%d')})", "",
             f"`python bench/serve_load.py --requests {args.requests} --ocr-requests {args.ocr_requests} "
             f"--seconds {args.seconds:g}` on {os.cpu_count()} CPU cores "
             f"({cpu_name()}), localhost, server and clients on the same cores. "
             "Latencies in ms.", "",
             "| model | concurrency | naive req/s | oarkit req/s | throughput ratio | naive p50 | oarkit p50 | "
             "naive p99 | oarkit p99 | p99 ratio (oarkit / naive) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        n, o = row["naive"], row["oarkit"]
        lines.append(f"| {row['model']} | {row['concurrency']} | {n['rps']:.1f} | {o['rps']:.1f} | "
                     f"{o['rps'] / n['rps']:.2f}x | {n['p50']:.0f} | {o['p50']:.0f} | {n['p99']:.0f} | "
                     f"{o['p99']:.0f} | {o['p99'] / n['p99']:.2f} |")
    lines += ["", "In process, no server (ms): `predictor([image])` on a decoded image and on the image file "
              "(decoding included), and per image of one call on 16 images (the most batching can give here).", "",
              "| model | predictor, array | predictor, file | per image at batch 16 | oarkit serve p50 at "
              "concurrency 1 | overhead over the file call | naive p50 at concurrency 1 |",
              "|---|---|---|---|---|---|---|"]
    for model, ms in in_process.items():
        row = next(r for r in rows if r["model"] == model and r["concurrency"] == 1)
        served = row["oarkit"]["p50"]
        lines.append(f"| {model} | {ms['array']:.1f} | {ms['file']:.1f} | {ms['batch16']:.1f} | {served:.1f} | "
                     f"{100 * (served / ms['file'] - 1):+.1f} % | {row['naive']['p50']:.1f} |")
    if "pp_lcnet_x1_0@224" not in in_process:
        return "\n".join(lines) + "\n"
    clas32 = next(r for r in rows if r["model"] == "pp_lcnet_x1_0@224" and r["concurrency"] == 32)
    ratio = clas32["oarkit"]["rps"] / clas32["naive"]["rps"]
    p99 = clas32["oarkit"]["p99"] / clas32["naive"]["p99"]
    overhead = next(r["oarkit"]["p50"] for r in rows if r["model"] == "pp_lcnet_x1_0@224" and r["concurrency"] == 1)
    overhead = 100 * (overhead / in_process["pp_lcnet_x1_0@224"]["file"] - 1)
    lines += ["", "Goals on the classifier: throughput at concurrency 32 "
              f"{ratio:.2f}x the naive app's (goal >= 2x: {'met' if ratio >= 2 else 'MISSED'}), p99 "
              f"{p99:.2f}x (goal <= 1: {'met' if p99 <= 1 else 'MISSED'}); overhead at concurrency 1 {overhead:+.1f} % "
              f"(goal <= 10 %: {'met' if overhead <= 10 else 'MISSED'})."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="requests per classifier run")
    parser.add_argument("--ocr-requests", type=int, default=64, help="requests per OCR run")
    parser.add_argument("--seconds", type=float, default=20.0, help="the bound of one run")
    parser.add_argument("--only", choices=("clas", "ocr"), help="one model only")
    parser.add_argument("--out", default="bench/results/serve_load.md")
    parser.add_argument("--naive-server", metavar="SOURCE", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.naive_server:
        run_naive(args.naive_server, args.port)
        return

    work = Path(tempfile.mkdtemp(prefix="serve_load_"))
    models = {}
    if args.only in (None, "clas"):
        models["pp_lcnet_x1_0@224"] = (str(write_classifier(work / "lcnet")), photo_files(), args.requests)
    if args.only in (None, "ocr"):
        models["ocr (PP-OCRv4 mobile)"] = ("ocr", page_files(), args.ocr_requests)
    timed = {name: in_process(source, files, 40 if name.startswith("pp") else 8, work)
             for name, (source, files, _) in models.items()}
    print("in-process ms:", timed, flush=True)
    rows = []
    for name, (source, files, requests) in models.items():
        measured: dict[tuple[str, int], dict[str, float]] = {}
        for kind in ("naive", "oarkit"):  # one server at a time: the other is not running
            process, url, form = start(kind, source, work / f"{kind}.log")
            try:
                bodies = [body(form, f) for f in files]
                for c in CONCURRENCY:
                    measured[kind, c] = load(url, bodies, c, requests, args.seconds)
                    print(f"{name} {kind} c={c}: " + ", ".join(f"{k} {v:.1f}" for k, v in measured[kind, c].items()),
                          flush=True)
            finally:
                process.terminate()
                process.wait(timeout=30)
        rows += [{"model": name, "concurrency": c, "naive": measured["naive", c], "oarkit": measured["oarkit", c]}
                 for c in CONCURRENCY]
    text = report(rows, timed, args)
    print(text)
    if not args.only:
        Path(args.out).write_text(text)
        print(f"written to {args.out}")


if __name__ == "__main__":
    main()
