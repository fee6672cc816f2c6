"""Detection data: COCO / VOC / YOLO readers and writers, the dataset check, box-aware augmentation, the
synthetic shapes set and the DataModule."""

from .check import BoxIssue, check_records
from .dataset import DetectionDataset, MultiScaleBatchSampler, detection_collate
from .formats import FORMATS, convert_dataset, read_split, write_split
from .module import DetectionData
from .records import DetectionRecord
from .synthetic import prepare_det_shapes

__all__ = ["FORMATS", "BoxIssue", "DetectionData", "DetectionDataset", "DetectionRecord", "MultiScaleBatchSampler",
           "check_records", "convert_dataset", "detection_collate", "prepare_det_shapes", "read_split", "write_split"]
