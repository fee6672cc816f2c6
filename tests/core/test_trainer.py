"""The Trainer's mechanics on a toy task: precision, accumulation, EMA, early stopping, NaN guard, resume."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from oarkit.core.engine import checkpoint as ckpt
from oarkit.core.engine.callbacks import Callback
from oarkit.core.engine.schedule import WarmupLR
from oarkit.core.errors import ConfigError, TrainingError

HERE = Path(__file__).parent


def _weights(path: Path) -> dict[str, torch.Tensor]:
    return load_file(str(ckpt.resolve_dir(path) / ckpt.MODEL_FILE))


def test_fit_writes_self_describing_run_directory(trainer_factory, tmp_path):
    trainer = trainer_factory(max_epochs=3, tensorboard=True)
    summary = trainer.fit()
    run = tmp_path / "run"
    for sub in ("best", "last"):
        assert {p.name for p in (run / sub).iterdir()} >= {"model.safetensors", "meta.json", "config.yaml"}
    assert (run / "last" / "trainer_state.pt").exists() and not (run / "best" / "trainer_state.pt").exists()
    meta = json.loads((run / "last" / "meta.json").read_text())
    assert meta["task"] == "toy" and meta["epoch"] == 3 and meta["main_indicator"] == "acc"
    assert set(meta["versions"]) >= {"torch", "python"}
    rows = list(csv.DictReader((run / "metrics.csv").read_text().splitlines()))
    assert [int(float(r["epoch"])) for r in rows] == [1, 2, 3] and "val_acc" in rows[0]
    assert (run / "curves.png").stat().st_size > 10_000
    assert any((run / "tensorboard").iterdir())
    assert summary["best_metric"] == max(float(r["val_acc"]) for r in rows) > 80.0
    assert float(rows[-1]["train_loss"]) < float(rows[0]["train_loss"])


def test_bf16_autocasts_and_trains(trainer_factory):
    trainer = trainer_factory(precision="bf16", max_epochs=2)
    trainer.fit()
    assert torch.bfloat16 in trainer.task.autocast_dtypes
    assert not trainer.precision.scaler.is_enabled()
    assert trainer.best_metric > 60.0


def test_auto_precision_is_bf16_only_where_the_hardware_computes_it(trainer_factory, monkeypatch):
    from oarkit.core.engine import precision

    for native, expected in ((True, "bf16"), (False, "fp32")):
        monkeypatch.setattr(precision, "native_bf16", lambda device, native=native: native)
        trainer = trainer_factory(precision="auto", max_epochs=1)
        assert trainer.precision.name == expected
        assert not trainer.precision.scaler.is_enabled()


def test_fp16_uses_a_grad_scaler(trainer_factory):
    trainer = trainer_factory(precision="fp16", max_epochs=1)
    assert trainer.precision.scaler.is_enabled()


def test_bad_trainer_values_fail_with_the_key(trainer_factory):
    with pytest.raises(ConfigError, match="trainer.precision='fp8'.*bf16"):
        trainer_factory(precision="fp8")
    with pytest.raises(ConfigError, match="accumulate_grad_batches"):
        trainer_factory(accumulate_grad_batches=0)
    with pytest.raises(ConfigError, match="no CUDA device"):
        trainer_factory(device="cuda") if not torch.cuda.is_available() else (_ for _ in ()).throw(
            ConfigError("no CUDA device (skipped on a GPU machine)"))


def test_accumulation_equals_large_batch(tmp_path, toy):
    def run(batch, accumulate, sub):
        t = toy.make_trainer(tmp_path / sub, task=toy.ToyTask(norm=False, dropout=0.0),
                             data=toy.BlobData(n=128, batch_size=batch), accumulate_grad_batches=accumulate,
                             max_epochs=2,
                         optimizer=lambda p: torch.optim.SGD(p, lr=0.1))
        t.fit()
        return t.model.state_dict()

    big, small = run(16, 1, "a"), run(8, 2, "b")
    for k in big:
        torch.testing.assert_close(big[k], small[k], rtol=1e-5, atol=1e-6)


def test_ema_is_what_gets_evaluated_and_saved(trainer_factory, tmp_path):
    trainer = trainer_factory(ema_decay=0.9, max_epochs=2)
    trainer.fit()
    saved = _weights(tmp_path / "run" / "last")
    ema = trainer.ema.module.state_dict()
    raw = trainer.model.state_dict()
    assert all(torch.equal(saved[k], ema[k]) for k in saved)
    assert any(not torch.equal(ema[k], raw[k]) for k in raw if raw[k].dtype.is_floating_point)
    assert json.loads((tmp_path / "run" / "last" / "meta.json").read_text())["weights"] == "ema"


def test_early_stopping_stops_when_the_metric_stalls(trainer_factory):
    trainer = trainer_factory(max_epochs=10, early_stopping_patience=2,
                              optimizer=lambda p: torch.optim.SGD(p, lr=0.0))
    trainer.fit()
    assert len(trainer.history) == 3  # the first evaluation sets the best; two more without improvement


def test_early_stopping_waits_for_its_start_fraction_of_the_run(trainer_factory):
    # a stalled metric counts from 60 % of the run on (epochs 6 and 7 of 10), not before (2 to 5)
    trainer = trainer_factory(max_epochs=10, early_stopping_patience=2, early_stopping_start=0.6,
                              optimizer=lambda p: torch.optim.SGD(p, lr=0.0))
    trainer.fit()
    assert len(trainer.history) == 7
    with pytest.raises(ConfigError, match=r"early_stopping_start is a fraction of the run in \[0, 1\), got 1.5"):
        trainer_factory(max_epochs=2, early_stopping_patience=2, early_stopping_start=1.5)
    with pytest.raises(ConfigError, match=r"early_stopping_patience=0 must be at least 1 .*patience=null turns early"):
        trainer_factory(max_epochs=2, early_stopping_patience=0)


def test_tie_breaker_decides_between_equal_main_indicators(tmp_path, toy):
    """Accuracy saturates at 100 on the blobs; the later, better-fitted epoch becomes best through its loss."""

    class AccuracyThenLoss(toy.Accuracy):
        tie_breaker = "loss"

        def reset(self) -> None:
            super().reset()
            self.state["loss_sum"] = torch.zeros((), dtype=torch.float64)

        def update(self, outputs, batch) -> None:
            super().update(outputs, batch)
            self.state["loss_sum"] += torch.nn.functional.cross_entropy(outputs, batch[1], reduction="sum").double()

        def compute(self):
            return {**super().compute(), "loss": float(self.state["loss_sum"]) / max(1, int(self.state["total"]))}

    class Task(toy.ToyTask):
        def build_metric(self):
            return AccuracyThenLoss()

    trainer = toy.make_trainer(tmp_path, task=Task(dropout=0.0), max_epochs=6)
    trainer.fit()
    rows = trainer.history
    top = max(r["val_acc"] for r in rows)
    tied = [i for i, r in enumerate(rows) if r["val_acc"] == top]
    assert len(tied) >= 3, rows  # the case under test: the accuracy plateaus
    best = min(tied, key=lambda i: rows[i]["val_loss"])
    assert best != tied[0] and trainer.best_epoch == best + 1 and trainer.best_metric == top
    meta = json.loads((tmp_path / "run" / "best" / "meta.json").read_text())
    assert meta["epoch"] == trainer.best_epoch


def test_keep_last_keeps_n_epoch_directories(trainer_factory, tmp_path):
    trainer_factory(max_epochs=4, keep_last=2).fit()
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir()) == ["epoch_0003", "epoch_0004"]


def test_nan_guard_stops_and_keeps_the_last_good_checkpoint(tmp_path, toy):
    steps_per_epoch = len(toy.BlobData().train) // 16
    trainer = toy.make_trainer(tmp_path, task=toy.ToyTask(nan_at_step=steps_per_epoch + 2), max_epochs=3)
    with pytest.raises(TrainingError, match=r"epoch 2, batch 2: the loss is nan.*last good checkpoint.*epoch 1"):
        trainer.fit()
    meta = ckpt.read_meta(tmp_path / "run" / "last")
    assert meta["epoch"] == 1
    state = _weights(tmp_path / "run" / "last")
    assert all(torch.isfinite(v).all() for v in state.values() if v.dtype.is_floating_point)
    assert (tmp_path / "run" / "curves.png").exists()


class StopAfterFirstEpoch(Callback):
    def on_train_epoch_end(self, trainer, row):
        trainer.should_stop = True


def test_resume_is_bit_exact(tmp_path, toy):
    common = dict(deterministic=True, seed=3, ema_decay=0.8,
                  scheduler=lambda o, **kw: WarmupLR(o, warmup_epochs=1, **kw))
    straight = toy.make_trainer(tmp_path / "a", max_epochs=2, **common)
    straight.fit()
    first = toy.make_trainer(tmp_path / "b", max_epochs=2, callbacks=[StopAfterFirstEpoch()], **common)
    first.fit()  # an interrupted run: epoch 1 checkpointed, then the process went away
    assert ckpt.read_meta(tmp_path / "b" / "run" / "last")["epoch"] == 1
    resumed = toy.make_trainer(tmp_path / "b", max_epochs=2, resume=True, **common)
    resumed.fit()
    for k, v in straight.model.state_dict().items():
        assert torch.equal(v, resumed.model.state_dict()[k]), k
    for k, v in straight.ema.module.state_dict().items():
        assert torch.equal(v, resumed.ema.module.state_dict()[k]), k
    assert [r["epoch"] for r in resumed.history] == [1, 2]
    assert resumed.history[1]["train_loss"] == straight.history[1]["train_loss"]


def test_interrupted_directory_swap_leaves_the_previous_checkpoint(tmp_path):
    target = tmp_path / "last"
    ckpt.write_model_dir(target, weights={"w": torch.ones(2)}, meta={"epoch": 1}, config_yaml="a: 1\n")
    # A kill between the two renames of the next write leaves only the hidden previous copy.
    os.rename(target, tmp_path / ".last.old")
    assert ckpt.resolve_dir(target) == tmp_path / ".last.old"
    assert ckpt.read_meta(target)["epoch"] == 1
    ckpt.write_model_dir(target, weights={"w": torch.zeros(2)}, meta={"epoch": 2}, config_yaml="a: 2\n")
    assert ckpt.read_meta(target)["epoch"] == 2 and not (tmp_path / ".last.old").exists()


KILL_SCRIPT = """
import importlib.util, os, signal, sys
spec = importlib.util.spec_from_file_location("toy_conftest", {conftest!r})
toy = importlib.util.module_from_spec(spec); spec.loader.exec_module(toy)
from pathlib import Path
import safetensors.torch
from oarkit.core.engine import checkpoint

