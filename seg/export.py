"""What the export pipeline needs from the segmentation kit: the model, its set-up task and its datasets.

Exports have a fixed input size (the training crop), so verification feeds them inputs of that size: the
datasets here resize images and labels to the crop, and the task validates them whole and at one scale. The
deploy.yaml still carries the run's own inference mode (sliding window, scales, flip) for deployed predictors.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset

from oarkit.core.export.source import ExportSource, TrainedModel, resolve_export_source
from oarkit.core.registry import create_model, model_info

from .data.labels import LABEL_SETS
from .data.module import SegmentationData
from .data.transforms import build_eval_transform, preprocess_spec
from .inference import InferenceConfig
from .task import SegmentationTask

#: the ``data`` keys that say where and how the dataset is laid out (not how it is augmented)
DATA_KEYS = ("format", "train_list", "val_list", "train_split", "val_split", "num_classes", "label_file",
             "ignore_index")


def eval_dataset(root: str, split: str, *, preprocessing: dict[str, Any], num_classes: int,
                 data_config: dict[str, Any]) -> Dataset:
    """A split resized to the export size with the evaluation preprocessing (for int8 calibration and the metric)."""
    kwargs = {k: data_config[k] for k in DATA_KEYS if k in data_config and not str(data_config[k]).startswith("${")}
    data = SegmentationData(root=root, **{**kwargs, "num_classes": num_classes})
    return data.dataset(split, build_eval_transform({**preprocessing, "resize": preprocessing["crop_size"]}))


def _dataset(root: str, split: str, *, task: SegmentationTask, data_config: dict[str, Any]) -> Dataset | None:
    if not root:
        return None
    return eval_dataset(root, split, preprocessing=task.preprocessing, num_classes=len(task.labels),
                        data_config=data_config)


def _for_export(task: SegmentationTask) -> SegmentationTask:
    """Validate whole images at one scale: verification inputs already have the export size."""
    task.validation_inference = InferenceConfig()
    return task


def _from_model_dir(trained: TrainedModel) -> ExportSource:
    task = _for_export(trained.restored_task(SegmentationTask))
    data_config = trained.data_config()
    return ExportSource(task=task, model=trained.model, origin=str(trained.folder), output_dir=trained.output_dir,
                        meta=trained.meta, data_root=data_config.get("root"),
                        dataset=functools.partial(_dataset, task=task, data_config=data_config))


def _from_registry(name: str, pretrained: bool | str) -> ExportSource:
    card = model_info(name)
    model = create_model(name, pretrained=pretrained).eval()
    labels = list(LABEL_SETS.get(card.label_names, [])) or [f"class_{i}" for i in range(card.num_classes)]
    task = SegmentationTask(name)
    meta = {"task": "seg", "model": {"name": name, "kwargs": getattr(model, "oarkit_kwargs", {})}, "labels": labels,
            "preprocessing": preprocess_spec(card.mean, card.std, card.input_size[1:]), "metrics": dict(card.metrics),
            "weights": "pretrained" if pretrained else "random"}
    task.restore(meta)
    _for_export(task)
    return ExportSource(task=task, model=model, origin=name, output_dir=Path("exports") / name.replace("/", "_"),
                        meta=meta, dataset=functools.partial(_dataset, task=task, data_config={}))


def export_source(source: str | Path, *, pretrained: bool | str = True) -> ExportSource:
    """A run directory, model directory or registry name, ready for :func:`oarkit.core.export.export`.

    Args:
        source: ``runs/x`` (its ``best/``), ``runs/x/last``, or a registry name such as ``seg/pp_liteseg_stdc1``.
        pretrained: for a registry name, load the registered weights (``True``), a local file, or none
            (``False``: random weights, enough to check that a model exports).
    """
    return resolve_export_source(source, from_model_dir=_from_model_dir,
                                 from_registry=functools.partial(_from_registry, pretrained=pretrained))
