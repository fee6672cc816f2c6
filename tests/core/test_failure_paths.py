"""Failures during fit() stay clear: the user sees the original error, the last good checkpoint and closed logs.

Every built-in callback rides along (console, CSV, curves, progress bar, TensorBoard, early stopping, stop-after)
while training fails in a training step, in data loading, in evaluation, or by Ctrl-C, on the toy task and on a
real clas ImageFolder with a corrupt image. The command line must answer with one ``error:`` line (exit 2) or
``interrupted`` (exit 130), never a traceback.
"""

from __future__ import annotations

import csv
import inspect
import logging
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from safetensors.torch import load_file
from torch.utils.data import Dataset

import oarkit.core.config
from oarkit.core.cli import main
from oarkit.core.engine import callbacks as cb_module
from oarkit.core.engine import checkpoint as ckpt
from oarkit.core.engine.callbacks import Callback, ProgressBar, StopAfter, TensorBoardLogger
from oarkit.core.errors import DataError, TrainingError

STEPS_PER_EPOCH = 4  # BlobData: 72 training samples, batch 16, drop_last


class BrokenOnException(Callback):
    """A callback that fails on the failure path: it must not replace the error the user sees."""

    def on_exception(self, trainer: Any, error: BaseException) -> None:
        raise RuntimeError("the broken callback broke too")


class ArmAfterFirstEpoch(Callback):
    """Runs ``arm()`` once the first epoch (and its last/ checkpoint) is done, so the failure lands in epoch 2."""

    def __init__(self, arm: Any) -> None:
        self.arm = arm

    def on_train_epoch_end(self, trainer: Any, row: dict[str, Any]) -> None:
        if row["epoch"] == 1:
            self.arm()


class FailingDataset(Dataset):
    """The toy's training split; once armed, reading a sample fails the way a corrupt image does."""

    def __init__(self, inner: Dataset) -> None:
        self.inner, self.armed = inner, False

    def __len__(self) -> int:
        return len(self.inner)

    def __getitem__(self, index: int) -> Any:
        if self.armed:
            raise DataError(f"Image /data/train/{index:03d}.png cannot be decoded (corrupt or not an image)")
        return self.inner[index]


def failing_trainer(toy: Any, tmp_path: Path, where: str, error: BaseException, **kwargs: Any) -> Any:
    """A toy trainer with every built-in callback on, that raises ``error`` in epoch 2 at ``where``."""

    class FailingTask(toy.ToyTask):
        def training_step(self, model, batch):
            if where == "step" and self.steps >= STEPS_PER_EPOCH + 1:  # epoch 2, batch 2
                raise error
            return super().training_step(model, batch)

        def validation_step(self, model, batch):
            if where == "eval" and self.steps > STEPS_PER_EPOCH:  # the evaluation of epoch 2
                raise error
            return super().validation_step(model, batch)

    data = toy.BlobData()
    extra: list[Callback] = [StopAfter(epochs=10)]
    if where == "data":
        data.train = FailingDataset(data.train)
        extra.append(ArmAfterFirstEpoch(lambda: setattr(data.train, "armed", True)))
    options = dict(max_epochs=3, progress=True, tensorboard=True, log_every=1, early_stopping_patience=5,
                   callbacks=extra)
    trainer = toy.make_trainer(tmp_path, task=FailingTask(), data=data, **{**options, **kwargs})
    trainer.callbacks.insert(0, BrokenOnException())  # first: the callbacks after it must still run
    return trainer


class Spy:
    """Keeps the progress bars and the TensorBoard writer the built-in callbacks open, to check them closed."""

    def __init__(self, trainer: Any) -> None:
        self.bars: list[Any] = []
        self.writers: list[Any] = []
        for callback in trainer.callbacks:
            if isinstance(callback, ProgressBar):
                self._wrap(callback, "on_train_epoch_start", lambda c=callback: self.bars.append(c.bar))
            if isinstance(callback, TensorBoardLogger):
                self._wrap(callback, "on_fit_start", lambda c=callback: self.writers.append(c.writer))

    @staticmethod
    def _wrap(callback: Callback, event: str, after: Any) -> None:
        original = getattr(callback, event)

        def spied(*args: Any) -> None:
            original(*args)
            after()

        setattr(callback, event, spied)

    def check_closed(self, trainer: Any) -> None:
        assert self.bars and all(bar.disable for bar in self.bars), "a progress bar was left open"
        assert all(c.bar is None for c in trainer.callbacks if isinstance(c, ProgressBar))
        assert len(self.writers) == 1 and self.writers[0].file_writer is None, "the TensorBoard writer is open"
        assert all(c.writer is None for c in trainer.callbacks if isinstance(c, TensorBoardLogger))


