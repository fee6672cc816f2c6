"""oarkit.det: object detection (PaddleDetection on PyTorch).

Importing the kit registers its models, its task id ``det`` (:class:`oarkit.core.kits.TaskEntry`: the task, the
``Detector`` predictor, ``export_source``, the synthetic ``shapes_det`` set and a rendered ``document_page``, the
PR-curve picture) and the ``oarkit det`` verb (convert-dataset, check-dataset), which is all the command line knows
of it.
"""

from oarkit.core.data.images import IMAGE_SUFFIXES
from oarkit.core.engine.evaluation import evaluate_run as evaluate
from oarkit.core.kits import TaskEntry, register_command, register_task
from oarkit.det import models  # noqa: F401  (registers the det/ models)
from oarkit.det.cli import DET_COMMAND
from oarkit.det.data import (
    DetectionData,
    DetectionDataset,
    DetectionRecord,
    check_records,
    convert_dataset,
    prepare_det_shapes,
)
from oarkit.det.data.document import prepare_document_page
from oarkit.det.export import export_source
from oarkit.det.metrics import COCOMetric, VOCMetric
from oarkit.det.paddlex_route import PADDLEX_ROUTE
from oarkit.det.postprocess import NMSConfig, multiclass_nms
from oarkit.det.predictor import DetectionResult, Detector
from oarkit.det.task import DetectionTask
from oarkit.det.web_export import web_export

Predictor = Detector
DATASETS = {"shapes_det": prepare_det_shapes, "document_page": prepare_document_page}

register_task(TaskEntry(
    task_id="det", task_class=DetectionTask, predictor=Detector, export_source=export_source, datasets=DATASETS,
    card_metric="coco_map", pictures=("pr_curve.png", "eval_val/pr_curve.png"), input_suffixes=IMAGE_SUFFIXES,
    paddlex=PADDLEX_ROUTE, web_export=web_export,
))
register_command(DET_COMMAND)

__all__ = [
    "DATASETS", "COCOMetric", "DetectionData", "DetectionDataset", "DetectionRecord", "DetectionResult",
    "DetectionTask", "Detector", "NMSConfig", "Predictor", "VOCMetric", "check_records", "convert_dataset",
    "evaluate", "export_source", "multiclass_nms", "prepare_det_shapes",
]
