"""Runs counted in iterations (``trainer.max_iters``) on the toy task: mid-epoch stops, intervals, exact resume."""

from __future__ import annotations

import csv
import functools
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
from oarkit.core.errors import ConfigError

HERE = Path(__file__).parent
BATCHES_PER_EPOCH = 4  # BlobData(n=96): 72 training samples in batches of 16, the incomplete one dropped


@pytest.fixture
def trainer_factory(tmp_path, toy):
    """The toy trainer of conftest, counting iterations unless a test says otherwise."""
    return lambda **kw: toy.make_trainer(tmp_path, **{"max_epochs": None, **kw})


def build(toy, root: Path, **kwargs):
    """The trainer of the resume test, built the same way here and in the process that gets killed."""
    common = dict(max_epochs=None, max_iters=14, eval_every_iters=3, deterministic=True, seed=5, ema_decay=0.8,
                  scheduler=functools.partial(WarmupLR, decay="poly", warmup_iters=3))
    return toy.make_trainer(root, **{**common, **kwargs})


class LRs(Callback):
    def __init__(self) -> None:
        self.lrs: list[float] = []

    def on_optimizer_step(self, trainer) -> None:
        self.lrs.append(trainer.current_lr)


def test_stops_at_max_iters_in_the_middle_of_an_epoch(trainer_factory, tmp_path):
    trainer = trainer_factory(max_iters=10)
    summary = trainer.fit()
    assert trainer.global_step == 10 and trainer.batches_per_epoch == BATCHES_PER_EPOCH
    assert trainer.max_epochs == 3  # 10 steps span epochs 1, 2 and 3 (two of its four batches)
    assert [(r["epoch"], r["iter"]) for r in trainer.history] == [(3, 10)]  # no interval: one row, at the end
    assert "val_acc" in trainer.history[0] and summary["iters_run"] == 10 and summary["best_iter"] == 10
    state = ckpt.read_train_state(tmp_path / "run" / "last")
    assert (state["epoch"], state["batches_done"], state["global_step"]) == (2, 2, 10)
    assert ckpt.read_meta(tmp_path / "run" / "last")["global_step"] == 10


def test_evaluates_and_checkpoints_at_the_intervals(trainer_factory, tmp_path):
    trainer = trainer_factory(max_iters=10, eval_every_iters=4, checkpoint_every_iters=3, keep_last=2)
    trainer.fit()
    rows = trainer.history
    assert [r["iter"] for r in rows] == [3, 4, 6, 8, 9, 10]
    assert [r["iter"] for r in rows if "val_acc" in r] == [4, 8, 10]
    assert [r["epoch"] for r in rows] == [1, 1, 2, 2, 3, 3]
    assert all(r["interval_time_s"] >= 0 for r in rows)
    written = list(csv.DictReader((tmp_path / "run" / "metrics.csv").read_text().splitlines()))
    assert [int(float(r["iter"])) for r in written] == [3, 4, 6, 8, 9, 10]
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoints").iterdir()) == ["iter_0000009", "iter_0000010"]
    assert (tmp_path / "run" / "curves.png").exists()


def test_the_schedule_spans_max_iters(trainer_factory):
    lrs = LRs()
    trainer = trainer_factory(max_iters=11, callbacks=[lrs], accumulate_grad_batches=2,
                              optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
                              scheduler=functools.partial(WarmupLR, decay="poly", warmup_iters=2, power=1.0))
    trainer.fit()
    assert trainer.scheduler.lr_lambdas[0].total == 11 and trainer.scheduler.lr_lambdas[0].warmup == 2
    assert len(lrs.lrs) == 11 and lrs.lrs[-1] == pytest.approx(0.0, abs=1e-12)  # poly reaches 0 at max_iters
    assert lrs.lrs[1] == pytest.approx(0.1)  # after the two warm-up steps, the base LR
    assert all(a > b for a, b in zip(lrs.lrs[1:], lrs.lrs[2:]))  # then linear (power 1) decay every step
    assert trainer.history[-1]["epoch"] == 6  # 11 steps of 2 batches: 5.5 epochs of 4 batches


