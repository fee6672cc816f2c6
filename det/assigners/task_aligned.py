"""The task-aligned assigner of TOOD, used by PP-YOLOE and PicoDet after their ATSS warm-up.

"TOOD: Task-aligned One-stage Object Detection", Feng et al., 2021, https://arxiv.org/abs/2108.07755. Ported from
PaddleDetection's ``ppdet/modeling/assigners/task_aligned_assigner.py``: the alignment metric
``score^alpha * IoU^beta`` of each prediction with each ground truth picks the ``topk`` positives among anchors
inside the box; the assigned scores are the metric normalised per instance to its best IoU.
"""

from __future__ import annotations

import torch
from torch import nn

from .atss import AssignResult
from .utils import (
    assign_targets,
    batch_iou_similarity,
    check_points_inside_bboxes,
    gather_topk_anchors,
    resolve_multiple_gts,
)


class TaskAlignedAssigner(nn.Module):
    """Assign by the task-alignment metric of the current predictions.

    Args:
        topk: positives per ground truth at most.
        alpha: exponent of the class score.
        beta: exponent of the IoU.
        eps: numerical floor.
    """

    def __init__(self, *, topk: int = 13, alpha: float = 1.0, beta: float = 6.0, eps: float = 1e-9) -> None:
        super().__init__()
        self.topk, self.alpha, self.beta, self.eps = topk, alpha, beta, eps

    @torch.no_grad()
    def forward(self, pred_scores: torch.Tensor, pred_bboxes: torch.Tensor, anchor_points: torch.Tensor,
                gt_labels: torch.Tensor, gt_bboxes: torch.Tensor, pad_gt_mask: torch.Tensor,
                bg_index: int) -> AssignResult:
        """Assign predictions to padded ground truths.

        Args:
            pred_scores: [B, L, C] class probabilities.
            pred_bboxes: [B, L, 4] predicted xyxy boxes (same units as ``gt_bboxes``).
            anchor_points: [L, 2] anchor centres.
            gt_labels: [B, n, 1] class indices.
            gt_bboxes: [B, n, 4] xyxy boxes.
            pad_gt_mask: [B, n, 1], 1 for a real box.
            bg_index: the label of background anchors.

        Returns:
            labels [B, L], boxes [B, L, 4], scores [B, L, C] and the positive mask [B, n, L].
        """
        batch_size, num_anchors, num_classes = pred_scores.shape
        num_max_boxes = gt_bboxes.shape[1]
        if num_max_boxes == 0:
            return (torch.full((batch_size, num_anchors), bg_index, dtype=torch.long, device=gt_bboxes.device),
                    gt_bboxes.new_zeros(batch_size, num_anchors, 4),
                    gt_bboxes.new_zeros(batch_size, num_anchors, num_classes),
                    gt_bboxes.new_zeros(batch_size, 0, num_anchors))
        ious = batch_iou_similarity(gt_bboxes, pred_bboxes)
        index = gt_labels.long().squeeze(-1).clamp(0, num_classes - 1)  # padded rows are masked out below
        bbox_cls_scores = torch.gather(pred_scores.permute(0, 2, 1), 1,
                                       index.unsqueeze(-1).expand(-1, -1, num_anchors))
        alignment_metrics = bbox_cls_scores.pow(self.alpha) * ious.pow(self.beta)
        is_in_gts = check_points_inside_bboxes(anchor_points, gt_bboxes)
        is_in_topk = gather_topk_anchors(alignment_metrics * is_in_gts, self.topk, topk_mask=pad_gt_mask)
        mask_positive = resolve_multiple_gts(is_in_topk * is_in_gts * pad_gt_mask, ious)
        labels, bboxes, scores, _ = assign_targets(mask_positive, gt_labels, gt_bboxes, bg_index, num_classes)
        alignment_metrics = alignment_metrics * mask_positive
        max_metrics = alignment_metrics.amax(dim=-1, keepdim=True)
        max_ious = (ious * mask_positive).amax(dim=-1, keepdim=True)
        alignment_metrics = (alignment_metrics / (max_metrics + self.eps) * max_ious).amax(dim=-2).unsqueeze(-1)
        return labels, bboxes, scores * alignment_metrics, mask_positive
