"""``Detector``: boxes, scores and class names from a run directory, a registry name, an export or a module."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from oarkit.core.data import ImageInput, load_image_input
from oarkit.core.deploy import is_export_dir
from oarkit.core.engine.checkpoint import find_model_dir, load_model_dir
from oarkit.core.errors import OarkitError
from oarkit.core.registry import create_model, model_info

from .data.transforms import apply_spec, preprocess_spec
from .export_graph import DeployedDetector, detections_of
from .postprocess import NMSConfig
from .visualize import draw_detections, save_image

logger = logging.getLogger(__name__)


@dataclass
class DetectionResult:
    """The detections of one image, best first.

    Attributes:
        boxes: ``[K, 4]`` float32 ``x1, y1, x2, y2`` in the image's own pixels.
        scores: ``[K]`` float32 confidences.
        class_ids: ``[K]`` int64 class indices.
        names: class names, index order.
        source: the image's path, when it came from a file.
        image: the RGB uint8 input.
    """

    boxes: np.ndarray
    scores: np.ndarray
    class_ids: np.ndarray
    names: list[str]
    source: str | None = None
    image: np.ndarray | None = field(default=None, repr=False)

    @property
    def labels(self) -> list[str]:
        """The class name of each box."""
        return [self.names[c] if 0 <= c < len(self.names) else str(c) for c in self.class_ids.tolist()]

    def __len__(self) -> int:
        return len(self.scores)

    def to_dict(self) -> dict[str, Any]:
        """``{"source", "size", "detections": [{"box", "score", "class_id", "label"}, ...]}``."""
        size = list(self.image.shape[:2]) if self.image is not None else None
        return {"source": self.source, "size": size,
                "detections": [{"box": [round(float(v), 2) for v in box], "score": round(float(score), 4),
                                "class_id": int(cls), "label": label}
                               for box, score, cls, label in zip(self.boxes, self.scores, self.class_ids,
                                                                 self.labels)]}

    def plot(self) -> np.ndarray:
        """The image with its labelled boxes drawn (RGB uint8)."""
        h, w = (int(self.boxes[:, 3].max(initial=1)), int(self.boxes[:, 2].max(initial=1)))
        image = self.image if self.image is not None else np.full((h, w, 3), 255, np.uint8)
        return draw_detections(image, self.boxes, self.scores, self.class_ids, self.names)

    def save(self, path: str | Path) -> Path:
        """Save :meth:`plot` to ``path`` (PNG or JPEG by suffix) and return it."""
        return save_image(self.plot(), path)


class Detector:
    """Object detector built from a run directory, a registry name, an export folder or a module.

    Example::

        det = Detector("runs/shapes")               # best/ of a run, a model directory, or an export folder
        result = det("street.jpg")                  # one input -> one result
        result.boxes, result.scores, result.labels; result.save("street_pred.jpg")

    Args:
        source: a run or model directory, an export folder (an artifact with NMS inside and its ``deploy.yaml``:
            ONNX, OpenVINO, PT2), a registry name (``det/picodet_lcnet_x1_0_layout``) or an ``nn.Module``
            keeping the det/ model contract.
        labels: class names (read from the source when omitted).
        preprocessing: the evaluation preprocessing spec (likewise).
        nms: :class:`~oarkit.det.postprocess.NMSConfig` fields (likewise; an export keeps its own).
        threshold: detections scoring below this are left out of the results.
        pretrained: for a registry name, load its registered weights (or a local file path).
        batch_size: images per forward pass.
        device: ``cpu``, ``cuda``, ...
    """

    def __init__(self, source: str | Path | nn.Module, *, labels: Sequence[str] | None = None,
                 preprocessing: dict[str, Any] | None = None, nms: dict[str, Any] | None = None,
                 threshold: float = 0.5, pretrained: bool | str = True, batch_size: int = 1,
                 device: str = "cpu") -> None:
        self.device = torch.device(device)
        meta: dict[str, Any] = {}
        if isinstance(source, nn.Module):
            self.model: nn.Module = source.to(self.device).eval()
        elif Path(source).exists() and is_export_dir(source):
            from oarkit.core.deploy import DeployedModel

            artifact = DeployedModel(Path(source))
            self.model = DeployedDetector(artifact)
            meta = {"labels": list(artifact.manifest.labels), "preprocessing": dict(artifact.manifest.preprocessing),
                    "postprocessing": dict(artifact.manifest.postprocessing or {})}
        elif Path(source).exists():
            model, meta = load_model_dir(find_model_dir(Path(source)))
            self.model = model.to(self.device).eval()
        else:
            self.model, meta = _from_registry(str(source), pretrained)
            self.model = self.model.to(self.device).eval()
        self.preprocessing = dict(preprocessing or meta.get("preprocessing") or {})
        if not self.preprocessing:
            raise OarkitError("Detector needs the preprocessing: pass preprocessing=... for a bare module")
        self.labels = list(labels or meta.get("labels") or [])
        self.nms = NMSConfig(**(nms or (meta.get("postprocessing") or {}).get("nms") or {}))
        self.threshold, self.batch_size = float(threshold), max(1, int(batch_size))

    def load(self, item: ImageInput) -> tuple[np.ndarray, str | None]:
        """An RGB uint8 array from a path, an array (HW, HWC; RGB) or a PIL image, with its source path."""
        return load_image_input(item, taker="Detector")

    @torch.no_grad()
    def predict_batch(self, images: Sequence[np.ndarray]) -> list[dict[str, np.ndarray]]:
        """Detections of each image in its own pixels, above :attr:`threshold`."""
        prepared = [apply_spec(image, self.preprocessing) for image in images]
        batch = torch.from_numpy(np.stack([p[0] for p in prepared])).to(self.device)
        out = []
        for det, (_, (sy, sx)) in zip(detections_of(self.model, batch, self.nms), prepared):
            keep = det["scores"] >= self.threshold
            factor = torch.tensor([sx, sy, sx, sy], dtype=torch.float32)
            out.append({"boxes": (det["boxes"][keep].float().cpu() / factor).numpy(),
                        "scores": det["scores"][keep].float().cpu().numpy(),
                        "class_ids": det["labels"][keep].long().cpu().numpy()})
        return out

    def __call__(self, inputs: ImageInput | Sequence[ImageInput]) -> DetectionResult | list[DetectionResult]:
        """Detect objects in one input (returns one result) or a list of inputs (returns a list)."""
        single = not isinstance(inputs, (list, tuple))
        loaded = [self.load(item) for item in ([inputs] if single else list(inputs))]
        results: list[DetectionResult] = []
        for start in range(0, len(loaded), self.batch_size):
            chunk = loaded[start:start + self.batch_size]
            for (image, src), det in zip(chunk, self.predict_batch([im for im, _ in chunk])):
                h, w = image.shape[:2]
                boxes = det["boxes"].copy()
                boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, w)
                boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, h)
                results.append(DetectionResult(boxes, det["scores"], det["class_ids"], self.labels, src, image))
        return results[0] if single else results

    predict = __call__


def _from_registry(name: str, pretrained: bool | str) -> tuple[nn.Module, dict[str, Any]]:
    """A registered detector with the preprocessing and labels of its card."""
    from .models.zoo import labels_of

    card = model_info(name)
    if card.task != "det":
        raise OarkitError(f"{name} is a {card.task} model, not a detector")
    spec = card.input_spec
    model = create_model(name, pretrained=pretrained)
    meta = {"labels": labels_of(card.label_names, card.num_classes),
            "preprocessing": preprocess_spec(spec.size, spec.mean, spec.std)}
    return model, meta
