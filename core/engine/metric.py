"""The metric seam: a kit's metric accumulates tensor state that sums across batches and ranks."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch


class Metric(ABC):
    """Accumulates predictions and targets; ``compute()`` turns the state into named numbers.

    Subclasses keep their whole state in ``self.state`` as tensors that add up across batches, so a
    distributed run reduces them with one ``all_reduce(SUM)`` each and gets the single-process number.

    Attributes:
        main_indicator: the key of ``compute()`` that decides the best checkpoint and early stopping.
        higher_is_better: whether a larger main indicator is better.
        tie_breaker: a second key of ``compute()`` that decides between results equal on the main indicator
            (a saturated accuracy, say: the later epoch becomes best only if it is better on this one); ``None``:
            ties keep the earlier result.
        tie_breaker_higher_is_better: whether a larger tie breaker is better (a loss: no).
    """

    main_indicator: str = "loss"
    higher_is_better: bool = True
    tie_breaker: str | None = None
    tie_breaker_higher_is_better: bool = False

    def __init__(self) -> None:
        self.state: dict[str, torch.Tensor] = {}
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

    def reduce(self, all_reduce_sum) -> None:
        """Sum the state across ranks with the given ``all_reduce_sum(tensor) -> tensor``."""
        self.state = {k: all_reduce_sum(v) for k, v in self.state.items()}

    def rank(self, results: dict[str, Any]) -> list[float]:
        """What orders results, larger better: the main indicator, then the tie breaker, each signed."""
        key = [float(results[self.main_indicator]) * (1.0 if self.higher_is_better else -1.0)]
        if self.tie_breaker is not None and self.tie_breaker in results:
            key.append(float(results[self.tie_breaker]) * (1.0 if self.tie_breaker_higher_is_better else -1.0))
        return key
