"""PaddleOCR's multi-scale recognition sampler: each training batch is padded to one width drawn from a set, with
a batch size that keeps the pixels per batch about constant (wider lines, fewer of them)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from torch.utils.data import Sampler


class MultiScaleBatchSampler(Sampler[list[tuple[int, int]]]):
    """Batches of ``(index, width)`` pairs: one width per batch, ``batch_size * base_width / width`` lines.

    Args:
        sampler: the index order (the Trainer's: shuffled and sharded in training).
        widths: the padded widths to draw from (multiples of 8 for PP-OCR's stride).
        batch_size: lines per batch at ``base_width``.
        base_width: the width ``batch_size`` refers to (default: the middle of ``widths``).
        drop_last: drop the incomplete last batch.
        seed: the width draws' seed (with the epoch).
    """

    def __init__(self, sampler: Sampler[int], widths: Sequence[int], batch_size: int, *, base_width: int | None = None,
                 drop_last: bool = False, seed: int = 0) -> None:
        if not widths or any(w < 8 for w in widths):
            raise ValueError(f"widths={list(widths)} must be a non-empty list of widths of at least 8")
        self.sampler, self.widths = sampler, [int(w) for w in widths]
        self.batch_size, self.drop_last, self.seed, self.epoch = int(batch_size), bool(drop_last), int(seed), 0
        self.base_width = int(base_width or sorted(self.widths)[len(self.widths) // 2])

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def _size(self, width: int) -> int:
        return max(1, round(self.batch_size * self.base_width / width))

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        rng = random.Random(self.seed * 1_000_003 + self.epoch)
        width = rng.choice(self.widths)
        batch: list[tuple[int, int]] = []
        for index in self.sampler:
            batch.append((int(index), width))
            if len(batch) == self._size(width):
                yield batch
                batch = []
                width = rng.choice(self.widths)
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        return sum(1 for _ in self)
