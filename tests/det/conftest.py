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
from oarkit.det.models.torchvision_eval import TWO_STAGE  # noqa: E402
from oarkit.det.models.torchvision_models import TorchvisionDetector  # noqa: E402


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


# -- random detectors whose outputs depend on their input (tests that compare two runs of one model) --------------
# A random backbone with the unit statistics its norms start with (mean 0, variance 1) gives features that vanish
# or explode with depth: every score ties (or saturates at 1.0) and every box degenerates, so an export check has
# nothing to judge. calibrate() sets each norm's statistics from what it sees on a random batch (a trained model's
# are its data's) and scales the class layers of the wrapped torchvision detectors so that their logits spread.

def _running_stats(module: nn.Module) -> bool:
    """A batch norm of any kind (torch's, torchvision's and transformers' frozen ones): running statistics over
    channel dimension 1."""
    return isinstance(getattr(module, "running_mean", None), torch.Tensor) and \
        isinstance(getattr(module, "running_var", None), torch.Tensor)


def _set_statistics(norm: nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
    x = inputs[0]
    dims = [d for d in range(x.dim()) if d != 1]
    norm.running_mean.copy_(x.mean(dim=dims))
    norm.running_var.copy_(x.var(dim=dims))


def class_layers(model: nn.Module) -> list[nn.Module]:
    """The layers that give a wrapped torchvision detector's class logits (a Linear or a Conv2d each); for the
    R-CNNs the RPN's objectness too, whose random scores otherwise nearly tie."""
    tv = model.model
    if model.family in TWO_STAGE:
        return [tv.roi_heads.box_predictor.cls_score, tv.rpn.head.cls_logits]
    if model.family == "ssd":  # one predictor per level: a convolution (SSD300) or a block ending in one (SSDlite)
        return [m if isinstance(m, nn.Conv2d) else m[-1] for m in tv.head.classification_head.module_list]
    return [tv.head.classification_head.cls_logits]


@torch.no_grad()
def calibrate(model: nn.Module, images: torch.Tensor) -> nn.Module:
    """``model`` (in eval mode) with its norms' statistics set from ``images`` and, for a wrapped torchvision
    detector, class logits of at most about two units (weights scaled by what the class layers see, std at most
    0.1) and the background class of its sigmoid heads off (a trained head never scores it)."""
    model.eval()
    torchvision = isinstance(model, TorchvisionDetector)
    hooks = [m.register_forward_pre_hook(_set_statistics) for m in model.modules() if _running_stats(m)]
    rms: dict[nn.Module, float] = {}
    for layer in class_layers(model) if torchvision else []:
        hooks.append(layer.register_forward_pre_hook(
            lambda m, inputs: rms.__setitem__(m, float(inputs[0].square().mean().sqrt()))))
    model(images)
    for hook in hooks:
        hook.remove()
    if not torchvision:
        return model
    for layer in class_layers(model):
        layer.weight.normal_(0.0, min(0.1, 2.0 / (layer.weight[0].numel() ** 0.5 * max(rms[layer], 1e-6))))
    if model.family in ("retinanet", "fcos"):
        # the prior bias (-4.6) leaves a random head's scores under RetinaNet's threshold (0.05)
        cls_logits = model.model.head.classification_head.cls_logits  # channels: (anchor, class)
        classes = model.model.head.classification_head.num_classes
        cls_logits.weight.view(-1, classes, *cls_logits.weight.shape[1:])[:, 0] = 0.0
        cls_logits.bias.view(-1, classes)[:, 0] = -20.0
        cls_logits.bias.view(-1, classes)[:, 1:] = -2.5
    return model


@pytest.fixture
def calibrated():
    """:func:`calibrate`, for tests that build their own random detectors."""
    return calibrate