def run_cli(monkeypatch: pytest.MonkeyPatch, trainer: Any) -> int:
    """``oarkit train`` on a prepared trainer: the real command, its error handling and exit codes."""
    monkeypatch.setattr(oarkit.core.config, "load_config", lambda config, overrides: OmegaConf.create({}))
    monkeypatch.setattr(oarkit.core.config, "build_trainer", lambda cfg, **kw: trainer)
    return main(["train", "-c", "toy.yaml"])


def one_error_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


def check_epoch_1_survives(run: Path, trainer: Any, toy: Any) -> None:
    """metrics.csv holds epoch 1 only, curves.png is drawn, last/ loads and resumes to the end."""
    rows = list(csv.DictReader((run / "metrics.csv").read_text().splitlines()))
    assert [int(float(r["epoch"])) for r in rows] == [1] and float(rows[0]["val_acc"]) > 0
    assert (run / "curves.png").stat().st_size > 5_000
    assert ckpt.read_meta(run / "last")["epoch"] == 1
    model = trainer.task.setup(trainer.data)
    model.load_state_dict(load_file(str(run / "last" / ckpt.MODEL_FILE)))  # strict: every tensor is there
    resumed = toy.make_trainer(run.parent, max_epochs=2, resume=True)
    resumed.fit()
    assert [int(r["epoch"]) for r in resumed.history] == [1, 2]


@pytest.mark.parametrize(("where", "message"), [
    ("step", "the training step failed: the batch holds no boxes"),
    ("data", "cannot be decoded (corrupt or not an image)"),  # FailingDataset raises it, naming the file
    ("eval", "label 7 of a validation sample is not below num_classes=3"),
])
def test_an_oarkit_error_in_the_loop_reaches_the_user_with_the_last_checkpoint(
        where, message, toy, tmp_path, monkeypatch, capsys, caplog):
    error = TrainingError(message) if where == "step" else DataError(message)
    trainer = failing_trainer(toy, tmp_path, where, error)
    spy = Spy(trainer)
    with caplog.at_level(logging.WARNING, logger="oarkit"):
        assert run_cli(monkeypatch, trainer) == 2
    line = one_error_line(capsys.readouterr().err)
    assert message in line and (where != "data" or "error: Image /data/train/" in line)
    run = tmp_path / "run"
    assert f"Training stopped in epoch 2; the last good checkpoint is {run / 'last'} (epoch 1)" in line
    assert "--resume" in line
    assert "BrokenOnException.on_exception failed" in caplog.text  # logged, not raised
    spy.check_closed(trainer)
    check_epoch_1_survives(run, trainer, toy)


def test_ctrl_c_says_interrupted_and_where_the_checkpoint_is(toy, tmp_path, monkeypatch, capsys, caplog):
    trainer = failing_trainer(toy, tmp_path, "step", KeyboardInterrupt())
    spy = Spy(trainer)
    with caplog.at_level(logging.WARNING, logger="oarkit"):
        assert run_cli(monkeypatch, trainer) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "Traceback" not in err and "error:" not in err
    run = tmp_path / "run"
    assert f"training interrupted in epoch 2; the last good checkpoint is {run / 'last'} (epoch 1)" in caplog.text
    spy.check_closed(trainer)
    check_epoch_1_survives(run, trainer, toy)


@pytest.mark.parametrize("where", ["step", "eval"])
def test_any_other_error_propagates_unchanged(where, toy, tmp_path, caplog):
    """A bug (not an oarkit error) keeps its type and message; the callbacks still close everything."""
    error = ValueError("shapes (16, 3) and (16, 4) do not match")
    trainer = failing_trainer(toy, tmp_path, where, error)
    spy = Spy(trainer)
    with caplog.at_level(logging.WARNING, logger="oarkit"), pytest.raises(ValueError) as raised:
        trainer.fit()
    assert raised.value is error and str(error) == "shapes (16, 3) and (16, 4) do not match"
    assert f"stopped by ValueError in epoch 2; the last good checkpoint is {tmp_path / 'run' / 'last'}" in caplog.text
    spy.check_closed(trainer)
    check_epoch_1_survives(tmp_path / "run", trainer, toy)


def test_a_run_counted_in_iterations_names_iterations(toy, tmp_path, monkeypatch, capsys):
    trainer = failing_trainer(toy, tmp_path, "step", TrainingError("the training step failed"), max_epochs=None,
                              max_iters=12, eval_every_iters=4)
    assert run_cli(monkeypatch, trainer) == 2
    line = one_error_line(capsys.readouterr().err)
    assert (f"Training stopped in epoch 2, iteration 5; the last good checkpoint is {tmp_path / 'run' / 'last'} "
            "(epoch 1, iteration 4)") in line


