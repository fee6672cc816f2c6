"""What the export pipeline needs from the classification kit: the model, its task and its datasets."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset

from oarkit.clas.data.datasets import ImageFolderDataset, ListFileDataset
from oarkit.clas.data.transforms import build_eval_transform, preprocess_spec
from oarkit.clas.predictor import imagenet_labels
from oarkit.clas.task import ClassificationTask
from oarkit.core.errors import OarkitError
from oarkit.core.export.source import ExportSource, TrainedModel, resolve_export_source
from oarkit.core.registry import create_model, model_info


def eval_dataset(root: str, split: str, *, preprocessing: dict[str, Any], labels: list[str],
                 data_config: dict[str, Any]) -> Dataset:
    """A split of an image-folder or list-file dataset with the eval preprocessing (for calibration and metrics).

    Args:
        root: the dataset folder.
        split: ``train`` or ``val`` (the list file of that split for list-file data).
        preprocessing: the eval spec the model was trained with.
        labels: label names, index order (image folders are matched by name).
        data_config: the run's ``data`` section (format and list-file names).
    """
    transform = build_eval_transform(preprocessing)
    if data_config.get("format", "imagefolder") == "list":
        list_file = data_config.get(f"{split}_list") or f"{split}_list.txt"
        return ListFileDataset(root, list_file, transform)
    return ImageFolderDataset(root, data_config.get(f"{split}_split") or split, transform, classes=labels or None)


def _from_model_dir(trained: TrainedModel) -> ExportSource:
    meta = trained.meta
    task = trained.task(ClassificationTask, lambda: ClassificationTask(
        (meta.get("model") or {}).get("name") or "clas/pp_lcnet_x1_0"))
    task.labels = list(meta.get("labels") or [])
    task.preprocessing = dict(meta.get("preprocessing") or {})
    if not task.preprocessing:
        raise OarkitError(f"{trained.folder}/meta.json has no preprocessing; it cannot be exported for deployment")
    data_config = trained.data_config()
    return ExportSource(task=task, model=trained.model, origin=str(trained.folder), output_dir=trained.output_dir,
                        meta=meta, data_root=data_config.get("root"),
                        dataset=functools.partial(_dataset, task=task, data_config=data_config))


def _dataset(root: str, split: str, *, task: ClassificationTask, data_config: dict[str, Any]) -> Dataset | None:
    if not root:
        return None
    return eval_dataset(root, split, preprocessing=task.preprocessing, labels=task.labels, data_config=data_config)


def _from_registry(name: str, pretrained: bool | str) -> ExportSource:
    card = model_info(name)
    model = create_model(name, pretrained=pretrained).eval()
    labels = imagenet_labels() if card.label_names == "imagenet-1k" else [str(i) for i in range(card.num_classes)]
    task = ClassificationTask(name)
    task.labels = labels
    task.preprocessing = preprocess_spec(card.input_size, card.mean, card.std, card.crop_pct, card.interpolation)
    meta = {"task": "clas", "model": {"name": name, "kwargs": getattr(model, "oarkit_kwargs", {})},
            "labels": labels, "preprocessing": task.preprocessing, "metrics": dict(card.metrics),
            "weights": "pretrained" if pretrained else "random"}
    return ExportSource(task=task, model=model, origin=name, output_dir=Path("exports") / name.replace("/", "_"),
                        meta=meta, dataset=functools.partial(_dataset, task=task, data_config={}))


def export_source(source: str | Path, *, pretrained: bool | str = True) -> ExportSource:
    """A run directory, model directory or registry name, ready for :func:`oarkit.core.export.export`.

    Args:
        source: ``runs/x`` (its ``best/``), ``runs/x/last``, or a registry name such as ``clas/pp_lcnet_x1_0``.
        pretrained: for a registry name, load the registered weights (``True``), a local file, or none
            (``False``: random weights, enough to check that a model exports).
    """
    return resolve_export_source(source, from_model_dir=_from_model_dir,
                                 from_registry=functools.partial(_from_registry, pretrained=pretrained))
