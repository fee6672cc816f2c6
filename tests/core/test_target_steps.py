"""``trainer.target_steps`` and ``scheduler.warmup_fraction``: a run whose length follows the dataset size."""

from __future__ import annotations

import pytest
import torch

from oarkit.core.engine.schedule import WarmupLR
from oarkit.core.engine.trainer import fitted_epochs
from oarkit.core.errors import ConfigError


def test_the_epochs_give_about_the_target_steps_within_the_cap() -> None:
    assert fitted_epochs(3000, 45) == 67  # a small set: many epochs
    assert fitted_epochs(3000, 2000) == 2  # a large one: few
    assert fitted_epochs(10, 2000) == 1  # never none
    assert fitted_epochs(3000, 45, cap=50) == 50


def test_a_run_fits_its_epochs_and_schedule_to_the_data(tmp_path, toy) -> None:
    # BlobData: 4 optimizer steps per epoch; 22 steps are about 6 epochs (24 steps), the schedule spans them
    seen = {}

    def scheduler(opt, **kw):
        seen.update(kw)
        return WarmupLR(opt, decay="linear", warmup_fraction=0.25, **kw)

    trainer = toy.make_trainer(tmp_path, max_epochs=None, target_steps=22, scheduler=scheduler)
    trainer.setup()
    assert trainer.max_epochs == 6 and seen["total_steps"] == 24
    assert trainer.scheduler.lr_lambdas[0].warmup == 6  # a quarter of the run
    assert trainer.fit()["epochs_run"] == 6 and trainer.global_step == 24


def test_max_epochs_caps_the_fitted_length(tmp_path, toy) -> None:
    trainer = toy.make_trainer(tmp_path, max_epochs=3, target_steps=400)
    trainer.setup()
    assert trainer.max_epochs == 3


def test_target_steps_with_max_iters_is_refused(tmp_path, toy) -> None:
    with pytest.raises(ConfigError, match="target_steps=100 fits the epochs.*max_iters=50"):
        toy.make_trainer(tmp_path, max_epochs=None, max_iters=50, target_steps=100)
    with pytest.raises(ConfigError, match="target_steps must be a whole number of at least 1"):
        toy.make_trainer(tmp_path, max_epochs=None, target_steps=0)


def test_warmup_is_given_in_one_unit() -> None:
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    with pytest.raises(ConfigError, match="warmup_epochs=1 and scheduler.warmup_fraction=0.1"):
        WarmupLR(opt, steps_per_epoch=10, max_epochs=5, warmup_epochs=1, warmup_fraction=0.1)
    with pytest.raises(ConfigError, match="warmup_fraction is a fraction of the run"):
        WarmupLR(opt, steps_per_epoch=10, max_epochs=5, warmup_fraction=1.5)
    assert WarmupLR(opt, steps_per_epoch=10, max_epochs=5, warmup_fraction=0.1).lr_lambdas[0].warmup == 5


def test_a_fractional_warmup_keeps_its_fraction_when_the_time_limit_stretches_the_run() -> None:
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    fractional = WarmupLR(opt, steps_per_epoch=10, max_epochs=30, warmup_fraction=0.1)
    fixed = WarmupLR(opt, steps_per_epoch=10, max_epochs=30, warmup_iters=30)
    for schedule in (fractional, fixed):
        schedule.set_total_steps(100)
    assert fractional.lr_lambdas[0].warmup == 10 and fixed.lr_lambdas[0].warmup == 30
