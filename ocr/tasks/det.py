"""The text-detection task (``ocr/det``): a DB detector trained with the DB loss, validated by DB post-processing
and the polygon-IoU hmean."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from oarkit.core.engine.deploy_spec import Dim, InputSpec
from oarkit.core.engine.task import DeploySpec, Task
from oarkit.core.errors import ConfigError
from oarkit.core.export.compare import Probabilities
from oarkit.core.registry import factory_name, model_factory, model_info

from ..data.module import OCRDetData
from ..int8 import ThresholdAgreement, int8_export_options
from ..losses import DBLoss
from ..metrics import DetMetric
from ..postprocess.db import DBPostProcess, filter_boxes

logger = logging.getLogger(__name__)

#: the share of probability-map pixels an int8 export may move across the binarisation threshold (PP-OCRv4 mobile
#: on rendered pages: 0.4-0.5%, all at text borders, hmean unchanged)
INT8_BINARY_MAP_TOLERANCE = 0.01


def published_postprocess(model: nn.Module, overrides: dict[str, Any] | None = None) -> DBPostProcess:
    """PaddleOCR's evaluation settings (:class:`DBPostProcess`'s defaults, ``PostProcess`` in its det_*.yml
    recipes), under the detector's published ones (``db_postprocess``: PP-OCRv6's), under ``overrides``."""
    return DBPostProcess(**{**(getattr(model, "db_postprocess", None) or {}), **(overrides or {})})


class DetExport(nn.Module):
    """Export wrapper: the eval-mode detector returning its probability map ``[B, 1, H, W]``."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        out = self.model(images)
        return out["maps"][:, :1] if isinstance(out, dict) else out


def probability_map(outputs: Any) -> torch.Tensor:
    """The ``[B, 1, H, W]`` probability map of a detector's (or an exported detector's) outputs."""
    if isinstance(outputs, dict):
        return outputs["maps"][:, :1]
    if isinstance(outputs, (tuple, list)):
        return outputs[0]
    return outputs


