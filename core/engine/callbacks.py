"""Callbacks: the ten events of the training loop, and the built-in loggers, progress bar and early stopping.

Callbacks observe the Trainer and steer it only through flags (``trainer.should_stop``); they run on the
main process alone unless they say otherwise.

When ``fit()`` fails (an error in a training step, in data loading or in evaluation, or Ctrl-C), the Trainer
calls :func:`handle_fit_exception` and re-raises: every callback gets ``on_exception`` to close its files, a
callback that fails in turn is logged and never masks the original error, and the error's message names the
last good checkpoint.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oarkit.core.engine.checkpoint import atomic_write_text, read_meta
from oarkit.core.errors import OarkitError, WeightsError

if TYPE_CHECKING:
    from oarkit.core.engine.trainer import Trainer

logger = logging.getLogger(__name__)


class Callback:
    """Base class; override the events you need. ``state_dict`` is saved with resumable checkpoints."""

    #: run on every rank, not only the main one (metric-independent bookkeeping such as early stopping)
    all_ranks: bool = False

    def on_fit_start(self, trainer: Trainer) -> None: ...
    def on_train_epoch_start(self, trainer: Trainer, epoch: int) -> None: ...
    def on_train_batch_end(self, trainer: Trainer, losses: dict[str, float], batch_idx: int) -> None: ...
    def on_optimizer_step(self, trainer: Trainer) -> None: ...
    def on_validation_start(self, trainer: Trainer) -> None: ...
    def on_validation_end(self, trainer: Trainer, metrics: dict[str, Any]) -> None: ...
    def on_train_epoch_end(self, trainer: Trainer, row: dict[str, Any]) -> None: ...
    def on_checkpoint(self, trainer: Trainer, path: Path) -> None: ...
    def on_fit_end(self, trainer: Trainer) -> None: ...

    def on_exception(self, trainer: Trainer, error: BaseException) -> None:
        """``fit()`` failed with ``error`` (then re-raised): release files and bars, write what is finished.

        Called instead of ``on_fit_end``. An exception raised here is logged at warning and then ignored.
        """

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class ProgressBar(Callback):
    """A tqdm bar over each epoch's batches with the running loss and learning rate."""

    def __init__(self) -> None:
        self.bar = None

    def on_train_epoch_start(self, trainer: Trainer, epoch: int) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=trainer.batches_per_epoch, desc=f"epoch {epoch + 1}/{trainer.max_epochs}",
                        leave=False, dynamic_ncols=True, mininterval=0.2 if sys.stderr.isatty() else 5.0)

    def on_train_batch_end(self, trainer: Trainer, losses: dict[str, float], batch_idx: int) -> None:
        if self.bar is not None:
            self.bar.update(1)
            if batch_idx % 5 == 0:
                self.bar.set_postfix(loss=f"{losses['loss']:.4f}", lr=f"{trainer.current_lr:.3g}", refresh=False)

    def on_train_epoch_end(self, trainer: Trainer, row: dict[str, Any]) -> None:
        self.close()

    def on_exception(self, trainer: Trainer, error: BaseException) -> None:
        self.close()

    def close(self) -> None:
        """Close the bar of the current epoch, if one is open."""
        if self.bar is not None:
            bar, self.bar = self.bar, None
            bar.close()


def scalar_items(row: dict[str, Any]) -> dict[str, float]:
    """The finite-or-not numbers of a history row (lists such as per-class accuracy are left out)."""
    return {k: float(v) for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


class ConsoleLogger(Callback):
    """One log line per epoch: losses, learning rate, validation metrics, time."""

    def on_train_epoch_end(self, trainer: Trainer, row: dict[str, Any]) -> None:
        items = scalar_items(row)
        epoch = int(items.pop("epoch"))
        text = "  ".join(f"{k}={v:.4g}" for k, v in items.items())
        logger.info("epoch %d/%d  %s", epoch, trainer.max_epochs, text)


class CSVLogger(Callback):
    """``metrics.csv`` in the run directory: one row per epoch, rewritten whole (and atomically) each epoch.

    No file stays open between epochs, so after a failure the CSV holds every finished epoch and nothing more.
    """

    def on_train_epoch_end(self, trainer: Trainer, row: dict[str, Any]) -> None:
        rows = [scalar_items(r) for r in trainer.history]
        columns = list(dict.fromkeys(k for r in rows for k in r))
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
        atomic_write_text(trainer.output_dir / "metrics.csv", buffer.getvalue())


class TensorBoardLogger(Callback):
    """TensorBoard scalars under ``<run>/tensorboard``: per-step loss and LR, per-epoch metrics."""

    def __init__(self, log_every: int = 10) -> None:
        self.log_every = log_every
        self.writer = None

    def on_fit_start(self, trainer: Trainer) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(trainer.output_dir / "tensorboard"), purge_step=trainer.global_step)

    def on_train_batch_end(self, trainer: Trainer, losses: dict[str, float], batch_idx: int) -> None:
        if self.writer is not None and batch_idx % self.log_every == 0:
            for k, v in losses.items():
                self.writer.add_scalar(f"train/{k}", v, trainer.global_step)
            self.writer.add_scalar("train/lr", trainer.current_lr, trainer.global_step)

    def on_train_epoch_end(self, trainer: Trainer, row: dict[str, Any]) -> None:
        if self.writer is not None:
            for k, v in scalar_items(row).items():
                if k != "epoch":
                    self.writer.add_scalar(f"epoch/{k}", v, int(row["epoch"]))
            self.writer.flush()

    def on_fit_end(self, trainer: Trainer) -> None:
        self.close()

    def on_exception(self, trainer: Trainer, error: BaseException) -> None:
        self.close()

    def close(self) -> None:
        """Flush and close the event file (``SummaryWriter.close`` flushes first)."""
        if self.writer is not None:
            writer, self.writer = self.writer, None
            writer.close()


