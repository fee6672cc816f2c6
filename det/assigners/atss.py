"""ATSS: adaptive training sample selection, the warm-up assigner of PP-YOLOE and PicoDet.

"Bridging the Gap Between Anchor-based and Anchor-free Detection via Adaptive Training Sample Selection", Zhang et
al., 2020, https://arxiv.org/abs/1912.02424. Ported from PaddleDetection's ``ppdet/modeling/assigners/
atss_assigner.py`` (itself from TOOD's mmdet code): per pyramid level the ``topk`` anchors whose centres are closest
to each ground truth are candidates; those whose IoU with it exceeds the candidates' mean + std (unbiased, as
Paddle's ``std``) and whose centre lies inside it are positives; an anchor positive for several keeps the best IoU.
"""

from __future__ import annotations

import torch
from torch import nn

from .utils import (
    assign_targets,
    batch_iou_similarity,
    bbox_center,
    check_points_inside_bboxes,
    compute_max_iou_gt,
    iou_similarity,
    resolve_multiple_gts,
)

AssignResult = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


class ATSSAssigner(nn.Module):
    """Adaptive training sample selection over anchor boxes.

    Args:
        topk: candidates per pyramid level and ground truth.
        num_classes: classes of the head (the width of the assigned scores).
        force_gt_matching: every ground truth also takes its best-IoU anchor.
        eps: numerical floor.
    """

    def __init__(self, *, topk: int = 9, num_classes: int = 80, force_gt_matching: bool = False,
                 eps: float = 1e-9) -> None:
        super().__init__()
        self.topk, self.num_classes, self.force_gt_matching, self.eps = topk, num_classes, force_gt_matching, eps

    def _gather_topk_pyramid(self, distances: torch.Tensor, num_anchors_list: list[int],
                             pad_gt_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        is_in_topk_list, topk_idxs_list, start = [], [], 0
        for level in torch.split(distances, num_anchors_list, dim=-1):
            k = min(self.topk, level.shape[-1])
            _, topk_idxs = torch.topk(level, k, dim=-1, largest=False)
            topk_idxs_list.append(topk_idxs + start)
            one_hot = torch.zeros_like(level).scatter_(-1, topk_idxs, 1.0)
            is_in_topk_list.append(one_hot * pad_gt_mask)
            start += level.shape[-1]
        return torch.cat(is_in_topk_list, dim=-1), torch.cat(topk_idxs_list, dim=-1)

    @torch.no_grad()
    def forward(self, anchor_bboxes: torch.Tensor, num_anchors_list: list[int], gt_labels: torch.Tensor,
                gt_bboxes: torch.Tensor, pad_gt_mask: torch.Tensor, bg_index: int,
                pred_bboxes: torch.Tensor | None = None) -> AssignResult:
        """Assign anchors [L, 4] (xyxy) to padded ground truths.

        Args:
            anchor_bboxes: the anchor boxes of every level, concatenated.
            num_anchors_list: anchors per level.
            gt_labels: [B, n, 1] class indices.
            gt_bboxes: [B, n, 4] xyxy boxes.
            pad_gt_mask: [B, n, 1], 1 for a real box, 0 for padding.
            bg_index: the label of background anchors.
            pred_bboxes: [B, L, 4] predicted boxes; when given the scores are their IoU with the assigned box.

        Returns:
            labels [B, L], boxes [B, L, 4], scores [B, L, C] and the positive mask [B, n, L].
        """
        num_anchors = anchor_bboxes.shape[0]
        batch_size, num_max_boxes, _ = gt_bboxes.shape
        if num_max_boxes == 0:
            return (torch.full((batch_size, num_anchors), bg_index, dtype=torch.long, device=gt_bboxes.device),
                    gt_bboxes.new_zeros(batch_size, num_anchors, 4),
                    gt_bboxes.new_zeros(batch_size, num_anchors, self.num_classes),
                    gt_bboxes.new_zeros(batch_size, 0, num_anchors))
        ious = iou_similarity(gt_bboxes.reshape(-1, 4), anchor_bboxes).reshape(batch_size, -1, num_anchors)
        gt_centers = bbox_center(gt_bboxes.reshape(-1, 4)).unsqueeze(1)
        anchor_centers = bbox_center(anchor_bboxes)
        distances = (gt_centers - anchor_centers.unsqueeze(0)).norm(2, dim=-1).reshape(batch_size, -1, num_anchors)
        is_in_topk, topk_idxs = self._gather_topk_pyramid(distances, num_anchors_list, pad_gt_mask)
        iou_candidates = ious * is_in_topk
        threshold = torch.gather(iou_candidates, -1, topk_idxs)
        threshold = threshold.mean(dim=-1, keepdim=True) + threshold.std(dim=-1, keepdim=True)
        is_in_topk = torch.where(iou_candidates > threshold, is_in_topk, torch.zeros_like(is_in_topk))
        is_in_gts = check_points_inside_bboxes(anchor_centers, gt_bboxes)
        mask_positive = resolve_multiple_gts(is_in_topk * is_in_gts * pad_gt_mask, ious)
        if self.force_gt_matching:
            is_max_iou = compute_max_iou_gt(ious) * pad_gt_mask
            mask_max_iou = (is_max_iou.sum(-2, keepdim=True) == 1).expand(-1, num_max_boxes, -1)
            mask_positive = torch.where(mask_max_iou, is_max_iou, mask_positive)
        labels, bboxes, scores, _ = assign_targets(mask_positive, gt_labels, gt_bboxes, bg_index, self.num_classes)
        if pred_bboxes is not None:
            pred_ious = (batch_iou_similarity(gt_bboxes, pred_bboxes) * mask_positive).amax(dim=-2).unsqueeze(-1)
            scores = scores * pred_ious
        return labels, bboxes, scores, mask_positive
