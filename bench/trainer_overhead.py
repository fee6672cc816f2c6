"""oarkit's Trainer against a hand-written PyTorch loop: same model, data, batch size, interleaved in one run.

    python bench/trainer_overhead.py [--rounds 5] [--model clas/pp_lcnet_x0_5] [--batch-size 64]

Each round times one training epoch of each (the Trainer with its progress bar, loss logging, LR schedule
and callbacks on), alternating which goes first, and reports images/s and the ratio Trainer / hand loop.
Goal: at least 0.97.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

import torch  # noqa: E402
from torch.utils.data import DataLoader, DistributedSampler  # noqa: E402

from oarkit.clas import ClassificationData, ClassificationTask, prepare_digits  # noqa: E402
from oarkit.core import Trainer  # noqa: E402
from oarkit.core.engine.schedule import WarmupLR  # noqa: E402


def hand_loop_epoch(model, loader, optimizer, scheduler, epoch: int) -> None:
    model.train()
    loader.sampler.set_epoch(epoch)
    for images, labels in loader:
        loss = torch.nn.functional.cross_entropy(model(images), labels, label_smoothing=0.1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--model", default="clas/pp_lcnet_x0_5")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "oarkit-bench-digits"))
    args = parser.parse_args()
    root = prepare_digits(args.data)
    opt = lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9)  # noqa: E731
    sched = lambda o, **kw: WarmupLR(o, warmup_epochs=1, **kw)  # noqa: E731
    data = ClassificationData(root=str(root), image_size=32, crop_pct=1.0, hflip=0.0, batch_size=args.batch_size)
    with tempfile.TemporaryDirectory() as run:
        trainer = Trainer(ClassificationTask(args.model, label_smoothing=0.1), data, output_dir=run,
                          max_epochs=2 * args.rounds + 2, optimizer=opt, scheduler=sched)
        trainer.setup()
        torch.manual_seed(0)
        hand_model = ClassificationTask(args.model).setup(data)
        hand_opt = opt(hand_model.parameters())
        hand_sched = WarmupLR(hand_opt, steps_per_epoch=trainer.batches_per_epoch, max_epochs=2 * args.rounds + 2,
                              warmup_epochs=1)
        dataset = data.train_dataset()
        hand_loader = DataLoader(dataset, batch_size=args.batch_size, drop_last=True,
                                 sampler=DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True, seed=0))
        images = trainer.batches_per_epoch * args.batch_size
        runs = {"oarkit Trainer": [], "hand loop": []}

        def timed(name, fn):
            tic = time.perf_counter()
            fn()
            runs[name].append(images / (time.perf_counter() - tic))

        trainer._emit("on_fit_start")
        hand_loop_epoch(hand_model, hand_loader, hand_opt, hand_sched, 0)  # warm-up both
        trainer.train_one_epoch(0)
        for r in range(1, args.rounds + 1):
            order = ["oarkit Trainer", "hand loop"] if r % 2 else ["hand loop", "oarkit Trainer"]
            for name in order:
                if name == "hand loop":
                    timed(name, lambda r=r: hand_loop_epoch(hand_model, hand_loader, hand_opt, hand_sched, r))
                else:
                    def epoch(r=r):
                        trainer._emit("on_train_epoch_start", r)
                        trainer.train_one_epoch(r)
                        trainer._emit("on_train_epoch_end", {"epoch": r + 1})
                    timed(name, epoch)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, model {args.model}, "
          f"batch {args.batch_size}, {trainer.batches_per_epoch} steps/epoch, {args.rounds} interleaved rounds")
    for name, values in runs.items():
        print(f"  {name:<15} median {statistics.median(values):8.1f} img/s   (rounds: "
              + ", ".join(f"{v:.0f}" for v in values) + ")")
    ratio = statistics.median(runs["oarkit Trainer"]) / statistics.median(runs["hand loop"])
    print(f"ratio Trainer / hand loop: {ratio:.3f}  (goal >= 0.97: {'met' if ratio >= 0.97 else 'NOT met'})")


if __name__ == "__main__":
    main()