real_save = safetensors.torch.save_file
calls = []
def dying_save(tensors, filename, metadata=None):
    calls.append(filename)
    if len(calls) == 3:  # 1, 2: epoch 1 best/ and last/; 3: epoch 2 last/ (lr=0 never improves on best)
        with open(filename, "wb") as f:
            f.write(b"half a checkpoint")
        os.kill(os.getpid(), signal.SIGKILL)
    real_save(tensors, filename, metadata=metadata)
checkpoint.save_file = dying_save
toy.make_trainer(Path({tmp!r}), max_epochs=3, optimizer=lambda p: __import__("torch").optim.SGD(p, lr=0.0)).fit()
"""


def test_kill_during_checkpoint_write_keeps_the_previous_checkpoint(tmp_path, toy):
    script = KILL_SCRIPT.format(conftest=str(HERE / "conftest.py"), tmp=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == -9, proc.stderr[-2000:]
    last = tmp_path / "run" / "last"
    assert ckpt.read_meta(last)["epoch"] == 1
    assert ckpt.read_train_state(last)["epoch"] == 1
    assert _weights(last)
    resumed = toy.make_trainer(tmp_path, max_epochs=2, resume=True)
    resumed.fit()
    assert ckpt.read_meta(last)["epoch"] == 2


def test_warmup_schedule_shapes():
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    sched = WarmupLR(opt, steps_per_epoch=10, max_epochs=10, warmup_epochs=1, warmup_start_factor=0.1)
    lrs = []
    for _ in range(100):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[0] == pytest.approx(0.1) and lrs[10] == pytest.approx(1.0)
    assert lrs[55] == pytest.approx(0.5, abs=0.02) and lrs[-1] < 0.01
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    step = WarmupLR(opt, steps_per_epoch=1, max_epochs=10, decay="step", milestones=[3, 6], gamma=0.5)
    seen = []
    for _ in range(8):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        step.step()
    assert seen == [1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25]
    with pytest.raises(ConfigError, match="cosine"):
        WarmupLR(opt, steps_per_epoch=1, max_epochs=1, decay="cosin")


def test_compile_matches_eager(tmp_path, toy):
    def run(compile_, sub):
        t = toy.make_trainer(tmp_path / sub, task=toy.ToyTask(norm=False, dropout=0.0), data=toy.BlobData(),
                         compile=compile_, max_epochs=1, optimizer=lambda p: torch.optim.SGD(p, lr=0.1))
        t.fit()
        return t

    eager, compiled = run(False, "eager"), run(True, "compiled")
    assert compiled.train_model is not compiled.model
    for k, v in eager.model.state_dict().items():
        torch.testing.assert_close(v, compiled.model.state_dict()[k], rtol=1e-4, atol=1e-5)
    x = torch.randn(5, 8)
    torch.testing.assert_close(compiled.train_model(x), eager.model(x), rtol=1e-4, atol=1e-5)


def test_task_parameter_groups_with_lr_scale(tmp_path, toy):
    class LayerwiseTask(toy.ToyTask):
        def parameter_groups(self, model, *, decay_norm_and_bias=False):
            assert decay_norm_and_bias is True  # the Trainer passes trainer.decay_norm_and_bias on
            first, *rest = list(model.children())
            return [{"params": list(first.parameters()), "lr_scale": 0.5},
                    {"params": [p for m in rest for p in m.parameters()]}]

    trainer = toy.make_trainer(tmp_path, task=LayerwiseTask(), max_epochs=1, decay_norm_and_bias=True)
    trainer.setup()
    assert [g["lr"] for g in trainer.optimizer.param_groups] == [0.05, 0.1]
    assert all("lr_scale" not in g for g in trainer.optimizer.param_groups)
