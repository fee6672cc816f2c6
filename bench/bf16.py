"""bf16 autocast against fp32: one training step of PP-LCNet x1.0 at 224, interleaved in one run.

    python bench/bf16.py [--models clas/pp_lcnet_x1_0 clas/resnet50_vd] [--batch-size 32] [--steps 4]

Uses the Trainer's own Precision (torch.amp autocast). Reports, per model, the median step time of each and
the speed-up fp32 time / bf16 time, then where the time goes: forward + backward of every convolution of the
model alone, depthwise / grouped against dense, in each dtype. Goal on this CPU (AVX512-BF16, AMX): at least
1.7x for PP-LCNet x1.0.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

import torch  # noqa: E402
from torch import nn  # noqa: E402

from oarkit.core import create_model  # noqa: E402
from oarkit.core.engine.precision import Precision  # noqa: E402


def step_speedup(name: str, args: argparse.Namespace) -> float:
    """Median fp32 step time / median bf16 step time of one model, blocks of steps interleaved."""
    torch.manual_seed(0)
    model = create_model(name, num_classes=1000).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(args.batch_size, 3, args.size, args.size)
    labels = torch.randint(0, 1000, (args.batch_size,))
    precisions = {p: Precision(p, torch.device("cpu")) for p in ("fp32", "bf16")}

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
    times = {p: [] for p in precisions}
    for i in range(args.rounds):
        for p in (("fp32", "bf16") if i % 2 == 0 else ("bf16", "fp32")):
            step(precisions[p])  # the first step after a switch is left out
            times[p] += [step(precisions[p]) for _ in range(args.steps)]
    print(f"{name}: batch {args.batch_size}, {args.size}x{args.size}, {args.rounds} interleaved blocks of "
          f"{args.steps} steps each")
    for p, t in times.items():
        print(f"  {p}: median {1000 * statistics.median(t):7.1f} ms/step  "
              f"({args.batch_size / statistics.median(t):6.1f} img/s)")
    speedup = statistics.median(times["fp32"]) / statistics.median(times["bf16"])
    print(f"  bf16 speed-up over fp32: {speedup:.2f}x")
    conv_breakdown(model, images)
    return speedup


def conv_breakdown(model: nn.Module, images: torch.Tensor) -> None:
    """Forward + backward of each of the model's convolutions alone, summed per kind and dtype."""
    inputs: list[tuple[nn.Conv2d, torch.Size]] = []
    hooks = [m.register_forward_hook(lambda m, i, o: inputs.append((m, i[0].shape)))
             for m in model.modules() if isinstance(m, nn.Conv2d)]
    with torch.no_grad():
        model(images)
    for h in hooks:
        h.remove()
    totals = {(kind, dt): 0.0 for kind in ("depthwise/grouped", "dense") for dt in ("fp32", "bf16")}
    for conv, shape in inputs:
        kind = "depthwise/grouped" if conv.groups > 1 else "dense"
        for dt, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
            layer = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                              conv.dilation, conv.groups, conv.bias is not None).to(dtype)
            x = torch.randn(shape, dtype=dtype, requires_grad=True)

            def once(layer: nn.Conv2d = layer, x: torch.Tensor = x) -> float:
                tic = time.perf_counter()
                layer(x).sum().backward()
                return time.perf_counter() - tic

            once()
            totals[kind, dt] += statistics.median(once() for _ in range(3))
    for kind in ("dense", "depthwise/grouped"):
        fp32, bf16 = totals[kind, "fp32"], totals[kind, "bf16"]
        if fp32:
            print(f"  {kind:<17} convs fwd+bwd: fp32 {1000 * fp32:6.1f} ms, bf16 {1000 * bf16:6.1f} ms "
                  f"({fp32 / bf16:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["clas/pp_lcnet_x1_0", "clas/resnet50_vd"],
                        help="the first one is held to the goal; the others are context")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--steps", type=int, default=4, help="timed steps per block")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved blocks of each precision")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}")
    speedups = [step_speedup(name, args) for name in args.models]
    goal = speedups[0]
    print(f"{args.models[0]} bf16 speed-up over fp32: {goal:.2f}x  (goal >= 1.7x: "
          f"{'met' if goal >= 1.7 else 'NOT met'})")


if __name__ == "__main__":
    main()
