"""oarkit.clas: image classification (PaddleClas on PyTorch) and the home of the shared backbones.

The names below are also the kit protocol the command line uses: ``Predictor`` (built from a run directory,
a registry name or an exported artifact), ``evaluate`` (a run on a dataset split), ``export_source`` (what
``oarkit export`` exports) and ``DATASETS`` (preparers of the datasets that ship offline).
"""

from oarkit.clas import models  # noqa: F401  (registers the clas/ models and the timm/ namespace)
from oarkit.clas.data import ClassificationData, prepare_digits
from oarkit.clas.evaluate import evaluate
from oarkit.clas.export import export_source
from oarkit.clas.losses import CrossEntropyLoss, SoftTargetCrossEntropy
from oarkit.clas.metrics import ClassificationMetric
from oarkit.clas.predictor import ClassificationResult, Classifier
from oarkit.clas.task import ClassificationTask

Predictor = Classifier
DATASETS = {"digits": prepare_digits}

__all__ = [
    "DATASETS", "ClassificationData", "ClassificationMetric", "ClassificationResult", "ClassificationTask",
    "Classifier", "CrossEntropyLoss", "Predictor", "SoftTargetCrossEntropy", "evaluate", "export_source",
    "prepare_digits",
]
