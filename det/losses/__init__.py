"""Losses of the kit's detectors: varifocal, distribution-focal and GIoU (PP-YOLOE, PicoDet). Each detector computes
its own training losses in train mode (see :mod:`oarkit.det.models`); these are the pieces."""

from oarkit.det.losses.focal import distribution_focal_loss, varifocal_loss, varifocal_loss_iou_weighted
from oarkit.det.losses.iou import GIoULoss, giou_loss

__all__ = ["GIoULoss", "distribution_focal_loss", "giou_loss", "varifocal_loss", "varifocal_loss_iou_weighted"]
