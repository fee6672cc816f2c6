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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oarkit.core.engine.checkpoint import atomic_write_text, read_meta
from oarkit.core.errors import ConfigError, OarkitError, WeightsError

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
            # Per epoch, or per interval (at its iteration) in a run counted in iterations.
            step = int(row["iter"] if getattr(trainer, "max_iters", None) else row["epoch"])
            for k, v in scalar_items(row).items():
                if k not in ("epoch", "iter"):
                    self.writer.add_scalar(f"epoch/{k}", v, step)
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
    """``curves.png`` in the run directory: losses and validation metrics per epoch (or iteration), by scale.

    Drawn at the end of a run, and also when it fails (the epochs that finished), so a stopped run still shows
    how it went.
    """

    def on_fit_end(self, trainer: Trainer) -> None:
        self.draw(trainer)

    def on_exception(self, trainer: Trainer, error: BaseException) -> None:
        self.draw(trainer)

    def draw(self, trainer: Trainer) -> None:
        """Write ``curves.png`` from ``trainer.history`` (nothing when no epoch has finished)."""
        x_key = "iter" if getattr(trainer, "max_iters", None) is not None else "epoch"
        path = plot_curves(trainer.history, trainer.output_dir / "curves.png", getattr(trainer, "main_indicator", ""),
                           getattr(trainer, "higher_is_better", True), x_key)
        if path is not None:
            trainer.artifacts["curves"] = str(path)


#: history columns that are not curves: the x axis, the schedule and the clock
_NOT_CURVES = ("epoch", "iter", "step", "global_step", "lr")


@dataclass
class CurvePanel:
    """One panel of ``curves.png``: series that share a scale.

    Attributes:
        title: the panel title (``"loss"``, ``"metrics in [0, 1]"``, ``"metrics in [0, 100]"`` or a metric's name).
        keys: the history columns drawn in it (``train_loss``, ``val_top1``, ...).
        ylabel: the y-axis label.
    """

    title: str
    keys: list[str]
    ylabel: str


def _is_count(key: str, values: list[Any]) -> bool:
    """Counts (``num_samples``, ``num_pixels``, ``total``) are not curves: named so, or integers above 100."""
    name = key.removeprefix("val_").removeprefix("train_")
    named = name.startswith(("num_", "n_")) or name in ("total", "support") or "count" in name
    return named or (all(isinstance(v, int) for v in values) and max(values) > 100)


def curve_panels(history: list[dict[str, Any]], main_indicator: str = "") -> list[CurvePanel]:
    """Choose the series of a run's history worth drawing and group them by scale.

    Losses (``train_*`` and any ``*loss*`` column) share one panel; validation metrics whose values all lie in
    [-1, 1] (mIoU, kappa) share another, those in [0, 100] (top-1 in percent) a third; any other metric, and a
    [0, 100] one that stays below a fifth of the others' peak, gets a panel of its own, so that no series
    squashes another. Left out: counts (integers such as ``num_samples``),
    lists (per-class values), the x axis, the learning rate and timings.

    Args:
        history: the trainer's rows, one per epoch.
        main_indicator: the metric's main indicator (without ``val_``); its panel comes right after the losses.

    Returns:
        The panels in drawing order; empty when there is nothing to draw.
    """
    columns: dict[str, list[Any]] = {}
    for row in history:
        for key, value in row.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                columns.setdefault(key, []).append(value)
    losses: list[str] = []
    unit: list[str] = []  # in [-1, 1]: mIoU, Dice, kappa
    hundred: dict[str, float] = {}  # in [0, 100], with their peak: top-1 in percent
    apart: list[str] = []
    for key, values in columns.items():
        if key in _NOT_CURVES or key.endswith("time_s") or _is_count(key, values):
            continue
        if key.startswith("train_") or "loss" in key:
            losses.append(key)
            continue
        finite = [float(v) for v in values if math.isfinite(v)]
        if not finite:
            continue
        if min(finite) >= -1.0 and max(finite) <= 1.0:
            unit.append(key)
        elif min(finite) >= 0.0 and max(finite) <= 100.0:
            hundred[key] = max(finite)
        else:
            apart.append(key)
    # A [0, 100] metric far below the others (an error of 2.5 beside a top-1 of 90) would lie flat: apart too.
    top = max(hundred.values(), default=0.0)
    shared = [k for k, peak in hundred.items() if peak >= 0.2 * top]
    apart += [k for k in hundred if k not in shared]
    groups = [("metrics in [0, 1]", unit), ("metrics in [0, 100]", shared)]
    metric_panels = [CurvePanel(title, keys, "value") for title, keys in groups if keys]
    metric_panels += [CurvePanel(k.removeprefix("val_"), [k], k.removeprefix("val_")) for k in apart]
    panels = [CurvePanel("loss", losses, "loss")] if losses else []
    main = f"val_{main_indicator}"
    metric_panels.sort(key=lambda p: main not in p.keys)  # stable: the main indicator's panel first
    return panels + metric_panels


