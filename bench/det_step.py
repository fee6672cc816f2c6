"""PP-YOLOE+-s at 640: a training step (batch 2) and an eager forward with decode and NMS (batch 1) in fp32 and
bf16, and ONNX Runtime on the exported graph with NMS inside (batch 1).

    python bench/det_step.py [--model det/ppyoloe_plus_crn_s] [--size 640] [--threads 2] [--steps 5]

Prints one line per measurement: the median wall time of ``--steps`` runs after two warm-up runs, with the thread
count of torch and of onnxruntime stated. Run it on an idle machine: on a shared one OpenMP threads spin and the
numbers say more about the neighbours than about the model.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

import torch  # noqa: E402

from oarkit.core import create_model  # noqa: E402
from oarkit.core.engine.precision import Precision  # noqa: E402
from oarkit.det.export_graph import DetectionExport  # noqa: E402
from oarkit.det.postprocess import NMSConfig  # noqa: E402


def median_ms(fn: Callable[[], object], steps: int) -> float:
    for _ in range(2):
        fn()
    times = []
    for _ in range(steps):
        tic = time.perf_counter()
        fn()
        times.append(time.perf_counter() - tic)
    return 1000 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="det/ppyoloe_plus_crn_s")
    parser.add_argument("--size", type=int, default=640)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = create_model(args.model, num_classes=80)
    nms = NMSConfig(score_threshold=0.01, iou_threshold=0.7, max_detections=300)
    s = args.size
    images = torch.randn(2, 3, s, s)
    targets = [{"boxes": torch.tensor([[0.1, 0.1, 0.4, 0.5], [0.5, 0.3, 0.9, 0.8]]) * s,
                "labels": torch.tensor([3, 17])} for _ in range(2)]
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    print(f"{args.model} at {s}x{s}, torch {torch.__version__}, {args.threads} intra-op threads")
    for name in ("fp32", "bf16"):
        precision = Precision(name, torch.device("cpu"))

        def train_step(precision: Precision = precision) -> None:
            model.train()
            with precision.autocast():
                loss = model(images, targets)["loss"]
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        print(f"train step, batch 2, {name}: {median_ms(train_step, args.steps):.0f} ms")
    wrapper = DetectionExport(model.eval(), nms).eval()
    one = images[:1]
    for name in ("fp32", "bf16"):
        precision = Precision(name, torch.device("cpu"))

        @torch.no_grad()
        def forward(precision: Precision = precision) -> None:
            with precision.autocast():
                wrapper(one)

        print(f"eager forward + decode + NMS, batch 1, {name}: {median_ms(forward, args.steps):.0f} ms")
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "det.onnx"
        if hasattr(model, "reparameterize"):
            model.reparameterize()
        torch.onnx.export(wrapper, (one,), path, dynamo=True, external_data=False, input_names=["images"],
                          output_names=["boxes", "scores", "labels", "num"])
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        feed = {"images": one.numpy()}
        ms = median_ms(lambda: session.run(None, feed), args.steps)
        print(f"onnxruntime {ort.__version__} forward with NMS, batch 1, fp32, {args.threads} threads: {ms:.0f} ms")


if __name__ == "__main__":
    main()
