"""OCR data: label formats, DB targets, preprocessing and augmentation, datasets, samplers and data modules."""

from .datasets import ClsDataset, DetAugment, DetDataset, DetPreprocess, RecDataset, RecPreprocess
from .db_targets import db_targets, make_border_map, make_shrink_map
from .formats import (
    LMDBRecSet,
    read_det_labels,
    read_icdar2015,
    read_icdar2015_gt,
    read_ppocrlabel,
    read_rec_list,
    write_lmdb_rec_set,
)
from .module import OCRClsData, OCRDetData, OCRRecData
from .samplers import MultiScaleBatchSampler
from .transforms import det_resize, normalize, rec_resize, rec_tensor

__all__ = ["ClsDataset", "DetAugment", "DetDataset", "DetPreprocess", "LMDBRecSet", "MultiScaleBatchSampler",
           "OCRClsData", "OCRDetData", "OCRRecData", "RecDataset", "RecPreprocess", "db_targets", "det_resize",
           "make_border_map", "make_shrink_map", "normalize", "read_det_labels", "read_icdar2015",
           "read_icdar2015_gt", "read_ppocrlabel", "read_rec_list", "rec_resize", "rec_tensor",
           "write_lmdb_rec_set"]
