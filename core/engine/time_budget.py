"""A wall-clock budget for a training run (``trainer.time_limit``, Ultralytics' ``time=``).

The run trains for the budget instead of a fixed length: its length in optimizer steps is re-estimated from the
measured pace (evaluations included) as it goes, the LR schedule is stretched or shrunk to that length so that
warm-up and decay still fit the run, and training stops cleanly (evaluation, ``best/`` and ``last/``) when the
time is up. The time used so far travels with resumable checkpoints, so a resumed run spends only the rest.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

#: fractions of the budget at which the run length is re-estimated (besides every history row)
REFIT_EVERY = 0.05


class TimeBudget:
    """Tracks a run's wall-clock budget and fits the run length to it.

    Args:
        minutes: the budget of the whole run (resumes included), in minutes.
        clock: seconds from an arbitrary origin (``time.perf_counter``; tests give a simulated one).
    """

    def __init__(self, minutes: float, clock: Callable[[], float] = time.perf_counter) -> None:
        self.seconds = float(minutes) * 60.0
        self.clock = clock
        self.used_before = 0.0  # seconds spent by earlier sessions of a resumed run
        self._started: float | None = None
        self._steps_at_start = 0
        self._last_refit = 0.0
        self._last_eval_s = 0.0
        self._warned_fixed_schedule = False

    # ----------------------------------------------------------------- time
    def start(self, global_step: int) -> None:
        """The loop of this session starts at ``global_step``."""
        self._started = self.clock()
        self._steps_at_start = int(global_step)
        self._last_refit = 0.0

    @property
    def used(self) -> float:
        """Seconds spent by the run so far, earlier sessions included."""
        now = 0.0 if self._started is None else self.clock() - self._started
        return self.used_before + now

    @property
    def left(self) -> float:
        return self.seconds - self.used

    def expired(self) -> bool:
        """Whether the time is up, keeping back what the final evaluation is expected to take."""
        return self.left <= self._last_eval_s

    def record_evaluation(self, seconds: float) -> None:
        """How long an evaluation took (the final one is reserved from the budget)."""
        self._last_eval_s = float(seconds)

    # ----------------------------------------------------------------- the run length
    def refit_due(self) -> bool:
        """Whether enough of the budget has passed since the last estimate to estimate again."""
        return self.used - self._last_refit >= REFIT_EVERY * self.seconds

    def fitted_steps(self, global_step: int) -> int | None:
        """The run length in optimizer steps that the pace measured in this session fits into the budget;
        ``None`` until a step has been measured."""
        done_here = int(global_step) - self._steps_at_start
        if self._started is None or done_here < 1:
            return None
        self._last_refit = self.used
        pace = (self.clock() - self._started) / done_here  # seconds per step, evaluations included
        steps_left = max(0.0, self.left - self._last_eval_s) / pace
        return max(int(global_step) + 1, int(global_step + math.floor(steps_left)))

    def stretch(self, scheduler: Any, total_steps: int) -> None:
        """Set the LR schedule's length to ``total_steps`` when the schedule can be stretched."""
        if scheduler is None:
            return
        if hasattr(scheduler, "set_total_steps"):
            scheduler.set_total_steps(int(total_steps))
        elif not self._warned_fixed_schedule:
            self._warned_fixed_schedule = True
            logger.warning("trainer.time_limit: the LR schedule %s cannot be stretched to the time budget; it keeps "
                           "the length of the configured run (use oarkit.core.engine.schedule.WarmupLR)",
                           type(scheduler).__name__)

    # ----------------------------------------------------------------- resume
    def state_dict(self) -> dict[str, float]:
        return {"used_s": self.used}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.used_before = float(state.get("used_s", 0.0))
