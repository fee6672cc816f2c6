"""oarkit.clas: image classification (PaddleClas on PyTorch).

Importing the kit registers its models and its task id ``clas`` (:class:`oarkit.core.kits.TaskEntry`: the task,
the ``Classifier`` predictor and its ``topk`` option, ``export_source``, the offline ``digits`` dataset, the
pictures a run draws), which is all the command line knows of it.
"""

from typing import Any

from oarkit.clas import models  # noqa: F401  (registers the clas/ models and the timm/ namespace)
from oarkit.clas.data import ClassificationData, prepare_digits
from oarkit.clas.export import export_source
from oarkit.clas.losses import CrossEntropyLoss, SoftTargetCrossEntropy
from oarkit.clas.metrics import ClassificationMetric
from oarkit.clas.paddlex_route import PADDLEX_ROUTE
from oarkit.clas.predictor import ClassificationResult, Classifier
from oarkit.clas.task import ClassificationTask
from oarkit.clas.web_export import web_export
from oarkit.core.data.images import IMAGE_SUFFIXES
from oarkit.core.engine.evaluation import evaluate_run as evaluate
from oarkit.core.kits import TaskEntry, register_task

Predictor = Classifier
DATASETS = {"digits": prepare_digits}


def _summary(meta: dict[str, Any]) -> dict[str, Any]:
    crop = (meta.get("preprocessing") or {}).get("crop")
    return {"input size": "x".join(map(str, crop))} if crop else {}


register_task(TaskEntry(
    task_id="clas", task_class=ClassificationTask, predictor=Classifier, predict_options=("topk",),
    export_source=export_source, datasets=DATASETS, card_metric="imagenet_top1",
    pictures=("confusion_matrix.png", "eval_val/confusion_matrix.png"), input_suffixes=IMAGE_SUFFIXES,
    summary=_summary, paddlex=PADDLEX_ROUTE, web_export=web_export,
))

__all__ = [
    "DATASETS", "ClassificationData", "ClassificationMetric", "ClassificationResult", "ClassificationTask",
    "Classifier", "CrossEntropyLoss", "Predictor", "SoftTargetCrossEntropy", "evaluate", "export_source",
    "prepare_digits",
]
