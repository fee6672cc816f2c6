"""``Segmenter``: class maps and per-class scores from a run directory, a registry name, an export or a module."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.data import ImageInput, load_image_input
from oarkit.core.deploy import is_export_dir
from oarkit.core.engine.checkpoint import find_model_dir, load_model_dir
from oarkit.core.errors import OarkitError
from oarkit.core.registry import create_model, model_info

from .data.labels import LABEL_SETS
from .data.transforms import apply_spec, preprocess_spec
from .inference import InferenceConfig, infer
from .visualize import plot_segmentation, pseudo_color, save_figure

logger = logging.getLogger(__name__)



@dataclass
class SegmentationResult:
    """The segmentation of one image.

    Attributes:
        label_map: class index per pixel, HxW int64, at the image's own resolution.
        scores: per-class probabilities, CxHxW float32 (``None`` when the predictor was asked not to keep them).
        labels: class names, index order.
        source: the image's path, when it came from a file.
        image: the RGB uint8 input.
    """

    label_map: np.ndarray
    scores: np.ndarray | None
    labels: list[str]
    source: str | None = None
    image: np.ndarray | None = field(default=None, repr=False)

    @property
    def class_ids(self) -> list[int]:
        """The classes present in the prediction, most pixels first."""
        ids, counts = np.unique(self.label_map, return_counts=True)
        return [int(i) for i, _ in sorted(zip(ids, counts), key=lambda t: -t[1])]

    def name(self, class_id: int) -> str:
        return self.labels[class_id] if class_id < len(self.labels) else str(class_id)

    def to_dict(self) -> dict[str, Any]:
        """The classes present with their pixel count, area fraction and mean probability where predicted."""
        total = self.label_map.size
        classes = []
        for c in self.class_ids:
            mask = self.label_map == c
            entry: dict[str, Any] = {"class_id": c, "label": self.name(c), "pixels": int(mask.sum()),
                                     "fraction": round(float(mask.sum()) / total, 6)}
            if self.scores is not None:
                entry["mean_score"] = round(float(self.scores[c][mask].mean()), 6)
            classes.append(entry)
        return {"source": self.source, "size": list(self.label_map.shape), "classes": classes}

    def plot(self, alpha: float = 0.5) -> Any:
        """A figure of the image beside its colour-mask overlay, with a legend of the classes present."""
        image = self.image if self.image is not None else np.zeros((*self.label_map.shape, 3), np.uint8)
        title = Path(self.source).name if self.source else "input"
        return plot_segmentation(image, self.label_map, self.labels, title=title, alpha=alpha)

    def save(self, path: str | Path, *, pseudo: bool = True) -> Path:
        """Save :meth:`plot` to ``path`` and, with ``pseudo``, the pseudo-colour mask as ``<stem>_pseudo.png``."""
        path = save_figure(self.plot(), path)
        if pseudo:
            pseudo_color(self.label_map, len(self.labels)).save(path.with_name(f"{path.stem}_pseudo.png"))
        return path


def _load_export(path: Path) -> tuple[nn.Module, dict[str, Any]]:
    from oarkit.core.deploy import DeployedModel

    model = DeployedModel(path)
    post = model.manifest.postprocessing or {}
    return model, {"labels": list(model.manifest.labels), "preprocessing": dict(model.manifest.preprocessing),
                   "inference": dict(post.get("inference") or {})}


class Segmenter:
    """Semantic segmenter built from a run directory, a registry name, an ONNX export folder or a module.

    Example::

        seg = Segmenter("runs/shapes")                 # best/ of a run, a model directory, or an export folder
        result = seg("street.jpg")                     # one input -> one result
        result.label_map, result.scores; result.save("street_pred.png")

    Args:
        source: a run or model directory, an export folder (an artifact and its ``deploy.yaml``: ONNX, OpenVINO,
            ExecuTorch, PT2; a fixed-size export sees every window resized to its size), a registry name
            (``seg/pp_liteseg_stdc1``) or an ``nn.Module``.
        labels: class names (read from the source when omitted).
        preprocessing: the evaluation preprocessing spec (likewise).
        inference: ``InferenceConfig`` fields (mode, crop_size, stride, scales, flip); likewise.
        pretrained: for a registry name, load its registered weights (or a local file path).
        return_scores: keep the per-class probability maps in the results.
        batch_size: images of the same size per forward pass.
        device: ``cpu``, ``cuda``, ...
    """

    def __init__(self, source: str | Path | nn.Module, *, labels: Sequence[str] | None = None,
                 preprocessing: dict[str, Any] | None = None, inference: dict[str, Any] | None = None,
                 pretrained: bool | str = True, return_scores: bool = True, batch_size: int = 1,
                 device: str = "cpu") -> None:
        self.device = torch.device(device)
        meta: dict[str, Any] = {}
        if isinstance(source, nn.Module):
            self.forward: Callable[[torch.Tensor], Any] = source.to(self.device).eval()
        elif Path(source).exists() and is_export_dir(source):
            self.forward, meta = _load_export(Path(source))
        elif Path(source).exists():
            model, meta = load_model_dir(find_model_dir(Path(source)))
            self.forward = model.to(self.device).eval()
        else:
            card = model_info(str(source))
            if card.task != "seg":
                raise OarkitError(f"{source} is a {card.task} model, not a segmentation model")
            self.forward = create_model(str(source), pretrained=pretrained).to(self.device).eval()
            meta = {"labels": list(LABEL_SETS.get(card.label_names, [])),
                    "preprocessing": preprocess_spec(card.mean, card.std, card.input_size[1:])}
        self.preprocessing = dict(preprocessing or meta.get("preprocessing") or {})
        if not self.preprocessing:
            raise OarkitError("Segmenter needs the preprocessing: pass preprocessing=... for a bare module")
        self.labels = list(labels or meta.get("labels") or [])
        self.inference = InferenceConfig(**(inference or meta.get("inference") or {}))
        self.return_scores, self.batch_size = return_scores, max(1, int(batch_size))

    def load(self, item: ImageInput) -> tuple[np.ndarray, str | None]:
        """An RGB uint8 array from a path, an array (HW, HWC; RGB) or a PIL image, with its source path."""
        return load_image_input(item, taker="Segmenter")

    def preprocess(self, images: Sequence[np.ndarray]) -> torch.Tensor:
        return torch.from_numpy(np.stack([apply_spec(im, self.preprocessing) for im in images])).to(self.device)

    def predict_logits(self, batch: torch.Tensor) -> torch.Tensor:
        """Logits (N, C, H, W) of a preprocessed batch under the inference mode."""
        return infer(self.forward, batch, self.inference)

    def postprocess(self, logits: torch.Tensor, images: Sequence[np.ndarray],
                    sources: Sequence[str | None]) -> list[SegmentationResult]:
        results = []
        for logit, image, src in zip(logits, images, sources):
            if tuple(logit.shape[-2:]) != image.shape[:2]:  # a resize in the preprocessing: back to the image
                logit = F.interpolate(logit[None], size=image.shape[:2], mode="bilinear", align_corners=False)[0]
            probs = logit.float().softmax(dim=0)
            results.append(SegmentationResult(label_map=probs.argmax(dim=0).cpu().numpy().astype(np.int64),
                                              scores=probs.cpu().numpy() if self.return_scores else None,
                                              labels=self.labels, source=src, image=image))
        return results

    def __call__(self, inputs: ImageInput | Sequence[ImageInput]) -> SegmentationResult | list[SegmentationResult]:
        """Segment one input (returns one result) or a list of inputs (returns a list)."""
        single = not isinstance(inputs, (list, tuple))
        loaded = [self.load(item) for item in ([inputs] if single else list(inputs))]
        results: list[SegmentationResult] = []
        start = 0
        while start < len(loaded):
            end = start + 1
            shape = loaded[start][0].shape
            while end < len(loaded) and end - start < self.batch_size and loaded[end][0].shape == shape:
                end += 1
            images = [im for im, _ in loaded[start:end]]
            results += self.postprocess(self.predict_logits(self.preprocess(images)), images,
                                        [src for _, src in loaded[start:end]])
            start = end
        return results[0] if single else results

    predict = __call__
