"""Batch-1 latency of eager torch vs onnxruntime fp32 / int8 vs OpenVINO (f32 and its default precision).

    python bench/export_latency.py [--models clas/pp_lcnet_x1_0 clas/resnet50_vd] [--threads 1] [--rounds 7]
                                   [--iters 20] [--profile]

Models are built with random weights (no download) and exported through oarkit's pipeline; int8 is calibrated
on random images (latency and size do not depend on the calibration data). Every backend runs with the same
number of threads (``--threads``, also torch's), interleaved round by round so that background load hits them
alike; the median over rounds is reported with the goals: ORT fp32 <= 0.7x eager, ORT int8 <= 0.5x ORT fp32,
int8 file <= 0.27x fp32.

``--profile`` adds onnxruntime's own per-operator profile of the fp32 and int8 graphs (the sum over nodes of
each node's median kernel time, by op type, after onnxruntime's graph optimisations): where int8 time goes
when it is not faster.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import TensorDataset  # noqa: E402

from oarkit.clas import export_source  # noqa: E402
from oarkit.core.deploy import DeployedModel  # noqa: E402
from oarkit.core.export import export  # noqa: E402

GOALS = {"ort_fp32/eager": 0.7, "ort_int8/ort_fp32": 0.5, "int8_size/fp32_size": 0.27}


def _time(fn, x: torch.Tensor, iters: int) -> float:
    tic = time.perf_counter()
    for _ in range(iters):
        fn(x)
    return 1000 * (time.perf_counter() - tic) / iters


def ort_profile(path: Path, x: np.ndarray, threads: int, runs: int = 40) -> tuple[float, dict[str, tuple[float, int]]]:
    """onnxruntime's profile of ``path``: total and per op type, the sum of each node's median kernel ms."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.enable_profiling = True
    with tempfile.TemporaryDirectory(prefix="oarkit-profile-") as tmp:
        options.profile_file_prefix = str(Path(tmp) / "ort")
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        feed = {session.get_inputs()[0].name: x}
        for _ in range(runs):
            session.run(None, feed)
        events = json.loads(Path(session.end_profiling()).read_text())
    per_node: dict[str, list[float]] = collections.defaultdict(list)
    op_of: dict[str, str] = {}
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            per_node[event["name"]].append(event["dur"] / 1000)
            op_of[event["name"]] = event["args"]["op_name"]
    by_op: dict[str, list[float]] = collections.defaultdict(list)
    for node, times in per_node.items():
        by_op[op_of[node]].append(statistics.median(times[runs // 4:]))  # past the warm-up runs
    summary = {op: (sum(v), len(v)) for op, v in by_op.items()}
    return sum(t for t, _ in summary.values()), summary


def print_profile(name: str, folder: Path, x: torch.Tensor, threads: int) -> None:
    for fmt in ("onnx", "onnx_int8"):
        total, summary = ort_profile(folder / fmt / "model.onnx", x.numpy(), threads)
        print(f"  onnxruntime profile, {fmt} ({name}, {threads} thread(s)): {total:.2f} ms in kernels")
        for op, (ms, count) in sorted(summary.items(), key=lambda kv: -kv[1][0]):
            print(f"    {op:<24} {ms:7.3f} ms {100 * ms / total:5.1f} %  x{count}")


def bench(name: str, rounds: int, iters: int, threads: int, workdir: Path, profile: bool) -> dict[str, float]:
    source = export_source(name, pretrained=False)
    size = tuple(source.task.preprocessing["crop"])
    calib = TensorDataset(torch.randn(64, 3, *size), torch.zeros(64, dtype=torch.long))
    source.dataset = lambda root, split: calib
    folder = workdir / name.replace("/", "_")
    report = export(source, "onnx,openvino", quantize="int8", output_dir=folder, verify=False, calibration_images=64)
    failed = [f"{r.format}: {r.message}" for r in report.rows if r.status == "error"]
    if failed:
        raise SystemExit(f"{name}: export failed: {failed}")
    eager = source.task.deploy_spec(source.model).module.eval()
    backends = {
        "eager": lambda x: eager(x),
        "ort_fp32": DeployedModel(folder / "onnx", threads=threads),
        "ort_int8": DeployedModel(folder / "onnx_int8", threads=threads),
        "ov_f32": DeployedModel(folder / "openvino", threads=threads),
        "ov_default": DeployedModel(folder / "openvino", inference_precision="default", threads=threads),
        "ov_int8": DeployedModel(folder / "openvino_int8", threads=threads),
    }
    x = torch.randn(1, 3, *size)
    times: dict[str, list[float]] = {k: [] for k in backends}
    with torch.no_grad():
        for fn in backends.values():
            _time(fn, x, 3)  # warm-up
        for _ in range(rounds):
            for key, fn in backends.items():
                times[key].append(_time(fn, x, iters))
    med = {k: statistics.median(v) for k, v in times.items()}
    fp32, int8 = report.row("onnx").size_bytes, report.row("onnx_int8").size_bytes
    print(f"\n{name} @ {size[0]}x{size[1]}, batch 1, {threads} thread(s), median of {rounds} interleaved rounds x "
          f"{iters} runs (ms)")
    for key, value in med.items():
        spread = f"(rounds {min(times[key]):.2f}-{max(times[key]):.2f})"
        print(f"  {key:<11} {value:8.2f} ms {spread}")
    ratios = {"ort_fp32/eager": med["ort_fp32"] / med["eager"], "ort_int8/ort_fp32": med["ort_int8"] / med["ort_fp32"],
              "int8_size/fp32_size": int8 / fp32, "ov_f32/eager": med["ov_f32"] / med["eager"],
              "ov_default/ov_f32": med["ov_default"] / med["ov_f32"], "ov_int8/ov_f32": med["ov_int8"] / med["ov_f32"]}
    for key, value in ratios.items():
        goal = f"(goal <= {GOALS[key]}: {'met' if value <= GOALS[key] else 'missed'})" if key in GOALS else ""
        print(f"  {key:<20} {value:5.2f} {goal}")
    print(f"  sizes: fp32 {fp32 / 1e6:.2f} MB, int8 {int8 / 1e6:.2f} MB")
    if profile:
        print_profile(name, folder, x, threads)
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["clas/pp_lcnet_x1_0", "clas/resnet50_vd"])
    parser.add_argument("--threads", type=int, default=1, help="threads of every backend, torch included")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--profile", action="store_true", help="add onnxruntime's per-operator profile")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="oarkit-bench-") as tmp:
        for name in args.models:
            bench(name, args.rounds, args.iters, args.threads, Path(tmp), args.profile)


if __name__ == "__main__":
    main()
