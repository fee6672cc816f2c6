"""The epoch switch of the assigners: a training callback that tells the model each epoch as it starts.

PP-YOLOE and PicoDet train with ATSS assignment for their first ``static_assigner_epoch`` epochs, then with the
task-aligned assigner; Paddle's trainer passes ``epoch_id`` into the loss. Here the detection task lists
:class:`AssignerEpochCallback` among its callbacks, which calls ``model.set_epoch(epoch)`` on the trained model and
on its EMA copy, so the trainer knows nothing of assigners.
"""

from __future__ import annotations

import logging
from typing import Any

from oarkit.core.engine.callbacks import Callback

logger = logging.getLogger(__name__)


class AssignerEpochCallback(Callback):
    """Call ``set_epoch(epoch)`` on the model (and its EMA copy) at the start of every training epoch."""

    all_ranks = True  # every rank assigns its own batch

    def on_train_epoch_start(self, trainer: Any, epoch: int) -> None:
        models = [trainer.model] + ([trainer.ema.module] if getattr(trainer, "ema", None) is not None else [])
        for model in models:
            set_epoch = getattr(model, "set_epoch", None)
            if callable(set_epoch):
                set_epoch(epoch)
        switch = getattr(trainer.model, "static_assigner_epoch", 0)
        if switch and epoch == switch:
            logger.info("epoch %d: label assignment switches from ATSS to the task-aligned assigner", epoch)
