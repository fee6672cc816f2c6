"""What the export pipeline needs from the text kit: the run's model, its restored text task, and its datasets.

The text task itself is exported and verified: its ``export_inputs`` picks the graph's inputs (ids, mask and,
for pairs, sentence types) out of a batch dict, and its deploy spec's ``deployed_wrapper``
(:class:`~oarkit.nlp.deploy.DeployedTextModel`) makes an artifact callable with keywords like the trained model,
so the task's own ``validation_step`` and metric score the eager model and the artifact alike.
"""

from __future__ import annotations

import functools
from pathlib import Path

from torch.utils.data import Dataset

from oarkit.core.export.source import ExportSource, TrainedModel, resolve_export_source
from oarkit.nlp.tasks import TransformerTask


def _dataset(root: str, split: str, *, trained: TrainedModel, task: TransformerTask) -> Dataset | None:
    """A split's features one per item (not length-bucketed: the export pipeline batches them itself)."""
    if not (root or trained.data_config().get("root")):
        return None
    data = trained.data_module(task, data_root=root or None)
    data.bucket = False
    data.batch_size = data.examples_per_batch
    split = "dev" if split == "val" else split
    return data.dataset(split, train=False) if data.has_split(split) else None


def _from_model_dir(trained: TrainedModel) -> ExportSource:
    task = trained.restored_task(TransformerTask)
    return ExportSource(task=task, model=trained.model, origin=str(trained.folder), output_dir=trained.output_dir,
                        meta=trained.meta, data_root=trained.data_config().get("root"),
                        dataset=functools.partial(_dataset, trained=trained, task=task),
                        calibration_split="train", validation_split="val")


def export_source(source: str | Path, *, pretrained: bool | str = True) -> ExportSource:
    """A text run or model directory, ready for :func:`oarkit.core.export.export`.

    Args:
        source: ``runs/x`` (its ``best/``), ``runs/x/last`` or a model directory trained with oarkit.
        pretrained: unused: text models are exported from trained runs only, because a text head without
            fine-tuned weights and labels has nothing to deploy.
    """
    return resolve_export_source(source, from_model_dir=_from_model_dir)
