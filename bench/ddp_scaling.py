"""Throughput of 1 vs 2 torchrun processes on the digits demo recipe (DDP on the CPU with gloo).

    python bench/ddp_scaling.py [--epochs 3]

Runs tools/train.py under torchrun with 1 and with 2 processes at the same global batch (64, so 32 per process
with 2), alternating, and reports training images per second from each run's metrics.csv (epoch time, the
first epoch left out as warm-up). torchrun sets OMP_NUM_THREADS=1 per process, so 1 process uses 1 core and
2 processes use 2: on a 2-core machine the comparison is 1 core vs 2 cores plus gloo's all-reduce.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "configs" / "clas" / "pp_lcnet_x0_5_digits_32x32.yaml"


def run(nproc: int, data: Path, out: Path, epochs: int, port: int) -> list[float]:
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}", "--nnodes=1",
           "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", str(ROOT / "tools" / "train.py"),
           "-c", str(RECIPE), f"data.root={data}", f"output_dir={out}", f"trainer.max_epochs={epochs}",
           f"data.batch_size={64 // nproc}", "trainer.progress=false", "trainer.tensorboard=false"]
    subprocess.run(cmd, check=True, capture_output=True, text=True, env={**os.environ, "NO_ALBUMENTATIONS_UPDATE": "1"})
    rows = list(csv.DictReader((out / "metrics.csv").read_text().splitlines()))
    return [float(r["epoch_time_s"]) for r in rows[1:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from oarkit.clas import prepare_digits

    with tempfile.TemporaryDirectory() as tmp:
        data = prepare_digits(Path(tmp) / "digits")
        images = 1437 + 360  # one epoch trains on the train split and evaluates the val split
        times: dict[int, list[float]] = {1: [], 2: []}
        for r in range(args.rounds):
            for nproc in ((1, 2) if r % 2 == 0 else (2, 1)):
                times[nproc] += run(nproc, data, Path(tmp) / f"run{nproc}_{r}", args.epochs, 29500 + 10 * r + nproc)
    print(f"digits recipe, global batch 64, {args.epochs} epochs x {args.rounds} rounds, {os.cpu_count()} CPUs")
    for nproc, t in times.items():
        print(f"  {nproc} process(es): median epoch {statistics.median(t):6.2f} s  "
              f"({images / statistics.median(t):7.1f} images/s, train + eval)")
    print(f"speed-up 2 vs 1 process: {statistics.median(times[1]) / statistics.median(times[2]):.2f}x")


if __name__ == "__main__":
    main()
