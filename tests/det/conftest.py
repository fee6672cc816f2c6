"""A tiny synthetic detection set on disk (the demo's generator, 64x64) and a toy detector keeping the det/ model
contract, so the tests exercise the real loader, task, metric and export without a large model."""

from __future__ import annotations

import os

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from oarkit.det import prepare_det_shapes  # noqa: E402


@pytest.fixture(scope="session")
def det_shapes_root(tmp_path_factory) -> Path:
    return prepare_det_shapes(tmp_path_factory.mktemp("det_shapes"), num_train=12, num_val=6, size=64)


class ToyDetector(nn.Module):
    """Three stride-2 convolutions and two 1x1 heads: per cell, class scores and box distances (FCOS-like).

    Train mode returns ``{"loss", "loss_cls", "loss_box"}`` (the cell holding a box's centre learns it); eval mode
    returns ``(scores [B, C, N], distances [B, N, 4])`` and ``decode`` turns them into boxes in input pixels.
    """

    stride = 8

    def __init__(self, num_classes: int = 4) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 16, 3, 2, 1), nn.ReLU(),
                                  nn.Conv2d(16, 16, 3, 2, 1), nn.ReLU())
        self.cls = nn.Conv2d(16, num_classes, 1)
        self.reg = nn.Conv2d(16, 4, 1)

    def _points(self, h: int, w: int) -> torch.Tensor:
        ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
        return (torch.stack([xs, ys], -1).reshape(-1, 2).float() + 0.5) * self.stride

    def forward(self, images: torch.Tensor, targets: list[dict] | None = None):
        feat = self.body(images)
        logits, dist = self.cls(feat).flatten(2), self.reg(feat).flatten(2).transpose(1, 2)
        if not self.training:
            return logits.sigmoid(), dist
        h, w = feat.shape[2:]
        goal = torch.zeros_like(logits)
        box_loss = logits.new_zeros(())
        points = self._points(h, w)
        for i, t in enumerate(targets or []):
            for box, label in zip(t["boxes"], t["labels"]):
                cx, cy = int((box[0] + box[2]) / 2 // self.stride), int((box[1] + box[3]) / 2 // self.stride)
                n = min(cy, h - 1) * w + min(cx, w - 1)
                goal[i, int(label), n] = 1.0
                p = points[n]
                ltrb = torch.stack([p[0] - box[0], p[1] - box[1], box[2] - p[0], box[3] - p[1]]).clamp(min=1)
                box_loss = box_loss + F.l1_loss(dist[i, n], torch.log(ltrb / self.stride))
        cls_loss = F.binary_cross_entropy_with_logits(logits, goal, reduction="sum") / max(1.0, float(goal.sum()))
        return {"loss": cls_loss + box_loss, "loss_cls": cls_loss.detach(), "loss_box": box_loss.detach()}

    def decode(self, raw):
        scores, dist = raw
        n = dist.shape[1]
        side = int(round(n**0.5))
        points = self._points(side, n // side).to(dist)
        d = dist.exp() * self.stride
        boxes = torch.cat([points - d[..., :2], points + d[..., 2:]], dim=-1)
        return boxes, scores.transpose(1, 2)


@pytest.fixture
def toy_detector():
    return ToyDetector
