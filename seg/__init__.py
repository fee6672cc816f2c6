"""oarkit.seg: semantic segmentation (PaddleSeg on PyTorch).

Importing the kit registers its models and its task id ``seg`` (:class:`oarkit.core.kits.TaskEntry`: the task,
the ``Segmenter`` predictor, ``export_source``, the synthetic ``shapes`` and ``textures`` datasets, the pictures a
run draws), which is all the command line knows of it.
"""

from typing import Any

from oarkit.core.data.images import IMAGE_SUFFIXES
from oarkit.core.engine.evaluation import evaluate_run as evaluate
from oarkit.core.kits import TaskEntry, register_task
from oarkit.seg import models  # noqa: F401  (registers the seg/ models)
from oarkit.seg.data import SegmentationData, SegmentationDataset, prepare_shapes, prepare_textures
from oarkit.seg.export import export_source
from oarkit.seg.inference import InferenceConfig, infer, slide_inference
from oarkit.seg.losses import BCELoss, CrossEntropyLoss, DiceLoss, LovaszSoftmaxLoss, MixedLoss, OhemCrossEntropyLoss
from oarkit.seg.metrics import SegmentationMetric
from oarkit.seg.paddlex_route import PADDLEX_ROUTE
from oarkit.seg.predictor import SegmentationResult, Segmenter
from oarkit.seg.task import SegmentationExport, SegmentationTask
from oarkit.seg.web_export import web_export

Predictor = Segmenter
DATASETS = {"shapes": prepare_shapes, "textures": prepare_textures}


def _summary(meta: dict[str, Any]) -> dict[str, Any]:
    inference = meta.get("inference") or {}
    if not inference:
        return {}
    scales = inference.get("scales") or [1.0]
    flip = ", flip" if inference.get("flip") else ""
    return {"inference": f"{inference.get('mode', 'whole')}, scales {scales}{flip}"}


register_task(TaskEntry(
    task_id="seg", task_class=SegmentationTask, predictor=Segmenter, export_source=export_source, datasets=DATASETS,
    card_metric="*_miou", pictures=("confusion_matrix.png", "eval_val/confusion_matrix.png"),
    input_suffixes=IMAGE_SUFFIXES, summary=_summary, paddlex=PADDLEX_ROUTE, web_export=web_export,
))

__all__ = [
    "DATASETS", "BCELoss", "CrossEntropyLoss", "DiceLoss", "InferenceConfig", "LovaszSoftmaxLoss", "MixedLoss",
    "OhemCrossEntropyLoss", "Predictor", "SegmentationData", "SegmentationDataset", "SegmentationExport",
    "SegmentationMetric", "SegmentationResult", "SegmentationTask", "Segmenter", "evaluate", "export_source", "infer",
    "prepare_shapes", "prepare_textures", "slide_inference",
]