def test_warmup_iters_and_total_steps_of_the_schedule():
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    sched = WarmupLR(opt, steps_per_epoch=7, total_steps=20, decay="linear", warmup_iters=4, warmup_start_factor=0.2)
    lrs = []
    for _ in range(20):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[0] == pytest.approx(0.2) and lrs[4] == pytest.approx(1.0) and opt.param_groups[0]["lr"] == 0.0
    with pytest.raises(ConfigError, match="warmup_iters=2 and scheduler.warmup_epochs=1"):
        WarmupLR(opt, steps_per_epoch=7, max_epochs=3, warmup_iters=2, warmup_epochs=1)
    with pytest.raises(ConfigError, match="scheduler.warmup_iters"):
        WarmupLR(opt, steps_per_epoch=7, max_epochs=3, warmup_iters=-1)


KILL_SCRIPT = """
import importlib.util, os, signal, sys
from pathlib import Path

def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
    return module

toy = load("toy_conftest", {conftest!r})
tests = load("iters_tests", {tests!r})
import torch
from oarkit.core.engine.callbacks import Callback

torch.set_num_threads({threads})  # the test process's: float sums split the same way in both

class Kill(Callback):
    def on_checkpoint(self, trainer, path):
        if path.name == "last" and trainer.global_step == 6:  # step 6 of 14: epoch 2, after 2 of its 4 batches
            os.kill(os.getpid(), signal.SIGKILL)

tests.build(toy, Path({root!r}), callbacks=[Kill()]).fit()
"""


def test_resume_after_a_kill_mid_epoch_is_bit_exact(tmp_path, toy):
    straight = build(toy, tmp_path / "a")
    straight.fit()
    script = KILL_SCRIPT.format(conftest=str(HERE / "conftest.py"), tests=__file__, root=str(tmp_path / "b"),
                                threads=torch.get_num_threads())
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == -9, proc.stderr[-2000:]
    last = tmp_path / "b" / "run" / "last"
    state = ckpt.read_train_state(last)
    assert (state["epoch"], state["batches_done"], state["global_step"]) == (1, 2, 6)
    resumed = build(toy, tmp_path / "b", resume=True)
    resumed.fit()
    assert resumed.global_step == straight.global_step == 14
    for k, v in straight.model.state_dict().items():
        assert torch.equal(v, resumed.model.state_dict()[k]), k
    for k, v in straight.ema.module.state_dict().items():
        assert torch.equal(v, resumed.ema.module.state_dict()[k]), k
    saved = load_file(str(ckpt.resolve_dir(last) / ckpt.MODEL_FILE))
    assert all(torch.equal(saved[k], v) for k, v in straight.ema.module.state_dict().items())
    assert [r["iter"] for r in resumed.history] == [3, 6, 9, 12, 14]
    for a, b in zip(straight.history, resumed.history):
        assert {k: v for k, v in a.items() if not k.endswith("time_s")} == \
            {k: v for k, v in b.items() if not k.endswith("time_s")}


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(max_epochs=3, max_iters=100), r"trainer.max_epochs=3 and trainer.max_iters=100 are both set.*=null"),
    (dict(max_iters=0), r"trainer.max_iters must be a whole number of at least 1, got 0"),
    (dict(max_iters=-5), r"trainer.max_iters .* got -5"),
    (dict(max_iters=2.5), r"trainer.max_iters .* got 2.5"),
    (dict(max_epochs=0), r"trainer.max_epochs .* got 0"),
    (dict(max_iters=100, eval_every_iters=0), r"trainer.eval_every_iters .* got 0"),
    (dict(max_iters=100, checkpoint_every_iters=-1), r"trainer.checkpoint_every_iters .* got -1"),
    (dict(max_epochs=3, eval_every_iters=50), r"trainer.eval_every_iters=50 counts iterations.*trainer.max_iters"),
])
def test_bad_run_lengths_name_the_key(trainer_factory, kwargs, message):
    with pytest.raises(ConfigError, match=message):
        trainer_factory(**kwargs)


def test_a_recipe_with_both_lengths_fails_before_training(tmp_path):
    from oarkit.core.config import build_trainer, load_config

    cfg = load_config("seg/pp_liteseg_stdc1_shapes_256x256", ["trainer.max_epochs=2", f"output_dir={tmp_path}"])
    with pytest.raises(ConfigError, match="trainer.max_epochs=2 and trainer.max_iters=.* both set"):
        build_trainer(cfg)
