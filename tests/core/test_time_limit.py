"""``trainer.time_limit``: the run fits its length and LR schedule to a wall-clock budget and stops cleanly.

The budget runs on a simulated clock that advances one second per optimizer step, so the tests are exact and
take no real time.
"""

from __future__ import annotations

import json

import pytest

from oarkit.core.engine.callbacks import Callback
from oarkit.core.engine.schedule import WarmupLR
from oarkit.core.errors import ConfigError


class SimulatedClock(Callback):
    """One simulated second per optimizer step; ``stop_at`` steps ends the session early (as a kill would)."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.now = 0.0
        self.stop_at = stop_at

    def __call__(self) -> float:
        return self.now

    def on_optimizer_step(self, trainer) -> None:
        self.now += 1.0
        if self.stop_at is not None and trainer.global_step >= self.stop_at:
            trainer.should_stop = True


def _budgeted(toy, tmp_path, *, clock: SimulatedClock, **kwargs):
    scheduler = lambda opt, **kw: WarmupLR(opt, decay="linear", warmup_iters=2, min_lr_ratio=0.0, **kw)  # noqa: E731
    trainer = toy.make_trainer(tmp_path, scheduler=scheduler, callbacks=[clock], **kwargs)
    trainer.time_budget.clock = clock
    return trainer


def test_an_epoch_run_trains_for_the_budget_and_ends_its_schedule_there(tmp_path, toy):
    clock = SimulatedClock()
    # 4 steps per epoch, 30 s of budget: 7.5 epochs fit, whatever max_epochs says; the time stop ends the 8th
    trainer = _budgeted(toy, tmp_path, clock=clock, max_epochs=100, time_limit=0.5)
    summary = trainer.fit()
    assert trainer.global_step == 30 and summary["epochs_run"] == 8
    assert trainer._schedule_total() == 30
    assert trainer.current_lr == pytest.approx(0.0, abs=1e-9)  # the decay reached its end with the budget
    assert [row["iter"] for row in trainer.history] == [4, 8, 12, 16, 20, 24, 28, 30]
    assert all("val_acc" in row for row in trainer.history)
    meta = json.loads((tmp_path / "run" / "last" / "meta.json").read_text())
    assert meta["epoch"] == 8 and meta["global_step"] == 30
    assert (tmp_path / "run" / "best" / "model.safetensors").exists()


def test_an_iteration_run_stops_mid_interval_with_an_evaluation(tmp_path, toy):
    clock = SimulatedClock()
    trainer = _budgeted(toy, tmp_path, clock=clock, max_epochs=None, max_iters=1000, eval_every_iters=7,
                        time_limit=25 / 60)
    trainer.fit()
    assert trainer.global_step == 25 and trainer.max_iters == 25
    assert [row["iter"] for row in trainer.history] == [7, 14, 21, 25]
    assert "val_acc" in trainer.history[-1]
    assert trainer.current_lr == pytest.approx(0.0, abs=1e-9)


def test_a_budget_longer_than_the_configured_run_lengthens_it(tmp_path, toy):
    """The budget wins over max_epochs both ways: a run of 2 epochs grows to what 60 s allow."""
    clock = SimulatedClock()
    trainer = _budgeted(toy, tmp_path, clock=clock, max_epochs=2, time_limit=1.0)
    trainer.fit()
    assert trainer.global_step == 60 and trainer.max_epochs == 15


def test_a_resumed_run_spends_only_the_rest_of_its_budget(tmp_path, toy):
    first = _budgeted(toy, tmp_path, clock=SimulatedClock(stop_at=12), max_epochs=100, time_limit=0.5)
    first.fit()
    assert first.global_step == 12
    state_used = first.time_budget.used
    assert state_used == pytest.approx(12.0)
    resumed = _budgeted(toy, tmp_path, clock=SimulatedClock(), max_epochs=100, time_limit=0.5, resume=True)
    resumed.fit()
    assert resumed.global_step == 30  # 12 before, 18 after: 30 s in all
    assert resumed.time_budget.used == pytest.approx(30.0)


@pytest.mark.parametrize("bad", [0, -1, True])
def test_a_time_limit_that_is_not_positive_is_refused(tmp_path, toy, bad):
    with pytest.raises(ConfigError, match="trainer.time_limit"):
        toy.make_trainer(tmp_path, time_limit=bad)
