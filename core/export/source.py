"""What gets exported: a kit's task and model, with the datasets verification and calibration read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import nn
from torch.utils.data import Dataset

from oarkit.core.engine.task import Task

#: ``(data_root, split) -> dataset`` of model inputs with the eval preprocessing, in the task's batch format, or
#: ``None`` when there is no such data (``data_root`` is ``""`` when nobody named one)
DatasetFactory = Callable[[str, str], "Dataset | None"]


@dataclass
class ExportSource:
    """A model ready for export, supplied by its kit (``oarkit.<kit>.export_source(path_or_name)``).

    Attributes:
        task: the kit's task, set up (labels, preprocessing) so that ``task.deploy_spec(model)`` works.
        model: the trained module (eval mode).
        origin: the run directory, model directory or registry name it came from.
        output_dir: where the export folders go by default (``<run>/export``).
        meta: the model directory's ``meta.json`` (or the model card's equivalent).
        data_root: the dataset the run was trained on, when known (``--data`` wins over it).
        dataset: builds a split of a dataset with the eval preprocessing; ``None`` when the kit cannot.
        calibration_split: the split int8 calibration reads (training images).
        validation_split: the split the metric is computed on.
        baseline: the float module the metric delta is measured against, when it is not ``model`` itself
            (quantization-aware training exports a converted module and compares with its float checkpoint).
    """

    task: Task
    model: nn.Module
    origin: str
    output_dir: Path
    meta: dict[str, Any] = field(default_factory=dict)
    data_root: str | None = None
    dataset: DatasetFactory | None = None
    calibration_split: str = "train"
    validation_split: str = "val"
    baseline: nn.Module | None = None
