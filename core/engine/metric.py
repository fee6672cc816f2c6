"""The metric seam: a kit's metric accumulates tensors that sum across ranks, or per-sample results gathered from
every rank (mmengine's ``collect_results``), before ``compute()``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import torch


class Metric(ABC):
    """Accumulates predictions and targets; ``compute()`` turns the state into named numbers.

    A subclass keeps its state in one or both of two forms, so that a distributed run computes the
    single-process number:

    - ``self.state``: tensors that add up across batches (a confusion matrix, correct counts), reduced with one
      ``all_reduce(SUM)`` each;
    - ``self.results``: one picklable entry per sample (an image's detections and ground truth), gathered from
      every rank before ``compute()`` (COCO mAP needs every image at once).

    Attributes:
        main_indicator: the key of ``compute()`` that decides the best checkpoint and early stopping.
        higher_is_better: whether a larger main indicator is better.
        tie_breaker: a second key of ``compute()`` that decides between results equal on the main indicator
            (a saturated accuracy, say: the later epoch becomes best only if it is better on this one); ``None``:
            ties keep the earlier result.
        tie_breaker_higher_is_better: whether a larger tie breaker is better (a loss: no).
        full_scale: the main indicator's value for a perfect result: 100 for a percentage (the default), 1 for a
            fraction (mAP, mIoU). Export tolerances are stated in points, hundredths of it.
    """

    main_indicator: str = "loss"
    higher_is_better: bool = True
    full_scale: float = 100.0
    tie_breaker: str | None = None
    tie_breaker_higher_is_better: bool = False

    def __init__(self) -> None:
        self.state: dict[str, torch.Tensor] = {}
        self.results: list[Any] = []
        self.reset()

    @abstractmethod
    def reset(self) -> None:
        """Clear the accumulated state."""

    @abstractmethod
    def update(self, outputs: Any, batch: Any) -> None:
        """Add one batch (the task's validation outputs and the batch they came from)."""

    @abstractmethod
    def compute(self) -> dict[str, Any]:
        """Named results; ``self.main_indicator`` must be among them and be a float."""

    def synchronize(self, all_reduce_sum: Callable[[torch.Tensor], torch.Tensor],
                    all_gather: Callable[[Any], list[Any]]) -> None:
        """Make every rank hold the whole evaluation: sum ``state`` and gather ``results`` across ranks.

        Args:
            all_reduce_sum: ``tensor -> tensor`` summed over ranks.
            all_gather: ``object -> [object of rank 0, of rank 1, ...]``.

        Gathered results are ordered by rank; a metric whose ``compute()`` depends on the order sorts them
        (by an image id, say).
        """
        self.state = {k: all_reduce_sum(v) for k, v in self.state.items()}
        self.results = [item for part in all_gather(self.results) for item in part]

    def rank(self, results: dict[str, Any]) -> list[float]:
        """What orders results, larger better: the main indicator, then the tie breaker, each signed."""
        key = [float(results[self.main_indicator]) * (1.0 if self.higher_is_better else -1.0)]
        if self.tie_breaker is not None and self.tie_breaker in results:
            key.append(float(results[self.tie_breaker]) * (1.0 if self.tie_breaker_higher_is_better else -1.0))
        return key
