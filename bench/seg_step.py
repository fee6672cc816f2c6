"""PP-LiteSeg STDC1 at 512x512: a training step (batch 2) and an eager forward (batch 1) in fp32 and bf16, and the
ONNX Runtime forward of its export.

    python bench/seg_step.py [--model seg/pp_liteseg_stdc1] [--size 512] [--steps 5] [--threads N]

The training step is the task's own (``SegmentationTask.training_step``: the three heads, cross-entropy) under
the Trainer's Precision; the forward is the eval-mode model; ONNX Runtime runs the ``onnx`` export of the core
exporters. Reports median times and the bf16 speed-up; threads are stated with the figures.
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

from oarkit.core.engine.precision import Precision  # noqa: E402
from oarkit.seg import SegmentationTask, export_source  # noqa: E402
from oarkit.seg.losses import CrossEntropyLoss  # noqa: E402


def median_s(fn, steps: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(steps):
        tic = time.perf_counter()
        fn()
        times.append(time.perf_counter() - tic)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="seg/pp_liteseg_stdc1")
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--classes", type=int, default=19)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch and ONNX Runtime threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    torch.manual_seed(0)
    source = export_source(args.model, pretrained=False)
    model = source.model
    task = SegmentationTask(args.model)
    task.losses = torch.nn.ModuleList([CrossEntropyLoss()])
    task.default_coefs = list(model.loss_coefs)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(2, 3, args.size, args.size)
    labels = torch.randint(0, args.classes, (2, args.size, args.size))
    rows = []
    for name in ("fp32", "bf16"):
        precision = Precision(name, torch.device("cpu"))

        def train_step(precision=precision) -> None:
            model.train()
            with precision.autocast():
                loss = task.training_step(model, (images, labels))["loss"]
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        def forward(precision=precision) -> None:
            model.eval()
            with torch.no_grad(), precision.autocast():
                model(images[:1])

        rows.append((name, median_s(train_step, args.steps), median_s(forward, args.steps)))

    from oarkit.core.deploy import DeployedModel
    from oarkit.core.export import export

    with tempfile.TemporaryDirectory() as tmp:
        spec_inputs = (torch.randn(1, 3, args.size, args.size),)
        report = export(source, "onnx", output_dir=tmp, verify=False, example_inputs=spec_inputs)
        if not report.ok:
            raise SystemExit(report.table())
        deployed = DeployedModel(Path(tmp) / "onnx", **({"threads": args.threads} if args.threads else {}))
        onnx_s = median_s(lambda: deployed(images[:1]), args.steps)

    print(f"{args.model} at {args.size}x{args.size}, torch {torch.__version__}, {threads} threads, "
          f"median of {args.steps} after 2 warm-up runs")
    print(f"{'precision':<10} {'train step (batch 2)':>22} {'eager forward (batch 1)':>25}")
    for name, train_s, fwd_s in rows:
        print(f"{name:<10} {train_s * 1000:>19.0f} ms {fwd_s * 1000:>22.0f} ms")
    (_, t32, f32), (_, t16, f16) = rows
    print(f"bf16 speed-up: train {t32 / t16:.2f}x, forward {f32 / f16:.2f}x")
    print(f"onnxruntime fp32 forward (batch 1): {onnx_s * 1000:.0f} ms ({f32 / onnx_s:.2f}x eager fp32)")


if __name__ == "__main__":
    main()
