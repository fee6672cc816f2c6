"""The task seams the det and ocr kits plug into: task callbacks, batch samplers, wrappers that forward
everything, the shared loader and evaluation path, and DataModule splits."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch.utils.data import Sampler

from oarkit.core.engine.callbacks import Callback
from oarkit.core.engine.evaluation import build_loader, run_evaluation
from oarkit.core.engine.task import TaskWrapper
from oarkit.core.errors import ConfigError

from .conftest import BlobData, ToyTask


class EpochRecorder(Callback):
    """What an epoch-aware task brings: it flips a flag of its task at an epoch (PP-YOLOE's assigner switch)."""

    def __init__(self, task: ToyTask, switch_at: int) -> None:
        self.task, self.switch_at = task, switch_at
        self.epochs: list[int] = []

    def on_train_epoch_start(self, trainer: Any, epoch: int) -> None:
        self.epochs.append(epoch)
        self.task.late_phase = epoch >= self.switch_at


class PhasedTask(ToyTask):
    def __init__(self) -> None:
        super().__init__(dropout=0.0)
        self.late_phase = False
        self.phase_per_step: list[bool] = []
        self.recorder = EpochRecorder(self, switch_at=1)

    def callbacks(self) -> list[Callback]:
        return [self.recorder]

    def training_step(self, model, batch):
        self.phase_per_step.append(self.late_phase)
        return super().training_step(model, batch)


def test_task_callbacks_join_the_trainer_and_steer_the_task(trainer_factory) -> None:
    task = PhasedTask()
    trainer = trainer_factory(task=task, data=BlobData(n=48, batch_size=12), max_epochs=2)
    trainer.fit()
    assert task.recorder in trainer.callbacks
    assert task.recorder.epochs == [0, 1]
    assert task.phase_per_step == [False] * 3 + [True] * 3  # 36 training samples, batches of 12


class ParityBatches(Sampler[list[int]]):
    """Batches of even indices, then of odd ones (a stand-in for aspect-ratio groups); told each epoch."""

    def __init__(self, sampler: Sampler[int], batch_size: int) -> None:
        self.sampler, self.batch_size = sampler, batch_size
        self.epochs: list[int] = []

    def set_epoch(self, epoch: int) -> None:
        self.epochs.append(epoch)

    def __iter__(self):
        indices = list(self.sampler)
        for group in ([i for i in indices if i % 2 == 0], [i for i in indices if i % 2 == 1]):
            for start in range(0, len(group), self.batch_size):
                yield group[start:start + self.batch_size]

    def __len__(self) -> int:
        n = len(self.sampler)
        return -(-((n + 1) // 2) // self.batch_size) + -(-(n // 2) // self.batch_size)


class GroupedBlobs(BlobData):
    def __init__(self) -> None:
        super().__init__(n=48, batch_size=5)
        self.made: dict[bool, ParityBatches] = {}

    def batch_sampler(self, sampler, dataset, *, batch_size, train, drop_last):
        self.made[train] = ParityBatches(sampler, batch_size)
        return self.made[train]


class BatchLog(ToyTask):
    def __init__(self) -> None:
        super().__init__(dropout=0.0)
        self.val_batches: list[torch.Tensor] = []

    def validation_step(self, model, batch):
        self.val_batches.append(batch[1])
        return super().validation_step(model, batch)


def test_a_data_module_batch_sampler_drives_training_and_evaluation(trainer_factory) -> None:
    data, task = GroupedBlobs(), BatchLog()
    trainer = trainer_factory(task=task, data=data, max_epochs=2)
    trainer.fit()
    assert data.made[True].epochs == [0, 1]  # the Trainer tells the training batch sampler each epoch
    assert len(trainer.train_loader) == len(data.made[True])
    seen = [len(b) for b in task.val_batches[: len(trainer.val_loader)]]
    assert seen == [5, 1, 5, 1]  # 12 validation samples: 6 even then 6 odd indices, in batches of 5


def test_build_loader_refuses_an_empty_dataset() -> None:
    with pytest.raises(ConfigError, match="evaluation dataset is empty"):
        build_loader(torch.utils.data.TensorDataset(torch.zeros(0, 8)), None, ToyTask(), train=False, batch_size=4)


def test_run_evaluation_is_what_the_trainer_logs(trainer_factory) -> None:
    trainer = trainer_factory(max_epochs=1)
    trainer.fit()
    loader = build_loader(trainer.data.val_dataset(), trainer.data, trainer.task, train=False, batch_size=3)
    results, _ = run_evaluation(trainer.task, trainer.eval_model, loader)
    assert results["acc"] == trainer.history[-1]["val_acc"]  # another batch size, the same number


def test_data_module_splits_name_the_unknown_one() -> None:
    data = BlobData()
    assert len(data.dataset("val")) == len(data.val_dataset())
    with pytest.raises(ConfigError, match="no split 'vall'.*'val'"):
        data.dataset("vall")


class Tagged(ToyTask):
    def parameter_groups(self, model, *, decay_norm_and_bias=False):
        return [{"params": list(model.parameters()), "lr_scale": 0.5}]

    def grown_later(self) -> str:
        return "inner"


class HalfSteps(TaskWrapper):
    """A wrapper that changes one method and nothing else."""

    def training_step(self, model, batch):
        losses = self.inner.training_step(model, batch)
        return {**losses, "loss": losses["loss"] * 0.5}


def test_a_task_wrapper_forwards_what_it_does_not_change() -> None:
    inner = Tagged()
    wrapped = HalfSteps(inner)
    model = inner.setup(BlobData())
    groups = wrapped.parameter_groups(model)  # a Task default the wrapper must not shadow
    assert groups[0]["lr_scale"] == 0.5
    assert wrapped.grown_later() == "inner" and wrapped.task_id == "toy"
    batch = (torch.randn(4, 8), torch.tensor([0, 1, 2, 0]))
    torch.manual_seed(0)
    full = inner.training_step(model.eval(), batch)["loss"]
    assert torch.allclose(wrapped.training_step(model, batch)["loss"], full * 0.5)
    wrapped.note = "set on the wrapper"
    assert wrapped.note == "set on the wrapper" and not hasattr(inner, "note")
