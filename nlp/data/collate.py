"""Dynamic padding: a batch is padded to its own longest sequence, not to ``max_length``.

Sequence keys are padded (token ids with the tokenizer's pad id, sentence types with 0, token labels with -100,
pointer targets with 0.0) and ``attention_mask`` is built from the true lengths; scalar labels are stacked;
everything else (offsets, gold tags, contexts) is passed through as a list for the metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from oarkit.nlp.data.features import IGNORE_INDEX

#: sequence keys and their padding values (``None``: the tokenizer's pad id)
SEQUENCE_KEYS: dict[str, Any] = {"input_ids": None, "token_type_ids": 0, "labels": IGNORE_INDEX,
                                 "start_targets": 0.0, "end_targets": 0.0, "text_mask": 0}
SCALAR_KEYS = ("labels", "start_positions", "end_positions")


def unbucket(samples: Sequence[Any]) -> list[Any]:
    """The samples of a loader batch: a length bucket arrives as a one-item batch holding a list."""
    if len(samples) == 1 and isinstance(samples[0], list):
        return list(samples[0])
    return list(samples)


class PadCollator:
    """Collate feature dicts into a padded batch dict.

    Args:
        pad_token_id: the tokenizer's padding id.
        pad_to_multiple_of: round the padded length up to a multiple of this (1: no rounding).
    """

    def __init__(self, pad_token_id: int, pad_to_multiple_of: int = 1) -> None:
        self.pad_token_id = int(pad_token_id)
        self.multiple = max(1, int(pad_to_multiple_of))

    def __call__(self, samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
        features = unbucket(samples)
        lengths = [len(f["input_ids"]) for f in features]
        width = -(-max(lengths) // self.multiple) * self.multiple
        batch: dict[str, Any] = {}
        for key in features[0]:
            values = [f[key] for f in features]
            if key in SEQUENCE_KEYS and isinstance(values[0], list):
                pad = self.pad_token_id if SEQUENCE_KEYS[key] is None else SEQUENCE_KEYS[key]
                dtype = torch.float32 if isinstance(pad, float) else torch.long
                batch[key] = torch.tensor([v + [pad] * (width - len(v)) for v in values], dtype=dtype)
            elif key in SCALAR_KEYS:
                batch[key] = torch.tensor(values, dtype=torch.long)
            elif key != "length":
                batch[key] = values
        batch["attention_mask"] = torch.tensor([[1] * n + [0] * (width - n) for n in lengths], dtype=torch.long)
        return batch


def model_inputs(batch: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The keyword arguments of a transformers encoder: ids, mask and (when present) sentence types."""
    keys = ("input_ids", "attention_mask", "token_type_ids")
    return {k: batch[k] for k in keys if k in batch}


class WindowCollator(PadCollator):
    """Collate QA samples: their context windows are the batch rows, ``example_index`` maps rows to samples."""

    def __call__(self, samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
        samples = unbucket(samples)
        windows = [w for s in samples for w in s["windows"]]
        batch = super().__call__(windows)
        batch["example_index"] = [i for i, s in enumerate(samples) for _ in s["windows"]]
        batch["contexts"] = [s["context"] for s in samples]
        batch["answers"] = [s["answers"] for s in samples]
        batch["ids"] = [s["id"] for s in samples]
        return batch
