"""bf16 autocast against fp32: one training step of PP-LCNet x1.0 at 224, interleaved in one run.

    python bench/bf16.py [--model clas/pp_lcnet_x1_0] [--batch-size 32] [--steps 4] [--rounds 3]

Uses the Trainer's own Precision (torch.amp autocast). Reports the median step time of each and the speed-up
fp32 time / bf16 time. Goal on this CPU (AVX512-BF16): at least 1.7x.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

import torch  # noqa: E402

from oarkit.core import create_model  # noqa: E402
from oarkit.core.engine.precision import Precision  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="clas/pp_lcnet_x1_0")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--steps", type=int, default=4, help="timed steps per block")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved blocks of each precision")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = create_model(args.model, num_classes=1000).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(args.batch_size, 3, args.size, args.size)
    labels = torch.randint(0, 1000, (args.batch_size,))
    device = torch.device("cpu")
    precisions = {name: Precision(name, device) for name in ("fp32", "bf16")}

    def step(precision: Precision) -> float:
        tic = time.perf_counter()
        with precision.autocast():
            loss = torch.nn.functional.cross_entropy(model(images).float(), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return time.perf_counter() - tic

    for p in precisions.values():  # warm-up: first calls pick kernels
        step(p)
        step(p)
    # Interleave blocks of steps (not single steps): switching precision every step defeats oneDNN's
    # primitive cache and would measure the switch, not either precision.
    times = {name: [] for name in precisions}
    for i in range(args.rounds):
        for name in (("fp32", "bf16") if i % 2 == 0 else ("bf16", "fp32")):
            step(precisions[name])  # the first step after a switch is left out
            times[name] += [step(precisions[name]) for _ in range(args.steps)]
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, {args.model}, batch {args.batch_size}, "
          f"{args.size}x{args.size}, {args.rounds} interleaved blocks of {args.steps} steps each")
    for name, t in times.items():
        print(f"  {name}: median {1000 * statistics.median(t):7.1f} ms/step  "
              f"({args.batch_size / statistics.median(t):6.1f} img/s)")
    speedup = statistics.median(times["fp32"]) / statistics.median(times["bf16"])
    print(f"bf16 speed-up over fp32: {speedup:.2f}x  (goal >= 1.7x: {'met' if speedup >= 1.7 else 'NOT met'})")


if __name__ == "__main__":
    main()
