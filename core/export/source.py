"""What gets exported: a kit's task and model, with the datasets verification and calibration read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import nn
from torch.utils.data import Dataset

from oarkit.core.engine.run import TrainedModel
from oarkit.core.engine.task import Task
from oarkit.core.errors import OarkitError

__all__ = ["DatasetFactory", "ExportSource", "TrainedModel", "resolve_export_source"]

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


def resolve_export_source(source: str | Path, *, from_model_dir: Callable[[TrainedModel], ExportSource],
                          from_registry: Callable[[str], ExportSource] | None = None) -> ExportSource:
    """Dispatch a kit's ``export_source`` argument: a run or model directory, else a registry name.

    Args:
        source: ``runs/x`` (its ``best/``), ``runs/x/last``, a model directory, or a registry name.
        from_model_dir: the kit's builder for a trained model directory.
        from_registry: the kit's builder for a registry name; ``None`` when the kit exports trained runs only.

    Raises:
        OarkitError: ``source`` is an export folder already, or a name the kit cannot export.
    """
    from oarkit.core.deploy import is_export_dir
    from oarkit.core.engine.checkpoint import find_model_dir

    path = Path(source)
    if path.exists():
        if is_export_dir(path):
            raise OarkitError(f"{path} is already an export; export its run directory instead")
        return from_model_dir(TrainedModel.load(find_model_dir(path)))
    if from_registry is None:
        raise OarkitError(f"{source} is not a run directory; this kit exports trained runs (tools/train.py -c ...)")
    return from_registry(str(source))
