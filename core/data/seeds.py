"""Per-sample seeds: augmentation that depends on the data order, never on which worker loads a sample."""

from __future__ import annotations

import numpy as np


def sample_seed(seed: int, epoch: int, index: int) -> int:
    """A 32-bit seed that depends only on ``(seed, epoch, index)``, never on the worker that loads the sample."""
    return int(np.random.SeedSequence([seed, epoch, index]).generate_state(1)[0])
