"""Batch-1 latency of eager torch vs onnxruntime fp32 / int8 vs OpenVINO (f32 and its default precision).

    python bench/export_latency.py [--models clas/pp_lcnet_x1_0 clas/resnet50_vd] [--rounds 5] [--iters 20]

Models are built with random weights (no download) and exported through oarkit's pipeline; int8 is calibrated
on random images (latency and size do not depend on the calibration data). Backends run interleaved, round by
round, so that background load hits them alike; the median over rounds is reported with the goals:
ORT fp32 <= 0.7x eager, ORT int8 <= 0.5x ORT fp32, int8 file <= 0.27x fp32.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from torch.utils.data import TensorDataset  # noqa: E402

from oarkit.clas import export_source  # noqa: E402
from oarkit.core.deploy import DeployedModel  # noqa: E402
from oarkit.core.export import export  # noqa: E402


def _time(fn, x: torch.Tensor, iters: int) -> float:
    tic = time.perf_counter()
    for _ in range(iters):
        fn(x)
    return 1000 * (time.perf_counter() - tic) / iters


def bench(name: str, rounds: int, iters: int, workdir: Path) -> dict[str, float]:
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
        "ort_fp32": DeployedModel(folder / "onnx"),
        "ort_int8": DeployedModel(folder / "onnx_int8"),
        "ov_f32": DeployedModel(folder / "openvino"),
        "ov_default": DeployedModel(folder / "openvino", inference_precision="default"),
        "ov_int8": DeployedModel(folder / "openvino_int8"),
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
    print(f"\n{name} @ {size[0]}x{size[1]}, batch 1, median of {rounds} rounds x {iters} runs (ms)")
    for key, value in med.items():
        print(f"  {key:<11} {value:8.2f} ms")
    ratios = {"ort_fp32/eager": med["ort_fp32"] / med["eager"], "ort_int8/ort_fp32": med["ort_int8"] / med["ort_fp32"],
              "int8_size/fp32_size": int8 / fp32, "ov_f32/eager": med["ov_f32"] / med["eager"],
              "ov_default/ov_f32": med["ov_default"] / med["ov_f32"]}
    goals = {"ort_fp32/eager": 0.7, "ort_int8/ort_fp32": 0.5, "int8_size/fp32_size": 0.27}
    for key, value in ratios.items():
        goal = f"(goal <= {goals[key]})" if key in goals else ""
        print(f"  {key:<20} {value:5.2f} {goal}")
    print(f"  sizes: fp32 {fp32 / 1e6:.2f} MB, int8 {int8 / 1e6:.2f} MB")
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["clas/pp_lcnet_x1_0", "clas/resnet50_vd"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory(prefix="oarkit-bench-") as tmp:
        for name in args.models:
            bench(name, args.rounds, args.iters, Path(tmp))


if __name__ == "__main__":
    main()