def test_a_failure_before_any_checkpoint_names_none(toy, tmp_path, capsys, monkeypatch):
    """In epoch 1 there is no checkpoint of this run yet: a last/ left by an earlier run is not offered."""
    ckpt.write_model_dir(tmp_path / "run" / "last", weights={"w": torch.zeros(1)}, meta={"epoch": 7},
                         config_yaml="{}\n")
    trainer = failing_trainer(toy, tmp_path, "eval", DataError("label 7 is not below num_classes=3"))
    trainer.task.steps = STEPS_PER_EPOCH + 1  # the first evaluation already fails
    assert run_cli(monkeypatch, trainer) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line == "error: label 7 is not below num_classes=3"
    assert not (tmp_path / "run" / "metrics.csv").exists() and not (tmp_path / "run" / "curves.png").exists()


def test_every_callback_handles_on_exception(toy, tmp_path):
    """Each callback in callbacks.py takes ``on_exception(trainer, error)`` at any moment, even before fit."""
    trainer = toy.make_trainer(tmp_path)
    trainer.setup()
    classes = [c for _, c in inspect.getmembers(cb_module, inspect.isclass)
               if issubclass(c, Callback) and c.__module__ == cb_module.__name__]
    assert {c.__name__ for c in classes} >= {"ConsoleLogger", "CSVLogger", "CurvesPlot", "ProgressBar",
                                             "TensorBoardLogger", "EarlyStopping", "StopAfter"}
    for cls in classes:
        callback = cls(epochs=1) if cls is StopAfter else cls()
        callback.on_fit_start(trainer)
        callback.on_exception(trainer, RuntimeError("boom"))
        callback.on_exception(trainer, KeyboardInterrupt())  # twice: closing is idempotent
    assert not (tmp_path / "run" / "curves.png").exists()  # CurvesPlot draws nothing without a finished epoch


# ----------------------------------------------------------------------------- a real clas ImageFolder
def write_tiny_imagefolder(root: Path) -> Path:
    """Three classes of flat colours with noise, 4 training and 2 validation images each (32x32 PNG)."""
    rng = np.random.default_rng(0)
    colours = {"red": (200, 30, 30), "green": (30, 200, 30), "blue": (30, 30, 200)}
    for split, n in (("train", 4), ("val", 2)):
        for name, colour in colours.items():
            (root / split / name).mkdir(parents=True, exist_ok=True)
            for i in range(n):
                image = np.clip(np.array(colour) + rng.normal(0, 20, (32, 32, 3)), 0, 255).astype(np.uint8)
                cv2.imwrite(str(root / split / name / f"{i:03d}.png"), image)
    return root


@pytest.mark.parametrize("workers", [0, 1])
def test_a_corrupt_image_in_a_clas_imagefolder_names_the_file(workers, tmp_path, monkeypatch, capsys):
    pytest.importorskip("oarkit.clas")
    root = write_tiny_imagefolder(tmp_path / "data")
    corrupt = root / "train" / "green" / "002.png"
    built: list[Any] = []
    real_build = oarkit.core.config.build_trainer

    def build(cfg: Any, **kwargs: Any) -> Any:
        trainer = real_build(cfg, **kwargs)
        trainer.callbacks.append(ArmAfterFirstEpoch(lambda: corrupt.write_bytes(b"\x89PNG\r\n\x1a\n truncated")))
        built.append((trainer, Spy(trainer)))
        return trainer

    monkeypatch.setattr(oarkit.core.config, "build_trainer", build)
    run = tmp_path / "run"
    code = main(["train", "-c", "clas/pp_lcnet_x0_5_digits_32x32", f"data.root={root}", f"output_dir={run}",
                 "task.model.name=clas/pp_lcnet_x0_25", "trainer.max_epochs=2", "data.batch_size=4",
                 f"data.num_workers={workers}", "trainer.deterministic=true"])
    assert code == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"Image {corrupt} cannot be decoded" in line
    assert f"the last good checkpoint is {run / 'last'} (epoch 1)" in line
    assert "DataLoader worker" not in line  # a worker's wrapping (its whole traceback) is taken off
    trainer, spy = built[0]
    spy.check_closed(trainer)
    rows = list(csv.DictReader((run / "metrics.csv").read_text().splitlines()))
    assert [int(float(r["epoch"])) for r in rows] == [1]
    model, meta = ckpt.load_model_dir(run / "last")
    assert meta["epoch"] == 1 and model(torch.zeros(1, 3, 32, 32)).shape == (1, 3)
