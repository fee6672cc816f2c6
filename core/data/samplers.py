"""Batch samplers the loop and the kits share: resumable training batches and batches grouped by a key.

:class:`ResumableBatchSampler` lets the Trainer continue an epoch where a checkpoint left it: the order of an
epoch depends only on ``(seed, epoch)``, so skipping the batches already done (their indices only, nothing is
loaded) gives the rest of the same epoch. :class:`GroupedBatchSampler` puts only samples of one group in a batch
(images of one size, one aspect-ratio bin), so that no sample is padded because of what it is batched with.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable, Iterator, Sequence

from torch.utils.data import Sampler


class ResumableBatchSampler(Sampler[list[int]]):
    """The batches of ``batches``; :meth:`skip` drops the first ``n`` of the next pass (a mid-epoch resume).

    Args:
        batches: any batch sampler (``torch.utils.data.BatchSampler``, a kit's grouped or multi-scale one).
    """

    def __init__(self, batches: Iterable[list[int]]) -> None:
        self.batches = batches
        self._skip = 0

    def skip(self, n: int) -> None:
        """Leave out the first ``n`` batches of the next pass only."""
        self._skip = max(0, int(n))

    def set_epoch(self, epoch: int) -> None:
        """Forward the epoch to the inner batch sampler when it wants it."""
        if hasattr(self.batches, "set_epoch"):
            self.batches.set_epoch(epoch)

    def __iter__(self) -> Iterator[list[int]]:
        skip, self._skip = self._skip, 0
        return itertools.islice(iter(self.batches), skip, None)

    def __len__(self) -> int:
        return len(self.batches)  # type: ignore[arg-type]


class GroupedBatchSampler(Sampler[list[int]]):
    """Batches of up to ``batch_size`` indices that share a group (``groups[index]``), in ``sampler``'s order.

    A batch is emitted as soon as its group has ``batch_size`` indices; the incomplete batch of each group
    follows at the end (unless ``drop_last``), in the order the groups first appeared. With one group this is a
    plain ``BatchSampler``.

    Args:
        sampler: the index order (sequential, shuffled, sharded per rank).
        groups: a hashable group key per dataset index (an image size, an aspect-ratio bin).
        batch_size: most indices per batch.
        drop_last: drop each group's incomplete last batch.
    """

    def __init__(self, sampler: Sampler[int] | Iterable[int], groups: Sequence[Hashable], batch_size: int,
                 drop_last: bool = False) -> None:
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.sampler, self.groups = sampler, groups
        self.batch_size, self.drop_last = int(batch_size), bool(drop_last)

    def set_epoch(self, epoch: int) -> None:
        """Forward the epoch to the index sampler (a shuffled training order)."""
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator[list[int]]:
        pending: dict[Hashable, list[int]] = {}
        for index in self.sampler:
            bucket = pending.setdefault(self.groups[index], [])
            bucket.append(index)
            if len(bucket) == self.batch_size:
                yield list(bucket)
                bucket.clear()
        if not self.drop_last:
            yield from (bucket for bucket in pending.values() if bucket)

    def __len__(self) -> int:
        counts: dict[Hashable, int] = {}
        for index in self.sampler:
            counts[self.groups[index]] = counts.get(self.groups[index], 0) + 1
        if self.drop_last:
            return sum(c // self.batch_size for c in counts.values())
        return sum(-(-c // self.batch_size) for c in counts.values())
