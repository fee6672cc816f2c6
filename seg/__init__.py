"""oarkit.seg: semantic segmentation (PaddleSeg on PyTorch).

The names below are also the kit protocol the command line uses: ``Predictor`` (built from a run directory, a
registry name or an exported artifact), ``evaluate`` (a run on a dataset split), ``export_source`` (what the
core exporters need) and ``DATASETS`` (preparers of the datasets that ship offline: the synthetic ``shapes`` set).
"""

from oarkit.seg import models  # noqa: F401  (registers the seg/ models)
from oarkit.seg.data import SegmentationData, SegmentationDataset, prepare_shapes
from oarkit.seg.evaluate import evaluate
from oarkit.seg.export import export_source
from oarkit.seg.inference import InferenceConfig, infer, slide_inference
from oarkit.seg.losses import BCELoss, CrossEntropyLoss, DiceLoss, LovaszSoftmaxLoss, MixedLoss, OhemCrossEntropyLoss
from oarkit.seg.metrics import SegmentationMetric
from oarkit.seg.predictor import SegmentationResult, Segmenter
from oarkit.seg.task import SegmentationExport, SegmentationTask

Predictor = Segmenter
DATASETS = {"shapes": prepare_shapes}

__all__ = [
    "DATASETS", "BCELoss", "CrossEntropyLoss", "DiceLoss", "InferenceConfig", "LovaszSoftmaxLoss", "MixedLoss",
    "OhemCrossEntropyLoss", "Predictor", "SegmentationData", "SegmentationDataset", "SegmentationExport",
    "SegmentationMetric", "SegmentationResult", "SegmentationTask", "Segmenter", "evaluate", "export_source", "infer",
    "prepare_shapes", "slide_inference",
]
