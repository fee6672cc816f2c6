"""What the export pipeline needs from the classification kit: the model, its task and its datasets."""

from __future__ import annotations

import functools
from pathlib import Path

from torch.utils.data import Dataset

from oarkit.clas.data.module import ClassificationData
from oarkit.clas.data.transforms import preprocess_spec
from oarkit.clas.predictor import imagenet_labels
from oarkit.clas.task import ClassificationTask
from oarkit.core.export.source import ExportSource, TrainedModel, resolve_export_source
from oarkit.core.registry import create_model, model_info


def _from_model_dir(trained: TrainedModel) -> ExportSource:
    task = trained.restored_task(ClassificationTask)
    return ExportSource(task=task, model=trained.model, origin=str(trained.folder), output_dir=trained.output_dir,
                        meta=trained.meta, data_root=trained.data_config().get("root"),
                        dataset=trained.dataset_factory(task))


def _dataset(root: str, split: str, *, task: ClassificationTask) -> Dataset | None:
    """A split of an image-folder dataset at ``root`` read as the registry model expects (for a registry export)."""
    if not root:
        return None
    data = ClassificationData(root=root)
    task.configure_data(data)
    return data.dataset(split)


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
                        meta=meta, dataset=functools.partial(_dataset, task=task))


def export_source(source: str | Path, *, pretrained: bool | str = True) -> ExportSource:
    """A run directory, model directory or registry name, ready for :func:`oarkit.core.export.export`.

    Args:
        source: ``runs/x`` (its ``best/``), ``runs/x/last``, or a registry name such as ``clas/pp_lcnet_x1_0``.
        pretrained: for a registry name, load the registered weights (``True``), a local file, or none
            (``False``: random weights, enough to check that a model exports).
    """
    return resolve_export_source(source, from_model_dir=_from_model_dir,
                                 from_registry=functools.partial(_from_registry, pretrained=pretrained))
