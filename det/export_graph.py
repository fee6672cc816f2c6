"""The detector's export graph (forward, decode and NMS in one module), the artifact wrapper the task scores, and
the comparator that matches exported detections with eager ones box by box."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from oarkit.core.errors import ConfigError
from oarkit.core.export.compare import Difference, MatchedBoxes, Outputs

from .postprocess import NMSConfig, multiclass_nms, split_detections


def _decoder(model: nn.Module) -> nn.Module:
    """The module that has ``decode`` (a DDP or compile wrapper keeps it on ``.module`` / ``._orig_mod``)."""
    for attr in ("module", "_orig_mod"):
        if not hasattr(model, "decode") and hasattr(model, attr):
            model = getattr(model, attr)
    return model


def detect_fixed(model: nn.Module, images: torch.Tensor, nms: NMSConfig
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(boxes [B, K, 4], scores [B, K], labels [B, K], num [B])`` of a det/ model: forward, decode, NMS."""
    boxes, scores = _decoder(model).decode(model(images))
    return multiclass_nms(boxes, scores, nms)


def detections_of(model: nn.Module, images: torch.Tensor, nms: NMSConfig) -> list[dict[str, torch.Tensor]]:
    """Per-image detections of a det/ model, or of an exported artifact (:class:`DeployedDetector`)."""
    out = model(images) if getattr(model, "returns_detections", False) else detect_fixed(model, images, nms)
    return split_detections(*out)


class DetectionExport(nn.Module):
    """Export wrapper: images in, fixed-size detections out (``boxes``, ``scores``, ``labels``, ``num``)."""

    def __init__(self, model: nn.Module, nms: NMSConfig) -> None:
        super().__init__()
        self.model, self.nms = model, nms

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        return detect_fixed(self.model, images, self.nms)


class DeployedDetector(nn.Module):
    """An exported detector (NMS inside) as the task's ``validation_step`` calls a model: it already returns
    detections, so the task only splits them per image."""

    returns_detections = True

    def __init__(self, artifact: Any) -> None:
        super().__init__()
        self.artifact = artifact

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, ...]:
        boxes, scores, labels, num = self.artifact(images)
        return boxes, scores, labels.long(), num.long()


#: pixels: thinner boxes are judged as if this wide (a box clipped flat at the border has an ill-conditioned IoU)
MIN_BOX_SIDE = 1.0


class DetectionComparator:
    """Fixed-size detections compared image by image: the first ``num`` rows of each image matched by IoU
    (:class:`~oarkit.core.export.compare.MatchedBoxes`, a box with a box of its own class first).

    Boxes are in pixels; a side shorter than :data:`MIN_BOX_SIDE` is judged as that long about its centre.
    Only detections scoring at least the image's cut are judged: ``min_score`` (or the NMS score threshold), or
    the lowest score of an image that filled all its rows. A box within ``margin`` of the cut may be kept by one
    side only (a rounding difference, or an int8 score shift, decides which of two near-equal boxes is kept, not
    the export): it matches when it can and is not counted when it cannot.

    Args:
        score_threshold: the NMS score threshold.
        margin: the score band around a cut whose boxes may differ.
        min_iou: pairs below this IoU do not match.
        min_score: judge only detections scoring at least this (``None``: every detection the NMS keeps); an int8
            artifact is held to the confident detections a user sees, not to the low-score tail that any
            perturbation reshuffles.
        tolerances: bounds of its own per output (``boxes``: ``1 - IoU`` of the worst pair or the share of judged
            boxes left unmatched; ``scores``: the largest score difference; ``labels``: the share of pairs that
            change class), in place of the export format's.
    """

    names = ("boxes", "scores", "labels", "num")

    def __init__(self, score_threshold: float = 0.0, margin: float = 1e-3, min_iou: float = 0.5, *,
                 min_score: float | None = None, tolerances: dict[str, float] | None = None) -> None:
        unknown = sorted(set(tolerances or {}) - set(self.names))
        if unknown:
            raise ConfigError(f"DetectionComparator tolerances for {unknown}: the outputs are {list(self.names)}")
        self.score_threshold, self.margin = float(score_threshold), float(margin)
        self.min_score = None if min_score is None else float(min_score)
        self.tolerances = dict(tolerances or {})
        self.matcher = MatchedBoxes("boxes", scores="scores", labels="labels", batch_index="image", min_iou=min_iou,
                                    optional="optional", min_side=MIN_BOX_SIDE)

    def _rows(self, out: Outputs, cut: list[float]) -> dict[str, torch.Tensor]:
        rows: dict[str, list[torch.Tensor]] = {"boxes": [], "scores": [], "labels": [], "image": [], "optional": []}
        for i, count in enumerate(out["num"].reshape(-1).tolist()):
            scores = out["scores"][i, :count].float().cpu()
            keep = scores >= cut[i] - self.margin
            rows["boxes"].append(out["boxes"][i, :count].float().cpu()[keep])
            rows["scores"].append(scores[keep])
            rows["labels"].append(out["labels"][i, :count].long().cpu()[keep])
            rows["image"].append(torch.full((int(keep.sum()),), i, dtype=torch.long))
            rows["optional"].append(scores[keep] < cut[i] + self.margin)
        return {k: torch.cat(v) if v else torch.zeros(0) for k, v in rows.items()}

    def __call__(self, reference: Outputs, actual: Outputs) -> dict[str, Difference]:
        if reference["boxes"].shape != actual["boxes"].shape:
            return {n: Difference(math.inf, math.inf, f"shape {tuple(actual[n].shape)}, eager "
                                  f"{tuple(reference[n].shape)}") for n in self.names}
        rows = reference["scores"].shape[1]
        cut = []
        for i in range(reference["scores"].shape[0]):
            c = self.score_threshold if self.min_score is None else max(self.score_threshold, self.min_score)
            for side in (reference, actual):
                n = int(side["num"].reshape(-1)[i])
                if n == rows and n:  # a full image: its lowest score is a cut too
                    c = max(c, float(side["scores"][i, n - 1]))
            cut.append(c)
        ref_rows = self._rows(reference, cut)
        diffs = self.matcher(ref_rows, self._rows(actual, cut))
        judged = int((~ref_rows["optional"].bool()).sum()) if len(ref_rows["optional"]) else 0
        diffs["boxes"].note = "; ".join(filter(None, [diffs["boxes"].note, f"{judged} eager detections judged" if judged
                                                      else "no eager detection above the cut: nothing judged"]))
        diffs.pop("image", None)
        diffs.pop("optional", None)
        num_ref, num_act = reference["num"].reshape(-1).long().cpu(), actual["num"].reshape(-1).long().cpu()
        changed = int((num_ref != num_act).sum())
        diffs["num"] = Difference(0.0, float((num_ref - num_act).abs().max()) if len(num_ref) else 0.0,
                                  f"{changed} images keep another number of boxes (near the cuts)" if changed else "")
        if self.min_score is not None:
            diffs["boxes"].note = "; ".join(filter(None, [f"detections scoring >= {self.min_score:g} judged",
                                                          diffs["boxes"].note]))
        for name, bound in self.tolerances.items():
            diffs[name].tolerance = float(bound)
        return diffs
