"""Box helpers shared by the label assigners, ported from PaddleDetection's ``ppdet/modeling/assigners/utils.py``
and ``bbox_utils.py`` (same epsilons, so that assignments match Paddle's)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def iou_similarity(box1: torch.Tensor, box2: torch.Tensor, eps: float = 1e-10) -> torch.Tensor:
    """IoU of every box of ``box1`` [M1, 4] with every box of ``box2`` [M2, 4] (xyxy): [M1, M2]."""
    return batch_iou_similarity(box1[None], box2[None], eps)[0]


def batch_iou_similarity(box1: torch.Tensor, box2: torch.Tensor, eps: float = 1e-9) -> torch.Tensor:
    """IoU of ``box1`` [B, M1, 4] with ``box2`` [B, M2, 4] (xyxy): [B, M1, M2]."""
    b1, b2 = box1.unsqueeze(2), box2.unsqueeze(1)
    x1y1 = torch.maximum(b1[..., :2], b2[..., :2])
    x2y2 = torch.minimum(b1[..., 2:], b2[..., 2:])
    overlap = (x2y2 - x1y1).clamp(min=0).prod(-1)
    area1 = (b1[..., 2:] - b1[..., :2]).clamp(min=0).prod(-1)
    area2 = (b2[..., 2:] - b2[..., :2]).clamp(min=0).prod(-1)
    return overlap / (area1 + area2 - overlap + eps)


def bbox_center(boxes: torch.Tensor) -> torch.Tensor:
    """Centres ``(cx, cy)`` of xyxy boxes."""
    return torch.stack([(boxes[..., 0] + boxes[..., 2]) / 2, (boxes[..., 1] + boxes[..., 3]) / 2], dim=-1)


def check_points_inside_bboxes(points: torch.Tensor, bboxes: torch.Tensor, eps: float = 1e-9) -> torch.Tensor:
    """1.0 where point ``l`` [L, 2] lies strictly inside box ``n`` of ``bboxes`` [B, n, 4]: [B, n, L]."""
    x, y = points[None, None, :, 0], points[None, None, :, 1]
    xmin, ymin, xmax, ymax = (bboxes[..., i, None] for i in range(4))
    delta = torch.stack([x - xmin, y - ymin, xmax - x, ymax - y], dim=-1)
    return (delta.amin(dim=-1) > eps).to(bboxes.dtype)


def compute_max_iou_anchor(ious: torch.Tensor) -> torch.Tensor:
    """One-hot over the ground truths of the one with the largest IoU, per anchor: [B, n, L]."""
    return F.one_hot(ious.argmax(dim=-2), ious.shape[-2]).permute(0, 2, 1).to(ious.dtype)


def compute_max_iou_gt(ious: torch.Tensor) -> torch.Tensor:
    """One-hot over the anchors of the one with the largest IoU, per ground truth: [B, n, L]."""
    return F.one_hot(ious.argmax(dim=-1), ious.shape[-1]).to(ious.dtype)


def gather_topk_anchors(metrics: torch.Tensor, topk: int, largest: bool = True, topk_mask: torch.Tensor | None = None,
                        eps: float = 1e-9) -> torch.Tensor:
    """1.0 at the ``topk`` best anchors of each ground truth (``metrics`` [B, n, L]), times ``topk_mask``."""
    topk_metrics, topk_idxs = torch.topk(metrics, min(topk, metrics.shape[-1]), dim=-1, largest=largest)
    if topk_mask is None:
        topk_mask = (topk_metrics.amax(dim=-1, keepdim=True) > eps).to(metrics.dtype)
    is_in_topk = F.one_hot(topk_idxs, metrics.shape[-1]).sum(dim=-2).to(metrics.dtype)
    return is_in_topk * topk_mask


def assign_targets(mask_positive: torch.Tensor, gt_labels: torch.Tensor, gt_bboxes: torch.Tensor, bg_index: int,
                   num_classes: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Labels [B, L], boxes [B, L, 4] and one-hot scores [B, L, C] of each anchor from ``mask_positive``
    [B, n, L] (background ``bg_index`` and zero scores where no ground truth is positive), and the positives
    per anchor [B, L]."""
    batch_size, num_max_boxes, num_anchors = mask_positive.shape
    mask_positive_sum = mask_positive.sum(dim=-2)
    assigned_gt_index = mask_positive.argmax(dim=-2)
    assigned_gt_index = assigned_gt_index + torch.arange(batch_size, device=gt_labels.device)[:, None] * num_max_boxes
    labels = gt_labels.flatten()[assigned_gt_index.flatten()].reshape(batch_size, num_anchors)
    labels = torch.where(mask_positive_sum > 0, labels, torch.full_like(labels, bg_index))
    bboxes = gt_bboxes.reshape(-1, 4)[assigned_gt_index.flatten()].reshape(batch_size, num_anchors, 4)
    scores = F.one_hot(labels.long(), num_classes + 1).to(gt_bboxes.dtype)
    keep = [i for i in range(num_classes + 1) if i != bg_index]
    return labels, bboxes, scores[..., keep], mask_positive_sum


def resolve_multiple_gts(mask_positive: torch.Tensor, ious: torch.Tensor) -> torch.Tensor:
    """An anchor positive for several ground truths keeps only the one with the largest IoU."""
    mask_positive_sum = mask_positive.sum(dim=-2)
    if mask_positive_sum.max() > 1:
        multiple = (mask_positive_sum.unsqueeze(1) > 1).expand(-1, mask_positive.shape[1], -1)
        mask_positive = torch.where(multiple, compute_max_iou_anchor(ious), mask_positive)
    return mask_positive