def _best(points: list[tuple[float, float]], higher_is_better: bool) -> tuple[float, float] | None:
    finite = [p for p in points if math.isfinite(p[1])]
    if not finite:
        return None
    # The first epoch reaching the best value, as the Trainer's best/ keeps it.
    return max(finite, key=lambda p: (p[1] if higher_is_better else -p[1], -p[0]))


def curves_figure(history: list[dict[str, Any]], main_indicator: str = "", higher_is_better: bool = True,
                  x_key: str | None = None) -> Any:
    """The matplotlib figure of :func:`plot_curves`, or ``None`` when there is nothing to draw."""
    panels = curve_panels(history, main_indicator)
    if not panels:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    if x_key is None or not all(x_key in r for r in history):
        epochs = [r.get("epoch") for r in history]  # several rows in one epoch: a run counted in iterations
        order = ("iter", "epoch", "step") if len(set(epochs)) < len(epochs) else ("epoch", "iter", "step")
        x_key = next((k for k in order if all(k in r for r in history)), None)
    x_label = {"iter": "iteration"}.get(x_key, x_key) if x_key else "evaluation"
    fig = Figure(figsize=(max(6.0, 4.6 * len(panels)), 4.2), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)  # no pyplot: no global backend switch, no display
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    main = f"val_{main_indicator}"
    headline = ""
    for ax, panel in zip(axes, panels, strict=True):
        for key in panel.keys:
            points = [(float(r[x_key]) if x_key else float(i + 1), float(r[key]))
                      for i, r in enumerate(history) if isinstance(r.get(key), (int, float))]
            label = key.removeprefix("val_") if key.startswith("val_") and "loss" not in key else key
            if key != main:
                ax.plot(*zip(*points), marker="o", ms=3, lw=1.3, alpha=0.85, label=label)
                continue
            (line,) = ax.plot(*zip(*points), marker="o", ms=4, lw=2.8, zorder=3, label=f"{label} (main)")
            best = _best(points, higher_is_better)
            if best is not None:
                ax.plot(*best, marker="*", ms=16, color=line.get_color(), markeredgecolor="black", zorder=4,
                        clip_on=False, label=f"best {best[1]:.4g} @ {x_label} {best[0]:g}")
                headline = (f"main indicator: {main_indicator} — best {best[1]:.4g} at {x_label} {best[0]:g}, "
                            f"last {points[-1][1]:.4g}")
        ax.set(title=panel.title, xlabel=x_label, ylabel=panel.ylabel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # no epoch 2.5
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(headline or "training curves", fontsize=11)
    return fig


def plot_curves(history: list[dict[str, Any]], path: Path, main_indicator: str = "",
                higher_is_better: bool = True, x_key: str | None = None) -> Path | None:
    """Draw the loss and metric curves of a run's history into ``path``; ``None`` when there is nothing to draw.

    Args:
        history: the trainer's rows, one per epoch (see :func:`curve_panels` for what is drawn).
        path: the PNG to write.
        main_indicator: the main indicator, drawn thicker with its best point marked and named in the title.
        higher_is_better: whether the best point is the highest (else the lowest) value.
        x_key: the history column on the x axis (``epoch``, ``iter``); default: ``epoch`` unless several rows
            share an epoch.
    """
    fig = curves_figure(history, main_indicator, higher_is_better, x_key)
    if fig is None:
        return None
    fig.savefig(path)
    return Path(path)


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
    """Stop when the main validation indicator has not improved by ``min_delta`` for ``patience`` evaluations,
    counted from ``start`` (a fraction of the run, :attr:`Trainer.run_fraction`) on: evaluations before it only
    set the best value."""

    all_ranks = True

    def __init__(self, patience: int = 5, min_delta: float = 0.0, *, start: float = 0.0) -> None:
        if patience < 1:
            raise ConfigError(f"trainer.early_stopping_patience={patience} must be at least 1 (evaluations without a "
                              "better value); trainer.early_stopping_patience=null turns early stopping off")
        if not 0.0 <= float(start) < 1.0:
            raise ConfigError(f"trainer.early_stopping_start is a fraction of the run in [0, 1), got {start}")
        self.patience = patience
        self.min_delta = min_delta
        self.start = float(start)
        self.best: float | None = None
        self.bad_evals = 0

    def on_validation_end(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        value = float(metrics[trainer.main_indicator])
        sign = 1.0 if trainer.higher_is_better else -1.0
        if self.best is None or sign * (value - self.best) > self.min_delta:
            self.best, self.bad_evals = value, 0
            return
        if trainer.run_fraction < self.start:
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


# ----------------------------------------------------------------------------- the failure path
def handle_fit_exception(trainer: Trainer, error: BaseException) -> None:
    """What ``fit()`` does with an error before re-raising it, so that the user sees that error and nothing else.

    1. An oarkit error's message gains where training stopped and the last good checkpoint (``last/`` of a
       finished epoch) to resume from; a DataLoader worker's wrapping (the worker's whole traceback in the
       message) is taken off again. Any other error, Ctrl-C included, is left as it is and the checkpoint is
       logged at warning instead.
    2. Every callback gets ``on_exception`` (loggers close their files, the bar closes, the curves of the
       finished epochs are drawn). A callback that fails in turn is logged at warning and skipped: it never
       replaces ``error``.
    """
    try:
        _explain_failure(trainer, error)
    except Exception as note_error:  # the explanation is a courtesy; the error itself must get through
        logger.warning("could not add the checkpoint to the error message: %s", note_error)
    for callback in trainer.callbacks:
        if not (trainer.is_main or callback.all_ranks):
            continue
        try:
            callback.on_exception(trainer, error)
        except Exception as callback_error:
            logger.warning("%s.on_exception failed while training stopped on %s: %s: %s", type(callback).__name__,
                           type(error).__name__, type(callback_error).__name__, callback_error)
            logger.debug("the callback's traceback", exc_info=True)


def last_good_checkpoint(trainer: Trainer) -> tuple[Path, str] | None:
    """``(last/, "epoch N[, iteration I]")`` when this run wrote or resumed from one; ``None`` before that."""
    if not trainer.history:  # a last/ left by an earlier run in the same directory is not this run's
        return None
    last = trainer.output_dir / "last"
    try:
        meta = read_meta(last)
        return last, _position(trainer, int(meta["epoch"]), meta.get("global_step"))
    except (WeightsError, KeyError, TypeError, ValueError):
        return None


def _position(trainer: Trainer, epoch: int, step: Any) -> str:
    counted_in_iterations = getattr(trainer, "max_iters", None) is not None
    return f"epoch {epoch}" + (f", iteration {step}" if counted_in_iterations and step is not None else "")


def _explain_failure(trainer: Trainer, error: BaseException) -> None:
    now = _position(trainer, int(getattr(trainer, "epoch", 0)) + 1, getattr(trainer, "global_step", None))
    kept = last_good_checkpoint(trainer)
    if isinstance(error, OarkitError) and len(error.args) == 1 and isinstance(error.args[0], str):
        message = _unwrap_worker_message(error)
        if kept is not None and str(kept[0]) not in message:
            message = (f"{message.rstrip('.')}. Training stopped in {now}; the last good checkpoint is {kept[0]} "
                       f"({kept[1]}): fix the cause and continue with --resume")
        error.args = (message,)
        return
    what = "interrupted" if isinstance(error, KeyboardInterrupt) else f"stopped by {type(error).__name__}"
    where = (f"the last good checkpoint is {kept[0]} ({kept[1]}); continue with --resume" if kept
             else "no checkpoint was written yet")
    logger.warning("training %s in %s; %s", what, now, where)


def _unwrap_worker_message(error: BaseException) -> str:
    """The message an error had before a DataLoader worker wrapped it in "Caught X in DataLoader worker ...".

    With ``num_workers > 0`` the error is raised again in the main process with the worker's whole
    traceback as its message; the original message is the text after the last ``module.Class: ``. The user
    then reads the same message whatever the number of workers.
    """
    message = str(error.args[0])
    if not message.startswith("Caught ") or "Original Traceback" not in message:
        return message
    cls = type(error)
    marker = f"{cls.__module__}.{cls.__qualname__}: "
    at = message.rfind(marker)
    return message[at + len(marker):].strip() if at >= 0 else message
