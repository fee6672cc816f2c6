"""Length bucketing: batches of similar lengths, so dynamic padding pads little, in a fresh order every epoch.

The Trainer builds its loaders from a dataset and a batch size; a dataset of *batches* fits that seam without a
custom sampler: each item of :class:`LengthBucketedBatches` is one batch (a list of features) and the loader's
batch size is 1. Every epoch the features are shuffled with ``(seed, epoch)``, cut into pools of
``pool_batches`` batches, sorted by length within each pool and split into batches (the "sorted pool" scheme of
fairseq and AllenNLP), so batches stay random while their members are alike. The number of batches never changes,
so schedules and resume see the same epoch length.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from torch.utils.data import Dataset


class LengthBucketedBatches(Dataset):
    """Batches of length-sorted features.

    Args:
        features: the feature dicts, each with a ``length``.
        batch_size: features per batch.
        shuffle: reshuffle every epoch (training); otherwise one fixed order, sorted by length (evaluation).
        seed: the shuffling seed.
        pool_batches: batches per sorting pool (larger: less padding, less randomness).
    """

    def __init__(self, features: Sequence[dict[str, Any]], batch_size: int, *, shuffle: bool, seed: int = 0,
                 pool_batches: int = 50) -> None:
        self.features = list(features)
        self.batch_size = max(1, int(batch_size))
        self.shuffle, self.seed, self.pool = shuffle, int(seed), max(1, int(pool_batches))
        self.set_epoch(0)

    def set_epoch(self, epoch: int) -> None:
        """Re-form the batches for ``epoch`` (the Trainer calls this before each training epoch)."""
        order = list(range(len(self.features)))
        if self.shuffle:
            random.Random(self.seed * 1_000_003 + epoch).shuffle(order)
            pool = self.pool * self.batch_size
            pools = [order[i:i + pool] for i in range(0, len(order), pool)]
        else:
            pools = [order]
        length = lambda i: self.features[i]["length"]  # noqa: E731
        self.batches = [pool_[i:i + self.batch_size]
                        for pool_ in (sorted(p, key=length) for p in pools)
                        for i in range(0, len(pool_), self.batch_size)]

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, index: int) -> list[dict[str, Any]]:
        return [self.features[i] for i in self.batches[index]]

