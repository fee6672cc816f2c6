"""The one evaluation path: training, ``oarkit eval``, export verification and every kit score a model through
the task's ``validation_step`` and metric, over loaders built the same way.

``evaluate_run`` is what ``oarkit eval`` / ``tools/eval.py`` call: it rebuilds a run's task from its config and
meta.json (:meth:`Task.restore`), its data module from its config (on another root when asked), and evaluates a
split exactly as the Trainer evaluated the validation set, so the same run on the same data gives the same number.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, Dataset, Sampler, SequentialSampler

from oarkit.core.data.samplers import ResumableBatchSampler
from oarkit.core.engine.metric import Metric
from oarkit.core.engine.precision import Precision
from oarkit.core.engine.task import DataModule, Task
from oarkit.core.errors import ConfigError

if TYPE_CHECKING:
    from oarkit.core.engine.run import TrainedModel

logger = logging.getLogger(__name__)


def move_to(batch: Any, device: torch.device) -> Any:
    """``batch`` with every tensor inside tuples, lists and dicts moved to ``device``."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {k: move_to(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(move_to(v, device) for v in batch)
    return batch


def build_loader(dataset: Dataset, data: DataModule | None, task: Task, *, train: bool, batch_size: int,
                 sampler: Sampler[int] | None = None, num_workers: int = 0, pin_memory: bool = False) -> DataLoader:
    """The loader the Trainer and evaluation both use: the task's collate, the data module's batch sampler.

    Args:
        dataset: the split.
        data: the data module, asked for a batch sampler (``None``: plain batches).
        task: supplies ``collate``.
        train: a training loader (incomplete last batches dropped when the set holds a full one).
        batch_size: samples per batch.
        sampler: the index order (default: sequential).
        num_workers: loader worker processes.
        pin_memory: pin host memory (CUDA).
    """
    if len(dataset) == 0:
        raise ConfigError(f"the {'training' if train else 'evaluation'} dataset is empty")
    sampler = sampler if sampler is not None else SequentialSampler(dataset)
    drop_last = train and len(dataset) >= batch_size
    batches = data.batch_sampler(sampler, dataset, batch_size=batch_size, train=train, drop_last=drop_last) \
        if data is not None else None
    if train:  # the Trainer skips the batches a mid-epoch checkpoint had done (indices only, nothing is loaded)
        batches = ResumableBatchSampler(BatchSampler(sampler, batch_size, drop_last) if batches is None else batches)
    # No persistent workers: each epoch's workers must see the dataset's set_epoch() (augmentation seeds).
    if batches is not None:
        loader = DataLoader(dataset, batch_sampler=batches, num_workers=num_workers, collate_fn=task.collate,
                            pin_memory=pin_memory)
    else:
        loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=num_workers,
                            collate_fn=task.collate, drop_last=drop_last, pin_memory=pin_memory)
    loader.index_sampler = sampler  # the sampler the Trainer tells each epoch (DataLoader hides it behind batches)
    return loader


@torch.no_grad()
def run_evaluation(task: Task, model: nn.Module, batches: Iterable[Any], *, device: torch.device | str = "cpu",
                   autocast: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
                   synchronize: Callable[[Metric], None] | None = None,
                   limit: int | None = None) -> tuple[dict[str, Any], Metric]:
    """The task's metric of ``model`` over ``batches``: ``validation_step`` then ``metric.update`` per batch.

    Args:
        task: a set-up or restored task.
        model: the module (eager, or an exported artifact behind a module-like wrapper).
        batches: an iterable of collated batches (a loader).
        device: where batches go.
        autocast: the precision context of each step (the Trainer's).
        synchronize: gathers the metric across ranks before ``compute()`` (distributed runs).
        limit: stop after this many batches.

    Returns:
        ``(results, metric)``: the computed numbers and the metric (for pictures).
    """
    device = torch.device(device)
    was_training = getattr(model, "training", False)
    if isinstance(model, nn.Module):
        model.eval()
    metric = task.build_metric()
    for i, batch in enumerate(batches):
        if limit is not None and i >= limit:
            break
        batch = move_to(batch, device)
        with autocast():
            outputs = task.validation_step(model, batch)
        metric.update(outputs, batch)
    if synchronize is not None:
        synchronize(metric)
    results = metric.compute()
    if isinstance(model, nn.Module):
        model.train(was_training)
    return results, metric