class TextDetectionTask(Task):
    """DB text detection.

    Args:
        model: a registry name (``ocr/ppocrv4_det_mobile``) or a factory (a ``_partial_`` ``create_model`` node).
        pretrained: load the registered weights (``True``) or a local file: fine-tuning from Paddle's.
        loss: the DB loss (default: alpha 5, beta 10, 3:1 negatives).
        postprocess: DB post-processing settings (:class:`~oarkit.ocr.postprocess.DBPostProcess`) over the model's
            published ones (``db_postprocess``, PP-OCRv6's) and PaddleOCR's evaluation settings.
        channels_last: keep the model's weights in channels-last memory order (PyTorch's CPU backward of the
            5x5 depthwise convolutions of PP-LCNetV3 is about 20x slower in the default order); checkpoints
            are saved contiguous either way.
    """

    task_id = "ocr/det"

    def __init__(self, model: str | Callable[..., nn.Module] = "ocr/ppocrv4_det_mobile", *,
                 pretrained: bool | str = False, loss: nn.Module | None = None,
                 postprocess: dict[str, Any] | None = None, channels_last: bool = False) -> None:
        self.model_factory = model_factory(model, pretrained=pretrained)
        self.loss = loss or DBLoss()
        self.postprocess_overrides = dict(postprocess or {})
        self.postprocess = DBPostProcess(**self.postprocess_overrides)
        self.preprocessing: dict[str, Any] = {}
        self.channels_last = bool(channels_last)

    @property
    def model_name(self) -> str | None:
        return factory_name(self.model_factory)

    def setup(self, data: OCRDetData) -> nn.Module:
        name = self.model_name
        if name is not None:
            spec = model_info(name).input_spec
            if getattr(spec, "mean", None) is not None and hasattr(data, "configure"):
                data.configure(mean=spec.mean, std=spec.std)
        self.preprocessing = data.preprocess.to_dict()
        model = self.model_factory()
        self.postprocess = published_postprocess(model, self.postprocess_overrides)
        if self.channels_last:
            model = model.to(memory_format=torch.channels_last)
        logger.info("detector %s (%.2fM parameters)", name or type(model).__name__,
                    sum(p.numel() for p in model.parameters()) / 1e6)
        return model

    def restore(self, meta: dict[str, Any]) -> None:
        self.preprocessing = dict(meta.get("preprocessing") or {})
        if not self.preprocessing:
            raise ConfigError("meta.json has no preprocessing, so the detector cannot be rebuilt; retrain it with "
                              "tools/train.py, which records it")
        if meta.get("postprocess"):
            self.postprocess = DBPostProcess(**meta["postprocess"])

    def configure_data(self, data: OCRDetData) -> None:
        data.use_trained(self.preprocessing)

    def default_data(self, root: str) -> OCRDetData:
        return OCRDetData(root=root)

    # -- steps ------------------------------------------------------------------------------------------------
    def training_step(self, model: nn.Module, batch: Any) -> dict[str, torch.Tensor]:
        out = model(batch["image"])
        if not isinstance(out, dict) or "maps" not in out:
            raise ConfigError(f"{type(model).__name__} in training mode must return {{'maps': [B, 3, H, W]}} "
                              "(the DB head's shrink, threshold and binary maps)")
        return self.loss(out["maps"], batch)

    def boxes(self, prob: torch.Tensor, source_sizes: list[tuple[int, int]]) -> list[dict[str, np.ndarray]]:
        """DB post-processing of a batch of probability maps: per image ``{"boxes": [N, 4, 2], "scores": [N]}`` in
        source coordinates."""
        maps = prob.detach().float().cpu().numpy()
        out = []
        for m, size in zip(maps, source_sizes):
            boxes, scores = self.postprocess(m[0], tuple(size))
            boxes, scores = filter_boxes(boxes, scores, tuple(size))
            out.append({"boxes": boxes, "scores": scores})
        return out

    def distill_logits(self, outputs: Any) -> list[tuple[torch.Tensor, int]]:
        """The shrink (probability) map as two-way logits ``[B, 2, H, W]`` (text, not text) over dimension 1:
        the teacher's per-pixel probability is the soft target (PP-OCR's CML distills the DB maps)."""
        prob = probability_map(outputs)[:, 0].float().clamp(1e-6, 1.0 - 1e-6)
        return [(torch.stack([prob.log(), torch.log1p(-prob)], dim=1), 1)]

    def validation_step(self, model: nn.Module, batch: Any) -> list[dict[str, np.ndarray]]:
        return self.boxes(probability_map(model(batch["image"])), batch["source_size"])

    def build_metric(self) -> DetMetric:
        return DetMetric()

    def collate(self, samples: list[dict[str, Any]]) -> dict[str, Any]:
        batch: dict[str, Any] = {"image": torch.stack([s["image"] for s in samples])}
        for key in samples[0]:
            if key == "image":
                continue
            values = [s[key] for s in samples]
            batch[key] = torch.stack(values) if isinstance(values[0], torch.Tensor) else values
        return batch

    def export_inputs(self, batch: Any) -> tuple[torch.Tensor, ...]:
        return (batch["image"],)

    # -- export, metadata ---------------------------------------------------------------------------------------
    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        """One page at the training crop (640x640 before setup)."""
        h, w = self.preprocessing.get("crop_size") or (640, 640)
        return (torch.randn(1, 3, int(h), int(w)),)

    def deploy_spec(self, model: nn.Module) -> DeploySpec:
        """The probability map with dynamic batch, height and width (multiples of 32 up to 2048); an int8
        artifact is held to the binary map DB post-processing draws from it (:mod:`oarkit.ocr.compare`)."""
        if hasattr(model, "reparameterize"):
            model.reparameterize()
        return DeploySpec(
            module=DetExport(model).eval(), example_inputs=self.example_inputs(), input_names=["images"],
            output_names=["probability"],
            inputs=[InputSpec("images", [Dim("batch", 1, 16), 3, Dim("height", 32, 2048, multiple=32),
                                         Dim("width", 32, 2048, multiple=32)])],
            output_axes={"probability": {0: "batch", 2: "height", 3: "width"}},
            compare=Probabilities(["probability"], threshold=self.postprocess.thresh),
            quantized_compare=ThresholdAgreement(["probability"], threshold=self.postprocess.thresh,
                                                 tolerance=INT8_BINARY_MAP_TOLERANCE),
            export_options=int8_export_options(["Conv"]),
            preprocessing=self.preprocessing, postprocessing={"db": self.postprocess.to_dict()})

    def meta(self) -> dict[str, Any]:
        return {"preprocessing": self.preprocessing, "postprocess": self.postprocess.to_dict()}

    def predictor(self, model: nn.Module, **kwargs: Any) -> Any:
        from ..pipeline.ocr import OCR

        return OCR(det=model, det_preprocess=self.preprocessing, det_postprocess=self.postprocess.to_dict(),
                   **kwargs)
