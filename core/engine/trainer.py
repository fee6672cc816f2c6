"""The Trainer: one kit-agnostic loop over a Task, counted in epochs or in iterations, with everything engineering
around it.

Mixed precision, gradient accumulation and clipping, EMA, evaluation every N epochs or iterations, best / last /
keep-N checkpoints, exact resume (mid-epoch too), a non-finite-loss guard and the loggers all live here; the model,
its losses and its metric are the task's.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import platform
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, SequentialSampler

from oarkit.core import distributed
from oarkit.core.data.seeds import sample_seed
from oarkit.core.engine import checkpoint as ckpt
from oarkit.core.engine.callbacks import (
    Callback,
    ConsoleLogger,
    CSVLogger,
    CurvesPlot,
    EarlyStopping,
    ProgressBar,
    TensorBoardLogger,
    handle_fit_exception,
)
from oarkit.core.engine.ema import ModelEMA
from oarkit.core.engine.evaluation import build_loader, move_to, run_evaluation
from oarkit.core.engine.precision import Precision
from oarkit.core.engine.seeding import rng_state, seed_everything, set_rng_state
from oarkit.core.engine.task import DataModule, Task
from oarkit.core.engine.time_budget import TimeBudget
from oarkit.core.errors import ConfigError, TrainingError

logger = logging.getLogger(__name__)

OptimizerFactory = Callable[[Iterable[Any]], torch.optim.Optimizer]
SchedulerFactory = Callable[..., torch.optim.lr_scheduler.LRScheduler]


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for dist in ("oarkit", "torch", "torchvision", "timm", "albumentations"):
        with contextlib.suppress(md.PackageNotFoundError):
            out[dist] = md.version(dist)
    return out


def parameter_groups(model: nn.Module, decay_norm_and_bias: bool) -> list[dict[str, Any]]:
    """Trainable parameters; biases and normalisation weights (1-d tensors) get no weight decay by default."""
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if decay_norm_and_bias:
        return [{"params": [p for _, p in params]}]
    decay = [p for _, p in params if p.ndim > 1]
    no_decay = [p for _, p in params if p.ndim <= 1]
    return [g for g in ({"params": decay}, {"params": no_decay, "weight_decay": 0.0}) if g["params"]]



def _restore_callbacks(callbacks: list[Callback], saved: dict[str, Any]) -> None:
    """Give each callback the state saved for it: the k-th callback of a class gets the k-th state saved under
    that class name (keys ``"<index>:<class>"``), so a run resumed with fewer or other extra callbacks (one that
    stopped it, say) still restores the task's and the config's callbacks."""
    by_class: dict[str, list[Any]] = {}
    for key in sorted(saved, key=lambda k: int(k.split(":", 1)[0])):
        by_class.setdefault(key.split(":", 1)[1], []).append(saved[key])
    for cb in callbacks:
        states = by_class.get(type(cb).__name__)
        if states:
            cb.load_state_dict(states.pop(0))


def fitted_epochs(target_steps: int, steps_per_epoch: int, cap: int | None = None) -> int:
    """The epochs that give about ``target_steps`` optimizer steps at ``steps_per_epoch`` (at least one, at most
    ``cap``)."""
    epochs = max(1, round(target_steps / max(1, steps_per_epoch)))
    return min(epochs, int(cap)) if cap is not None else epochs

class Trainer:
    """Train, evaluate and predict with a :class:`~oarkit.core.engine.task.Task` on a data module.

    Args:
        task: the kit's task (model, losses, metric).
        data: the kit's data module (datasets, batch size, workers).
        output_dir: the run directory (``best/``, ``last/``, logs, curves).
        max_epochs: epochs to train. Set this or ``max_iters``, not both (neither: 10 epochs).
        max_iters: optimizer steps to train (PaddleSeg's ``iters``): the run stops mid-epoch when they are done,
            whatever the dataset size. A history row (losses, LR, evaluation when due) and ``last/`` are written
            at every evaluation or checkpoint interval and at the end.
        target_steps: fit the number of epochs to the data: the epochs that give about this many optimizer steps
            (own-data recipes: a small set gets more epochs, a large one fewer), at most ``max_epochs`` when that
            is set too. Counts epochs; not with ``max_iters``.
        precision: ``fp32``, ``bf16``, ``fp16`` (autocast; a GradScaler for fp16 only) or ``auto`` (bf16 where the
            hardware computes it natively, fp32 elsewhere).
        optimizer: builds the optimizer from parameter groups (a ``_partial_`` config); AdamW(1e-3) if omitted.
        scheduler: builds the LR schedule as ``scheduler(optimizer, steps_per_epoch=, max_epochs=, total_steps=)``
            (``total_steps``: optimizer steps of the whole run).
        accumulate_grad_batches: batches whose gradients add up before each optimizer step.
        clip_grad_norm: clip the global gradient norm to this value (and stop on a non-finite norm).
        ema_decay: keep an EMA of the weights with this decay; it is what gets evaluated and saved.
        eval_every: evaluate every N epochs (and always after the last one); runs counted in epochs.
        eval_every_iters: evaluate (and checkpoint) every N iterations, and always at ``max_iters``; runs counted
            in iterations (PaddleSeg's ``save_interval``). ``None``: at the end only.
        checkpoint_every_iters: write ``last/`` every N iterations besides each evaluation; runs counted in
            iterations. ``None``: at each evaluation and at the end.
        keep_last: also keep the last N checkpoints' model directories under ``checkpoints/`` (0: none).
        early_stopping_patience: stop after this many evaluations without improvement (None: never).
        early_stopping_min_delta: the smallest change that counts as an improvement.
        early_stopping_start: the fraction of the run (its optimizer steps, of the LR schedule's length) before
            which early stopping never stops it: while the learning rate is still high, a few evaluations without
            progress say little (0: from the first evaluation).
        time_limit: train for this many minutes of wall-clock time (resumes included) instead of a fixed length,
            as Ultralytics' ``time=``: the run length is re-estimated from the measured pace (evaluations
            included), the LR schedule is stretched to it, and the run stops cleanly with an evaluation,
            ``best/`` and ``last/`` when the time is up. ``max_epochs`` / ``max_iters`` then only say whether the
            run counts epochs or iterations (and its length until the first estimate).
        seed: seed of every RNG, the shuffling order and the augmentations.
        deterministic: choose deterministic kernels (bit-exact resume on the CPU).
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        compile: run the model under ``torch.compile``.
        strategy: under torchrun, ``ddp`` (DistributedDataParallel) or ``fsdp`` (FSDP2 ``fully_shard``; bf16
            precision becomes its mixed-precision policy). ``data.batch_size`` is per process.
        sync_batchnorm: under torchrun on GPUs, synchronise BatchNorm statistics across processes.
        decay_norm_and_bias: apply weight decay to biases and norm weights too.
        log_every: steps between TensorBoard scalars.
        progress: show a progress bar.
        tensorboard: write TensorBoard logs.
        callbacks: extra callbacks.
        config: the resolved config, saved in each model directory.
        resume: continue from ``<output_dir>/last`` (``True``) or from the given ``last/`` directory.
    """

    def __init__(self, task: Task, data: DataModule, *, output_dir: str | Path = "runs/exp",
                 max_epochs: int | None = None, max_iters: int | None = None, target_steps: int | None = None,
                 precision: Literal["fp32", "bf16", "fp16", "auto"] = "fp32", optimizer: OptimizerFactory | None = None,
                 scheduler: SchedulerFactory | None = None, accumulate_grad_batches: int = 1,
                 clip_grad_norm: float | None = None, ema_decay: float | None = None, eval_every: int = 1,
                 eval_every_iters: int | None = None, checkpoint_every_iters: int | None = None,
                 keep_last: int = 0, early_stopping_patience: int | None = None,
                 early_stopping_min_delta: float = 0.0, early_stopping_start: float = 0.0,
                 time_limit: float | None = None, seed: int = 0,
                 deterministic: bool = False,
                 device: str = "auto", compile: bool = False, decay_norm_and_bias: bool = False,
                 log_every: int = 10, progress: bool = True, tensorboard: bool = True,
                 strategy: Literal["ddp", "fsdp"] = "ddp", sync_batchnorm: bool = False,
                 callbacks: Sequence[Callback] = (), config: Any = None, resume: bool | str | Path = False) -> None:
        if max_epochs is not None and max_iters is not None:
            raise ConfigError(f"trainer.max_epochs={max_epochs} and trainer.max_iters={max_iters} are both set; "
                              "exactly one of them sets the run length: add trainer.max_epochs=null (to count "
                              "iterations) or trainer.max_iters=null (to count epochs)")
        if max_iters is None:
            for key, value in (("eval_every_iters", eval_every_iters), ("checkpoint_every_iters",
                                                                          checkpoint_every_iters)):
                if value is not None:
                    raise ConfigError(f"trainer.{key}={value} counts iterations but this run counts epochs; set "
                                      f"trainer.max_iters (and trainer.max_epochs=null), or use trainer.eval_every "
                                      "(epochs)")
        if target_steps is not None and max_iters is not None:
            raise ConfigError(f"trainer.target_steps={target_steps} fits the epochs to the data but trainer.max_iters="
                              f"{max_iters} fixes the run in iterations; set one of them to null")
        #: the optimizer steps the epochs are fitted to (``target_steps``), or ``None``
        self.target_steps = None if target_steps is None else int(target_steps)
        self._epoch_cap = max_epochs if target_steps is not None else None
        if max_epochs is None and max_iters is None:
            max_epochs = 10
        minimums = {"max_epochs": (max_epochs, 1), "max_iters": (max_iters, 1), "target_steps": (target_steps, 1),
                    "accumulate_grad_batches": (accumulate_grad_batches, 1), "eval_every": (eval_every, 1),
                    "eval_every_iters": (eval_every_iters, 1), "checkpoint_every_iters": (checkpoint_every_iters, 1),
                    "keep_last": (keep_last, 0), "log_every": (log_every, 1)}
        for key, (value, low) in minimums.items():
            if value is None:
                continue
            if isinstance(value, bool) or int(value) != value or int(value) < low:
                raise ConfigError(f"trainer.{key} must be a whole number of at least {low}, got {value}")
        if clip_grad_norm is not None and clip_grad_norm <= 0:
            raise ConfigError(f"trainer.clip_grad_norm must be positive or null, got {clip_grad_norm}")
        if ema_decay is not None and not 0 < ema_decay < 1:
            raise ConfigError(f"trainer.ema_decay must lie in (0, 1) or be null, got {ema_decay}")
        if time_limit is not None and (isinstance(time_limit, bool) or not float(time_limit) > 0):
            raise ConfigError(f"trainer.time_limit is in minutes and must be positive or null, got {time_limit}")
        #: the wall-clock budget of ``time_limit``, or ``None``
        self.time_budget = TimeBudget(float(time_limit)) if time_limit is not None else None
        self._time_up = False
        self.task, self.data = task, data
        self.output_dir = Path(output_dir)
        #: the run length in iterations (optimizer steps), or ``None`` for a run counted in epochs
        self.max_iters = None if max_iters is None else int(max_iters)
        #: epochs to train; for a run counted in iterations, the epochs it spans (known once set up)
        self.max_epochs = None if max_epochs is None else int(max_epochs)
        self.eval_every_iters = None if eval_every_iters is None else int(eval_every_iters)
        self.checkpoint_every_iters = None if checkpoint_every_iters is None else int(checkpoint_every_iters)
        self.device = self._pick_device(device)
        self.precision = Precision(precision, self.device)
        self.optimizer_factory = optimizer or (lambda params: torch.optim.AdamW(params, lr=1e-3))
        self.scheduler_factory = scheduler
        self.accumulate = int(accumulate_grad_batches)
        self.clip_grad_norm = clip_grad_norm
        self.ema_decay = ema_decay
        self.eval_every = int(eval_every)
        self.keep_last = int(keep_last)
        self.seed, self.deterministic = int(seed), deterministic
        self.compile, self.decay_norm_and_bias = compile, decay_norm_and_bias
        self.config, self.resume = config, resume
        self.strategy, self.sync_batchnorm = strategy, sync_batchnorm
        self.dist = distributed.DistContext()
        self.callbacks: list[Callback] = [ConsoleLogger(), CSVLogger(), CurvesPlot()]
        if progress:
            self.callbacks.append(ProgressBar())
        if tensorboard:
            self.callbacks.append(TensorBoardLogger(log_every))
        if early_stopping_patience is not None:
            self.callbacks.append(EarlyStopping(early_stopping_patience, early_stopping_min_delta,
                                                start=early_stopping_start))
        self.callbacks.extend(callbacks)
        # Loop state: what a resumed run restores.
        self.epoch = 0
        self.start_epoch = 0
        self.global_step = 0
        self.best_metric: float | None = None
        self.best_rank: list[float] | None = None  # Metric.rank of the best result (main, then tie breaker)
        self.best_epoch: int | None = None
        self.best_iter: int | None = None
        self.history: list[dict[str, Any]] = []
        self.should_stop = False
        self.artifacts: dict[str, str] = {}
        self._is_setup = False
        # The history row in progress: loss sums and batches since the last row, and when it began.
        self._row_totals: dict[str, float] = defaultdict(float)
        self._row_batches = 0
        self._row_started = time.perf_counter()
        self._batches_done = 0  # batches of the current epoch done at the last row (the mid-epoch resume point)
        self._resume_batch = 0  # batches of the first epoch to skip after a mid-epoch resume

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_config(cls, config: Any, **overrides: Any) -> Trainer:
        """Build the task, data, optimizer, scheduler and callbacks a composed config names."""
        from oarkit.core.config import build_trainer

        return build_trainer(config, **overrides)

    @staticmethod
    def _pick_device(device: str) -> torch.device:
        if device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        try:
            dev = torch.device(device)
        except RuntimeError as err:
            raise ConfigError(f"trainer.device={device!r} is not a device; use auto, cpu, cuda or cuda:N") from err
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"trainer.device={device!r} but no CUDA device is available; use trainer.device=cpu")
        return dev

    @property
    def is_main(self) -> bool:
        """Whether this process logs, draws progress bars and writes the run directory (rank zero)."""
        return self.dist.is_main

    def setup(self) -> None:
        """Build the model, loaders, optimizer and schedule (once); restore the state when resuming."""
        if self._is_setup:
            return
        self.device = distributed.local_device(self.device)
        self.dist = distributed.context(self.device)
        distributed.check_strategy(self.strategy, self.dist, sync_batchnorm=self.sync_batchnorm,
                                   ema=bool(self.ema_decay), device=self.device)
        seed_everything(self.seed, deterministic=self.deterministic)
        self.model = self.task.setup(self.data).to(self.device)
        self.callbacks.extend(self.task.callbacks())
        if self.dist.enabled:  # same initial weights on every rank, different dropout and augmentation streams
            torch.manual_seed(self.seed + self.dist.rank)
        self.metric_template = self.task.build_metric()
        self.main_indicator = self.metric_template.main_indicator
        self.higher_is_better = self.metric_template.higher_is_better
        self.train_loader = self._loader(self.data.train_dataset(), train=True)
        val = self.data.val_dataset()
        self.val_loader = self._loader(val, train=False) if val is not None else None
        self.batches_per_epoch = len(self.train_loader)
        steps_per_epoch = self.steps_per_epoch = math.ceil(self.batches_per_epoch / self.accumulate)
        if self.max_iters is not None:  # the epochs a run counted in iterations spans (progress bars, logs)
            self.max_epochs = math.ceil(self.max_iters / steps_per_epoch)
        if self.target_steps is not None:
            self.max_epochs = fitted_epochs(self.target_steps, steps_per_epoch, self._epoch_cap)
            logger.info("trainer.target_steps=%d: %d optimizer steps per epoch, so %d epochs", self.target_steps,
                        steps_per_epoch, self.max_epochs)
        total_steps = self.max_iters if self.max_iters is not None else steps_per_epoch * self.max_epochs
        self.ema = ModelEMA(self.model, self.ema_decay) if self.ema_decay else None
        wrapped = distributed.wrap_model(self.model, self.dist, strategy=self.strategy, precision=self.precision.name,
                                         sync_batchnorm=self.sync_batchnorm, device=self.device)
        self.model = getattr(wrapped, "module", wrapped)  # DDP wraps; FSDP2 shards in place
        groups = (self.task.parameter_groups(self.model, decay_norm_and_bias=self.decay_norm_and_bias)
                  or parameter_groups(self.model, self.decay_norm_and_bias))
        self.optimizer = self.optimizer_factory(groups)
        for group in self.optimizer.param_groups:
            group["lr"] = group["lr"] * group.pop("lr_scale", 1.0)
        self.scheduler = (self.scheduler_factory(self.optimizer, steps_per_epoch=steps_per_epoch,
                                                 max_epochs=self.max_epochs, total_steps=total_steps)
                          if self.scheduler_factory else None)
        self.train_model = torch.compile(wrapped) if self.compile else wrapped
        self._is_setup = True
        restarted = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0
        if not self.resume and restarted and (self.output_dir / "last").exists():
            logger.info("torchrun restarted the workers: resuming from %s", self.output_dir / "last")
            self.resume = True
        if self.resume:
            self._restore(self.output_dir / "last" if self.resume is True else Path(self.resume))

    def _loader(self, dataset: Any, *, train: bool) -> DataLoader:
        world, rank = self.dist.world_size, self.dist.rank
        if train:
            # Shuffling depends only on (seed, epoch); each rank takes every world-th sample of the permutation.
            sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=self.seed)
            batch = int(self.data.batch_size)
        else:
            sampler = distributed.ShardSampler(len(dataset), rank, world) if world > 1 else SequentialSampler(dataset)
            batch = int(self.data.eval_batch_size or self.data.batch_size)
        return build_loader(dataset, self.data, self.task, train=train, batch_size=batch, sampler=sampler,
                            num_workers=int(self.data.num_workers), pin_memory=self.device.type == "cuda")

    # ----------------------------------------------------------------- the loop
    @property
    def current_lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    @property
    def eval_model(self) -> nn.Module:
        """The weights that are evaluated and saved: the EMA copy when EMA is on."""
        return self.ema.module if self.ema is not None else self.model

    def _emit(self, event: str, *args: Any) -> None:
        for cb in self.callbacks:
            if self.is_main or cb.all_ranks:
                getattr(cb, event)(self, *args)

    def fit(self) -> dict[str, Any]:
        """Train for the remaining epochs or iterations; returns a summary (best metric, directories, curves)."""
        self.setup()
        started = self._row_started = time.perf_counter()
        if self.is_main:
            self.output_dir.mkdir(parents=True, exist_ok=True)
        self._emit("on_fit_start")
        if self.time_budget is not None:
            self.time_budget.start(self.global_step)
            logger.info("trainer.time_limit: %.1f of %.1f minutes left; the run length follows the measured pace",
                        self.time_budget.left / 60, self.time_budget.seconds / 60)
        try:
            epoch = self.start_epoch
            while not self._finished(epoch):
                self.epoch = epoch
                self._run_epoch(epoch)
                if self.should_stop or self._time_up:
                    break
                epoch += 1
        except BaseException as err:
            # Callbacks close their files (one that fails is logged, never masks err); err names last/.
            handle_fit_exception(self, err)
            raise
        if self.is_main and getattr(self, "last_metric", None) is not None:
            for i, path in enumerate(self.task.plot_metric(self.last_metric, str(self.output_dir))):
                self.artifacts[f"plot_{i}" if i else "metric_plot"] = path
        self._emit("on_fit_end")
        return self.summary(time.perf_counter() - started)

    def _finished(self, epoch: int) -> bool:
        """Whether the run is complete before ``epoch`` (``max_iters`` steps done, or ``max_epochs`` epochs)."""
        if self.time_budget is not None and self.time_budget.left <= 0:
            return True
        if self.max_iters is not None:
            return self.global_step >= self.max_iters
        return epoch >= self.max_epochs

    def _run_epoch(self, epoch: int) -> None:
        """One epoch (its rest after a mid-epoch resume). A run counted in epochs closes a history row at its end
        (evaluation when due, checkpoints); one counted in iterations closes rows at its intervals."""
        self._emit("on_train_epoch_start", epoch)
        self.train_one_epoch(epoch)
        if self.max_iters is None:
            due = (epoch + 1) % self.eval_every == 0 or epoch + 1 == self.max_epochs or self._time_up
            self._end_row(epoch, evaluate=self.val_loader is not None and due)

    def _row_due(self) -> tuple[bool, bool]:
        """After an optimizer step of a run counted in iterations: ``(close a row, evaluate in it)``."""
        step, last = self.global_step, self.global_step >= self.max_iters or self._time_up
        at_eval = self.eval_every_iters is not None and step % self.eval_every_iters == 0
        at_checkpoint = self.checkpoint_every_iters is not None and step % self.checkpoint_every_iters == 0
        return last or at_eval or at_checkpoint, self.val_loader is not None and (last or at_eval)

    def _end_row(self, epoch: int, *, evaluate: bool) -> None:
        """Close a history row: the mean losses since the last row, the LR, the metric when ``evaluate``, then
        the checkpoints (every row writes ``last/``) and ``on_train_epoch_end`` with the row."""
        if self.dist.enabled:  # one set of BatchNorm statistics, evaluated and saved alike by every rank
            with torch.no_grad():
                for module in (self.model, *([self.ema.module] if self.ema is not None else [])):
                    distributed.average_buffers(module, self.device)
        means = {k: v / max(1, self._row_batches) for k, v in self._row_totals.items()}
        row: dict[str, Any] = {"epoch": epoch + 1, "iter": self.global_step,
                               **{f"train_{k}": v for k, v in means.items()}, "lr": self.current_lr}
        metrics = None
        if evaluate:
            clock = self.time_budget.clock if self.time_budget is not None else time.perf_counter
            eval_started = clock()
            metrics = self.evaluate()
            row.update({f"val_{k}": v for k, v in metrics.items()})
            if self.time_budget is not None:
                self.time_budget.record_evaluation(clock() - eval_started)
        row["epoch_time_s" if self.max_iters is None else "interval_time_s"] = time.perf_counter() - self._row_started
        self.history.append(row)
        self._save_checkpoints(epoch, metrics)
        self._row_totals, self._row_batches = defaultdict(float), 0
        self._row_started = time.perf_counter()
        self._emit("on_train_epoch_end", row)
        if self.time_budget is not None and not self._time_up:
            self._fit_to_time_budget()

    def train_one_epoch(self, epoch: int) -> dict[str, float]:
        """One pass over the training set: the rest of it after a mid-epoch resume, and in a run counted in
        iterations no further than ``max_iters``, closing a history row at every interval.

        Returns:
            The mean of each loss over the batches since the last history row.
        """
        self.model.train()
        for sampler in (self.train_loader.index_sampler, self.train_loader.batch_sampler):
            if hasattr(sampler, "set_epoch"):
                sampler.set_epoch(epoch)
        if hasattr(self.train_loader.dataset, "set_epoch"):
            self.train_loader.dataset.set_epoch(epoch)
        # Loader workers are seeded from (seed, epoch, rank), not from the global RNG: making the iterator leaves
        # the global RNG (dropout) alone, so a run resumed mid-epoch draws what the uninterrupted run drew.
        self.train_loader.generator = torch.Generator().manual_seed(sample_seed(self.seed, epoch, self.dist.rank))
        start, self._resume_batch = self._resume_batch, 0
        if hasattr(self.train_loader.batch_sampler, "skip"):  # the order depends on (seed, epoch) only
            self.train_loader.batch_sampler.skip(start)
        n = len(self.train_loader)
        for i, batch in enumerate(self.train_loader, start=start):
            batch = move_to(batch, self.device)
            step_now = (i + 1) % self.accumulate == 0 or i + 1 == n
            with distributed.gradient_sync(self.train_model, step_now):
                with self.precision.autocast():
                    losses = self.task.training_step(self.train_model, batch)
                if "loss" not in losses:
                    raise TrainingError(f"{type(self.task).__name__}.training_step returned {sorted(losses)}: "
                                        "it must return the total as 'loss'")
                values = self._mean_over_ranks(losses)
                if not math.isfinite(values["loss"]):
                    self._non_finite(epoch, i, f"loss is {values['loss']}")
                self.precision.scaler.scale(losses["loss"] / self.accumulate).backward()
            if step_now:
                self._optimizer_step(epoch, i)
                if self.time_budget is not None:
                    self._check_time_budget()
            for k, v in values.items():
                self._row_totals[k] += v
            self._row_batches += 1
            self._batches_done = i + 1
            self._emit("on_train_batch_end", values, i)
            if step_now and self.max_iters is not None:
                save, evaluate = self._row_due()
                if save:
                    self._end_row(epoch, evaluate=evaluate)
                if self.global_step >= self.max_iters or self.should_stop or self._time_up:
                    break
            elif step_now and self._time_up:
                break
        return {k: v / max(1, self._row_batches) for k, v in self._row_totals.items()}

    def _mean_over_ranks(self, losses: dict[str, torch.Tensor]) -> dict[str, float]:
        """Loss values as floats, averaged over ranks (so every rank sees, logs and guards the same numbers)."""
        stacked = torch.stack([v.detach().float().reshape(()) for v in losses.values()])
        if self.dist.enabled:
            stacked = distributed.all_reduce_sum(stacked, self.device) / self.dist.world_size
        return dict(zip(losses, stacked.tolist()))

    # ----------------------------------------------------------------- the time budget
    def _check_time_budget(self) -> None:
        """After an optimizer step: stop when the time is up; re-estimate the run length now and then."""
        budget = self.time_budget
        expired, refit = float(budget.expired()), float(budget.refit_due())
        if self.dist.enabled:  # every rank stops at the same step and fits the same length
            flags = distributed.all_reduce_sum(torch.tensor([expired, refit]), self.device)
            expired, refit = float(flags[0] > 0), float(flags[1] > 0)
        if expired:
            if not self._time_up:
                logger.info("trainer.time_limit: %.1f minutes used at step %d; stopping with an evaluation",
                            budget.used / 60, self.global_step)
            self._time_up = True
        elif refit:
            self._fit_to_time_budget()

    def _fit_to_time_budget(self) -> None:
        """Set the run length (epochs or iterations) and the LR schedule to what the measured pace fits."""
        budget = self.time_budget
        fitted = budget.fitted_steps(self.global_step)
        if self.dist.enabled:
            value = torch.tensor([float(fitted or 0)])
            fitted = int(distributed.all_reduce_sum(value, self.device).item() / self.dist.world_size) or None
        if fitted is None:
            return
        if self.max_iters is not None:
            self.max_iters = fitted
            self.max_epochs = math.ceil(fitted / self.steps_per_epoch)
            total = fitted
        else:  # the last epoch may be partial: the time stop ends it, with an evaluation
            self.max_epochs = max(self.epoch + 1, math.ceil(fitted / self.steps_per_epoch))
            total = fitted
        budget.stretch(self.scheduler, total)
        logger.debug("trainer.time_limit: run length fitted to %d steps (%d epochs)", total, self.max_epochs)

    def _optimizer_step(self, epoch: int, batch_idx: int) -> None:
        scaler = self.precision.scaler
        if self.clip_grad_norm is not None:
            scaler.unscale_(self.optimizer)
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_grad_norm)
            # Under fp16 an overflow is routine (the scaler skips the step); elsewhere it means divergence.
            if not scaler.is_enabled() and not torch.isfinite(norm):
                self._non_finite(epoch, batch_idx, f"gradient norm is {float(norm)}")
        scaler.step(self.optimizer)
        scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        if self.scheduler is not None:
            self.scheduler.step()
        if self.ema is not None:
            self.ema.update(self.model)
        self.global_step += 1
        self._emit("on_optimizer_step")

    def _non_finite(self, epoch: int, batch_idx: int, what: str) -> None:
        last = self.output_dir / "last"
        kept = "no checkpoint was written yet"
        if self.history:
            row = self.history[-1]
            where = f"epoch {row['epoch']}" + (f", iteration {row['iter']}" if self.max_iters is not None else "")
            kept = f"the last good checkpoint is {last} ({where})"
        raise TrainingError(f"training stopped at epoch {epoch + 1}, batch {batch_idx + 1}: the {what}; {kept}. "
                            "Lower the learning rate, set trainer.clip_grad_norm (e.g. 1.0), or use "
                            "trainer.precision=bf16 instead of fp16.")

    def evaluate(self, loader: DataLoader | None = None) -> dict[str, Any]:
        """The task metric of the evaluated weights (EMA when on) over ``loader`` (the validation set)."""
        self.setup()
        loader = loader or self.val_loader
        if loader is None:
            raise ConfigError("there is no validation set to evaluate on; give the data module a val split")
        self._emit("on_validation_start")
        results, self.last_metric = run_evaluation(self.task, self.eval_model, loader, device=self.device,
                                                   autocast=self.precision.autocast, synchronize=self._synchronize)
        self._emit("on_validation_end", results)
        return results

    def _synchronize(self, metric: Any) -> None:
        """Sum the metric's tensors and gather its per-sample results across ranks (a no-op in one process)."""
        if self.dist.enabled:
            metric.synchronize(lambda t: distributed.all_reduce_sum(t, self.device), distributed.all_gather_objects)

    def predict(self, inputs: Any, **kwargs: Any) -> Any:
        """Run the kit's predictor on the evaluated weights (paths, arrays, images, texts or lists of them)."""
        self.setup()
        return self.task.predictor(self.eval_model, **kwargs)(inputs)

    # ----------------------------------------------------------------- checkpoints
    def _meta(self, epoch: int, metrics: dict[str, Any] | None) -> dict[str, Any]:
        model = self.model
        return {
            "task": self.task.task_id,
            "model": {"name": getattr(model, "oarkit_name", None), "kwargs": getattr(model, "oarkit_kwargs", {})},
            "epoch": epoch + 1,
            "global_step": self.global_step,
            "weights": "ema" if self.ema is not None else "model",
            "main_indicator": self.main_indicator,
            "metrics": {k: v for k, v in (metrics or {}).items() if isinstance(v, (int, float))},
            **self.task.meta(),
            "versions": _versions(),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }

    def _config_yaml(self) -> str:
        from omegaconf import OmegaConf

        if self.config is not None:
            return OmegaConf.to_yaml(self.config, resolve=True)
        length = {"max_iters": self.max_iters} if self.max_iters is not None else {"max_epochs": self.max_epochs}
        return OmegaConf.to_yaml({"output_dir": str(self.output_dir), "trainer": {
            **length, "precision": self.precision.name, "seed": self.seed}})

    @property
    def run_fraction(self) -> float:
        """How far the run is, as optimizer steps done over the run's length (the LR schedule's, stretched by
        ``time_limit``; else ``max_iters`` or the epochs' steps)."""
        total = self._schedule_total() or self.max_iters or (self.steps_per_epoch * self.max_epochs)
        return self.global_step / total if total else 0.0

    def _schedule_total(self) -> int | None:
        """The LR schedule's current length in steps, when it is a stretchable WarmupLR."""
        factors = getattr(self.scheduler, "lr_lambdas", None) or []
        return next((int(f.total) for f in factors if hasattr(f, "total")), None)

    def _train_state(self) -> dict[str, Any]:
        # Where to go on: the next epoch, or within this one after the batches done (its order is (seed, epoch)'s).
        mid_epoch = 0 < self._batches_done < self.batches_per_epoch
        state = {
            "epoch": self.epoch if mid_epoch else self.epoch + 1,
            "batches_done": self._batches_done if mid_epoch else 0,
            "global_step": self.global_step,
            "best_metric": self.best_metric,
            "best_rank": self.best_rank,
            "best_epoch": self.best_epoch,
            "best_iter": self.best_iter,
            "history": self.history,
            "optimizer": distributed.full_optimizer_state(self.model, self.optimizer),
            "scheduler": self.scheduler.state_dict() if self.scheduler else None,
            "scaler": self.precision.scaler.state_dict(),
            "rng": distributed.all_gather_objects(rng_state()),  # one per rank
            "callbacks": {f"{i}:{type(cb).__name__}": cb.state_dict() for i, cb in enumerate(self.callbacks)},
        }
        if self.time_budget is not None:
            state["time_budget"] = {**self.time_budget.state_dict(), "max_iters": self.max_iters,
                                    "max_epochs": self.max_epochs, "total_steps": self._schedule_total()}
        if self.ema is not None:
            state["ema_updates"] = self.ema.updates
            state["model"] = distributed.full_model_state(self.model)  # raw weights; model.safetensors has the EMA
        return state

    def _save_checkpoints(self, epoch: int, metrics: dict[str, Any] | None) -> None:
        improved = False
        if metrics is not None:
            rank = self.metric_template.rank(metrics)
            improved = self.best_rank is None or rank > self.best_rank
            if improved:
                self.best_metric, self.best_rank, self.best_epoch = float(metrics[self.main_indicator]), rank, epoch + 1
                self.best_iter = self.global_step
        # Gathering is collective (FSDP shards, per-rank RNG): every rank takes part, rank zero writes.
        weights = distributed.full_model_state(self.eval_model)
        train_state = self._train_state()
        if not self.is_main:
            distributed.barrier()
            return
        meta, config = self._meta(epoch, metrics), self._config_yaml()
        if improved or (self.val_loader is None):
            self._emit("on_checkpoint", ckpt.write_model_dir(self.output_dir / "best", weights=weights, meta=meta,
                                                               config_yaml=config))
        if self.keep_last:
            kept = self.output_dir / "checkpoints"
            kept.mkdir(exist_ok=True)
            prefix = "epoch_" if self.max_iters is None else "iter_"
            name = f"epoch_{epoch + 1:04d}" if self.max_iters is None else f"iter_{self.global_step:07d}"
            ckpt.write_model_dir(kept / name, weights=weights, meta=meta, config_yaml=config)
            for old in sorted(p for p in kept.iterdir() if p.name.startswith(prefix))[:-self.keep_last]:
                shutil.rmtree(old)
        # last/ goes last: when it names step N, everything of step N is on disk.
        self._emit("on_checkpoint", ckpt.write_model_dir(self.output_dir / "last", weights=weights, meta=meta,
                                                           config_yaml=config, train_state=train_state))
        distributed.barrier()

    def _restore(self, last: Path) -> None:
        from oarkit.core.hub import load_state_dict, read_state_dict

        last = ckpt.resolve_dir(last)
        state = ckpt.read_train_state(last)
        weights = read_state_dict(last / ckpt.MODEL_FILE)
        raw = state.get("model", weights)
        if not distributed.is_sharded(self.model):
            load_state_dict(self.model, raw, source=str(last))  # checks names and shapes with a clear message
        distributed.load_full_state(self.model, self.optimizer, raw, state["optimizer"])
        if self.ema is not None:
            self.ema.module.load_state_dict(weights)
            self.ema.updates = int(state.get("ema_updates", 0))
        if self.scheduler is not None and state["scheduler"] is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        self.precision.scaler.load_state_dict(state["scaler"])
        _restore_callbacks(self.callbacks, state["callbacks"])
        self.start_epoch = self.epoch = int(state["epoch"])
        self._resume_batch = self._batches_done = int(state.get("batches_done", 0))
        self.global_step = int(state["global_step"])
        self.best_metric, self.best_epoch = state["best_metric"], state["best_epoch"]
        self.best_iter = state.get("best_iter")
        self.best_rank = state.get("best_rank") or (
            None if self.best_metric is None else self.metric_template.rank({self.main_indicator: self.best_metric}))
        self.history = list(state["history"])
        if self.time_budget is not None and state.get("time_budget"):
            fitted = state["time_budget"]
            self.time_budget.load_state_dict(fitted)
            if self.max_iters is not None and fitted.get("max_iters"):
                self.max_iters = int(fitted["max_iters"])
            if self.max_iters is None and fitted.get("max_epochs"):
                self.max_epochs = int(fitted["max_epochs"])
            if fitted.get("total_steps"):
                self.time_budget.stretch(self.scheduler, int(fitted["total_steps"]))
        rngs = state["rng"]
        if len(rngs) == self.dist.world_size:
            set_rng_state(rngs[self.dist.rank])
        else:  # another world size: fresh, still deterministic, streams per rank
            logger.info("resuming with %d processes instead of %d", self.dist.world_size, len(rngs))
            seed_everything(self.seed + 1000 * self.start_epoch + self.dist.rank)
        logger.info("resumed from %s at epoch %d%s (step %d)", last, self.start_epoch + (self._resume_batch > 0),
                    f", batch {self._resume_batch + 1}" if self._resume_batch else "", self.global_step)
        if self._finished(self.start_epoch):
            length = (f"{self.max_iters} iterations; raise trainer.max_iters" if self.max_iters is not None
                      else f"{self.max_epochs} epochs; raise trainer.max_epochs")
            logger.info("the run already finished its %s to train on", length)

    def summary(self, wall_s: float | None = None) -> dict[str, Any]:
        """What the run produced: best metric and epoch, the directories, the curves PNG."""
        out = {
            "main_indicator": self.main_indicator,
            "best_metric": self.best_metric,
            "best_epoch": self.best_epoch,
            "epochs_run": int(self.history[-1]["epoch"]) if self.history else 0,
            **({"best_iter": self.best_iter, "iters_run": self.global_step} if self.max_iters is not None else {}),
            "output_dir": str(self.output_dir),
            "best_dir": str(self.output_dir / "best"),
            "last_dir": str(self.output_dir / "last"),
            **self.artifacts,
        }
        if wall_s is not None:
            out["wall_s"] = round(wall_s, 2)
        return out