@dataclasses.dataclass
class RunEvaluation:
    """A run's restored task and evaluation loader, ready to score its model or models made from it (a pruned
    copy) exactly as ``oarkit eval`` scores the run.

    Attributes:
        trained: the model directory, its module on ``device``.
        task: the task restored from its meta.json.
        data: the data module (on another root when asked).
        loader: the evaluation loader of ``split``.
        device: where models and batches go.
        precision: the run's precision (the metric logged in training was computed under it).
        split: the evaluated split.
    """

    trained: TrainedModel
    task: Task
    data: DataModule
    loader: DataLoader
    device: torch.device
    precision: Precision
    split: str

    @classmethod
    def load(cls, source: str | Path, *, data_root: str | None = None, split: str = "val",
             batch_size: int | None = None, device: str = "cpu") -> RunEvaluation:
        """Rebuild a run (or model) directory's task, data and loader; arguments as :func:`evaluate_run`'s."""
        from oarkit.core.engine.checkpoint import find_model_dir
        from oarkit.core.engine.run import TrainedModel

        trained = TrainedModel.load(find_model_dir(Path(source)))
        task = trained.restored_task()
        data = trained.data_module(task, data_root=data_root, batch_size=batch_size)
        dev = torch.device(device)
        trained.model = trained.model.to(dev)
        loader = build_loader(data.dataset(split), data, task, train=False,
                              batch_size=int(data.eval_batch_size or data.batch_size))
        precision = Precision(str((trained.config.get("trainer") or {}).get("precision", "fp32")), dev)
        return cls(trained, task, data, loader, dev, precision, split)

    @property
    def main_indicator(self) -> str:
        """The key of the task metric's results that ranks models (``top1``, ``mIoU``, ...)."""
        return self.task.build_metric().main_indicator

    def score(self, model: nn.Module | None = None, *, progress: bool = False) -> tuple[dict[str, Any], Metric]:
        """The task's metric of ``model`` (default: the run's own) over the split, as :func:`run_evaluation`."""
        batches: Iterable[Any] = self.loader
        if progress:
            from tqdm.auto import tqdm

            batches = tqdm(self.loader, desc=f"eval {self.split}", leave=False)
        model = self.trained.model if model is None else model
        return run_evaluation(self.task, model, batches, device=self.device, autocast=self.precision.autocast)


def evaluate_run(source: str | Path, *, data_root: str | None = None, split: str = "val",
                 batch_size: int | None = None, device: str = "cpu",
                 output_dir: str | Path | None = None) -> dict[str, Any]:
    """Evaluate a run (or model) directory on a split of its dataset, or of another one at ``data_root``.

    Args:
        source: a run directory (its ``best/``), ``best/``, ``last/`` or a converted model directory.
        data_root: the dataset; default: the ``data.root`` the run was trained on.
        split: a split the kit's data module knows (``val``, ``train``, ``test``, a list file).
        batch_size: samples per evaluation batch; default: the run's evaluation batch size.
        device: ``cpu``, ``cuda``, ...
        output_dir: where the metric's pictures go; default: the run directory.

    Returns:
        The metric's results plus ``model_dir``, ``data_root``, ``split`` and the pictures written.
    """
    run = RunEvaluation.load(source, data_root=data_root, split=split, batch_size=batch_size, device=device)
    results, metric = run.score(progress=True)
    plots: list[str] = []
    if _draws_pictures(run.task):
        plot_dir = (Path(output_dir) if output_dir else run.trained.run_dir) / f"eval_{Path(split).stem}"
        plot_dir.mkdir(parents=True, exist_ok=True)
        plots = run.task.plot_metric(metric, str(plot_dir))
    results.update({Path(p).stem: str(p) for p in plots})  # e.g. confusion_matrix: <run>/eval_val/...png
    results.update(model_dir=str(run.trained.folder), data_root=str(getattr(run.data, "root", data_root) or ""),
                   split=split)
    return results


def _draws_pictures(task: Task) -> bool:
    """Whether the task draws pictures at all (``plot_metric`` overridden), so no empty folder is made."""
    return type(task).plot_metric is not Task.plot_metric
