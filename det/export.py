"""What the export pipeline needs from the detection kit: the model, its set-up task and its datasets.

Exports run at the evaluation size (every image is resized to it) with NMS inside the graph, so verification
feeds them the evaluation datasets as they are and scores the artifact with the task's own metric.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset

from oarkit.core.export.source import ExportSource, TrainedModel, resolve_export_source
from oarkit.core.registry import create_model, model_info

from .data.module import DetectionData
from .data.transforms import preprocess_spec
from .task import DetectionTask


def _dataset(root: str, split: str, *, task: DetectionTask) -> Dataset | None:
    if not root:
        return None
    data = DetectionData(root=root)
    task.configure_data(data)
    return data.dataset(split)


def _from_model_dir(trained: TrainedModel) -> ExportSource:
    task = trained.restored_task(DetectionTask)
    return ExportSource(task=task, model=trained.model, origin=str(trained.folder), output_dir=trained.output_dir,
                        meta=trained.meta, data_root=trained.data_config().get("root"),
                        dataset=trained.dataset_factory(task))


def _from_registry(name: str, pretrained: bool | str) -> ExportSource:
    from .models.zoo import labels_of

    card = model_info(name)
    spec = card.input_spec
    model = create_model(name, pretrained=pretrained).eval()
    task = DetectionTask(name)
    meta: dict[str, Any] = {"task": "det", "model": {"name": name, "kwargs": getattr(model, "oarkit_kwargs", {})},
                            "labels": labels_of(card.label_names, card.num_classes),
                            "preprocessing": preprocess_spec(spec.size, spec.mean, spec.std),
                            "metrics": dict(card.metrics), "weights": "pretrained" if pretrained else "random"}
    task.restore(meta)
    task.stride_multiple = int(spec.stride_multiple)
    return ExportSource(task=task, model=model, origin=name, output_dir=Path("exports") / name.replace("/", "_"),
                        meta=meta, dataset=functools.partial(_dataset, task=task))


def export_source(source: str | Path, *, pretrained: bool | str = True) -> ExportSource:
    """A run directory, model directory or registry name, ready for :func:`oarkit.core.export.export`.

    Args:
        source: ``runs/x`` (its ``best/``), ``runs/x/last``, or a registry name such as ``det/ppyoloe_plus_crn_s``.
        pretrained: for a registry name, load the registered weights (``True``), a local file, or none
            (``False``: random weights, enough to check that a model exports).
    """
    return resolve_export_source(source, from_model_dir=_from_model_dir,
                                 from_registry=functools.partial(_from_registry, pretrained=pretrained))