class CurvesPlot(Callback):
    """``curves.png`` in the run directory at the end: the losses and the validation metrics per epoch."""

    def on_fit_end(self, trainer: Trainer) -> None:
        path = plot_curves(trainer.history, trainer.output_dir / "curves.png", trainer.main_indicator)
        if path is not None:
            trainer.artifacts["curves"] = str(path)


def plot_curves(history: list[dict[str, Any]], path: Path, main_indicator: str = "") -> Path | None:
    """Draw the loss and metric curves of a run's history into ``path``; ``None`` when there is no history."""
    rows = [scalar_items(r) for r in history]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = [r["epoch"] for r in rows]
    losses = [k for k in rows[-1] if k.startswith("train_")]
    metrics = [k for k in dict.fromkeys(k for r in rows for k in r) if k.startswith("val_")]
    fig, axes = plt.subplots(1, 2 if metrics else 1, figsize=(11 if metrics else 6, 4), squeeze=False)
    ax = axes[0][0]
    for k in losses:
        ax.plot(epochs, [r.get(k, math.nan) for r in rows], marker="o", ms=3, label=k.removeprefix("train_"))
    ax.set(title="training loss", xlabel="epoch", ylabel="loss")
    ax.grid(alpha=0.3)
    ax.legend()
    if metrics:
        ax = axes[0][1]
        for k in metrics:
            pts = [(r["epoch"], r[k]) for r in rows if k in r]
            width = 2.5 if k == f"val_{main_indicator}" else 1.2
            ax.plot(*zip(*pts), marker="o", ms=3, lw=width, label=k.removeprefix("val_"))
        ax.set(title="validation", xlabel="epoch")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


class StopAfter(Callback):
    """End this session after ``epochs`` epochs or ``minutes`` of wall time; the run stays resumable.

    For time-boxed jobs on shared or preemptible machines: ``--resume`` continues where it stopped.
    """

    all_ranks = True

    def __init__(self, epochs: int | None = None, minutes: float | None = None) -> None:
        if epochs is None and minutes is None:
            raise ValueError("StopAfter needs epochs or minutes")
        self.epochs, self.minutes = epochs, minutes
        self.done = 0
        self.started = 0.0

    def on_fit_start(self, trainer: Trainer) -> None:
        import time

        self.started, self.done = time.monotonic(), 0

    def on_train_epoch_end(self, trainer: Trainer, row: dict[str, Any]) -> None:
        import time

        self.done += 1
        over_time = self.minutes is not None and time.monotonic() - self.started >= 60 * self.minutes
        if (self.epochs is not None and self.done >= self.epochs) or over_time:
            logger.info("stopping after %d epoch(s) this session; continue with --resume", self.done)
            trainer.should_stop = True


class EarlyStopping(Callback):
    """Stop when the main validation indicator has not improved by ``min_delta`` for ``patience`` evaluations."""

    all_ranks = True

    def __init__(self, patience: int = 5, min_delta: float = 0.0) -> None:
        if patience < 1:
            raise ValueError(f"early stopping patience must be at least 1, got {patience}")
        self.patience = patience
        self.min_delta = min_delta
        self.best: float | None = None
        self.bad_evals = 0

    def on_validation_end(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        value = float(metrics[trainer.main_indicator])
        sign = 1.0 if trainer.higher_is_better else -1.0
        if self.best is None or sign * (value - self.best) > self.min_delta:
            self.best, self.bad_evals = value, 0
            return
        self.bad_evals += 1
        if self.bad_evals >= self.patience:
            logger.info("early stopping: %s has not improved on %.4g for %d evaluations",
                        trainer.main_indicator, self.best, self.patience)
            trainer.should_stop = True

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "bad_evals": self.bad_evals}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.best, self.bad_evals = state["best"], state["bad_evals"]
