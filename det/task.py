"""The object-detection task: what the kit-agnostic Trainer needs to train, validate and export a detector."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oarkit.core.engine.deploy_spec import Dim, InputSpec
from oarkit.core.engine.task import DeploySpec, Task
from oarkit.core.errors import ConfigError
from oarkit.core.registry import factory_name, model_factory, model_info

from .data.dataset import detection_collate
from .data.module import DetectionData
from .distill import head_layers, head_logits
from .export_graph import DeployedDetector, DetectionComparator, DetectionExport, detections_of
from .metrics import COCOMetric, DetectionMetric, VOCMetric
from .postprocess import NMSConfig

logger = logging.getLogger(__name__)

METRICS = ("coco", "voc")

#: onnxruntime int8 of a detector: convolutions only, so that decoding (sigmoid, softmax, the distance integral),
#: top-k and NMS stay float; min-max ranges, since percentile clipping cuts the large activations that carry box
#: extents (the demo run: mAP 0.7394 eager, 0.7357 with these settings, 0.7246 with percentile ranges, 0.45 with
#: every op type quantized)
INT8_OPTIONS = {"op_types": ["Conv"], "calibration_method": "minmax"}
#: an int8 detector is held to the detections a user sees (score >= 0.5, the Detector's default threshold, give or
#: take the 0.1 a score may move): each matched by a box of its class with IoU >= 0.75 (at most a quarter left
#: unmatched), scores within 0.1, at most 5% of matched boxes changing class; the mAP delta is bounded by the format
#: (1 point: 0.01 mAP). The demo run's 96 first val images: worst IoU 0.86, scores within 0.022, no class change
#: (onnx_int8 and openvino_int8). The low-score tail is left to the mAP: any perturbation reshuffles it (judged from
#: score 0.3, one OpenVINO box of score 0.45 moved to IoU 0.71; from 0.01, half the boxes change).
INT8_MIN_SCORE, INT8_SCORE_TOLERANCE = 0.5, 0.1
INT8_TOLERANCES = {"boxes": 0.25, "scores": INT8_SCORE_TOLERANCE, "labels": 0.05}
#: a float export is also held to how far eager's own detections move when the input moves by this much (the
#: deploy spec's ``spread_nudge``): top-k and NMS pick among near-equal candidates, and a DETR's query selection
#: feeds every query's attention, so rounding-sized input changes move some models' detections past 1e-4 (random
#: weights: D-FINE-L scores 3.5e-3 to 6.7e-3, D-FINE-X 2.8e-2 to 3.7e-2, RetinaNet v2 boxes 1 - IoU 2.3e-3 to
#: 3.2e-3; onnxruntime's differences stayed 4 to 7 times under those)
SPREAD_NUDGE = 1e-6


class DetectionTask(Task):
    """Object detection with a registry model, the shared multiclass NMS, and COCO or VOC mAP.

    The model keeps the kit's contract (:mod:`oarkit.det.models`): in training ``model(images, targets)`` returns
    its losses, in evaluation ``model.decode(model(images))`` gives every candidate box with class scores, which
    :func:`~oarkit.det.postprocess.multiclass_nms` turns into detections.

    Args:
        model: a registry name (``det/ppyoloe_plus_crn_s``) or a factory taking ``num_classes`` (a ``_partial_``
            ``oarkit.core.create_model`` node in configs).
        pretrained: for a name, load its registered weights (``True``) or a local file; the head is re-initialised
            when the number of classes differs.
        metric: ``coco`` (mAP 0.5:0.95, the main indicator ``map``) or ``voc`` (mAP at IoU 0.5).
        voc_map_type: ``11point`` or ``area`` for the VOC metric.
        score_threshold, iou_threshold, pre_nms_top_k, max_detections: the NMS settings
            (:class:`~oarkit.det.postprocess.NMSConfig`).
    """

    task_id = "det"

    def __init__(self, model: str | Callable[..., nn.Module] = "det/ppyoloe_plus_crn_s", *,
                 pretrained: bool | str = False, metric: str = "coco", voc_map_type: str = "11point",
                 score_threshold: float = 0.01, iou_threshold: float = 0.6, pre_nms_top_k: int = 1000,
                 max_detections: int = 100) -> None:
        if metric not in METRICS:
            raise ConfigError(f"task.metric={metric!r} must be one of {list(METRICS)}")
        self.model_factory = model_factory(model, pretrained=pretrained)
        self.metric_name, self.voc_map_type = metric, voc_map_type
        self.nms = NMSConfig(score_threshold=float(score_threshold), iou_threshold=float(iou_threshold),
                             pre_nms_top_k=int(pre_nms_top_k), max_detections=int(max_detections))
        self.labels: list[str] = []
        self.preprocessing: dict[str, Any] = {}
        self.stride_multiple = 32

    @property
    def model_name(self) -> str | None:
        """The registry name behind the model factory, when there is one."""
        return factory_name(self.model_factory)

    # -- setup ----------------------------------------------------------------------------------------------
    def setup(self, data: DetectionData) -> nn.Module:
        name = self.model_name
        if name is not None:
            spec = model_info(name).input_spec
            data.configure(size=getattr(spec, "size", None), mean=getattr(spec, "mean", None),
                           std=getattr(spec, "std", None))
            self.stride_multiple = int(getattr(spec, "stride_multiple", 32))
        self.labels = list(data.classes)
        self.preprocessing = data.preprocess_spec()
        h, w = self.preprocessing["size"]
        if h % self.stride_multiple or w % self.stride_multiple:
            raise ConfigError(f"data.size={[h, w]}: both sides must be multiples of {self.stride_multiple} for "
                              f"{name or 'this model'}")
        bad = [list(size) for size in getattr(data, "multi_scale", []) if size[0] % self.stride_multiple
               or size[1] % self.stride_multiple]
        if bad:
            raise ConfigError(f"data.multi_scale has sizes {bad} that are not multiples of {self.stride_multiple}, "
                              f"which {name or 'this model'} needs; round them to multiples of {self.stride_multiple}")
        model = self.model_factory(num_classes=len(self.labels))
        logger.info("model %s with %d classes (%.2fM parameters)", name or type(model).__name__, len(self.labels),
                    sum(p.numel() for p in model.parameters()) / 1e6)
        return model

    def restore(self, meta: dict[str, Any]) -> None:
        self.labels = list(meta.get("labels") or [])
        self.preprocessing = dict(meta.get("preprocessing") or {})
        if not self.preprocessing:
            raise ConfigError("meta.json has no preprocessing, so the detector cannot be rebuilt; retrain it with "
                              "tools/train.py, which records it")
        post = meta.get("postprocessing") or {}
        if post.get("nms"):
            self.nms = NMSConfig(**post["nms"])
        self.stride_multiple = int(post.get("stride_multiple", self.stride_multiple))

    def configure_data(self, data: DetectionData) -> None:
        data.use_trained(preprocessing=self.preprocessing, labels=self.labels)

    def default_data(self, root: str) -> DetectionData:
        return DetectionData(root=root)

    def callbacks(self) -> list[Any]:
        from .assigners import AssignerEpochCallback

        return [AssignerEpochCallback()]

    # -- steps ----------------------------------------------------------------------------------------------
    def training_step(self, model: nn.Module, batch: Any) -> dict[str, torch.Tensor]:
        images, targets = batch
        losses = model(images, [{"boxes": t["boxes"], "labels": t["labels"]} for t in targets])
        if "loss" not in losses:
            raise ConfigError(f"{type(model).__name__} returned {sorted(losses)} in training, without 'loss'; a det/ "
                              "model returns its weighted total under 'loss' (see oarkit.det.models)")
        return losses

    def distill_layers(self, model: nn.Module) -> list[str]:
        layers = head_layers(model)
        self._distill_kinds = {**getattr(self, "_distill_kinds", {}), **layers}
        return list(layers)

    def distill_logits(self, outputs: Any) -> list[tuple[torch.Tensor, int]]:
        return head_logits(outputs, getattr(self, "_distill_kinds", {}), len(self.labels))

    def detect(self, model: nn.Module, images: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        """Detections per image (``boxes`` in input pixels, ``scores``, ``labels``) of a model or an artifact."""
        return detections_of(model, images, self.nms)

    def validation_step(self, model: nn.Module, batch: Any) -> list[dict[str, torch.Tensor]]:
        return self.detect(model, batch[0])

    def build_metric(self) -> DetectionMetric:
        if self.metric_name == "voc":
            return VOCMetric(max(1, len(self.labels)), self.labels, map_type=self.voc_map_type)
        return COCOMetric(max(1, len(self.labels)), self.labels)

    def collate(self, samples: list[Any]) -> Any:
        return detection_collate(samples)

    # -- export, metadata, prediction -------------------------------------------------------------------------
    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        h, w = self.preprocessing.get("size", (640, 640))
        return (torch.randn(1, 3, h, w),)

    def pixel_range(self) -> tuple[float, float]:
        """The values an image takes after the preprocessing's normalisation (pixels in [0, 1]; the widest over the
        channels): what random verification inputs span, so that they look like images to the model rather than
        standard normal noise, which a detector's input never is (a calibrated random R-CNN keeps no detection on
        it, so that an export check would judge nothing)."""
        mean = [float(v) for v in self.preprocessing.get("mean", (0.0, 0.0, 0.0))]
        std = [float(v) for v in self.preprocessing.get("std", (1.0, 1.0, 1.0))]
        return min(-m / s for m, s in zip(mean, std)), max((1.0 - m) / s for m, s in zip(mean, std))

    def postprocessing(self) -> dict[str, Any]:
        return {"nms": self.nms.to_dict(), "stride_multiple": self.stride_multiple, "box_format": "xyxy",
                "outputs": ["boxes", "scores", "labels", "num"]}

    def deploy_spec(self, model: nn.Module) -> DeploySpec:
        """Detections after NMS inside the graph, fixed-size (``max_detections`` rows per image and a count), at
        the evaluation size with a dynamic batch; compared by matching boxes (IoU) image by image (within the
        model's own ``export_tolerances`` where it states them, or to eager's own spread under a
        :data:`SPREAD_NUDGE` input change where that is larger), an int8 artifact on its confident detections (see
        :data:`INT8_TOLERANCES`), quantized with :data:`INT8_OPTIONS` and the model's ``int8_float_modules`` kept
        float. Random verification inputs span :meth:`pixel_range`."""
        if hasattr(model, "reparameterize"):
            model.reparameterize()
        h, w = self.preprocessing.get("size", (640, 640))
        float_modules = [f"model.{name}" for name in getattr(model, "int8_float_modules", ())]  # inside the wrapper
        quantized = DetectionComparator(self.nms.score_threshold, margin=INT8_SCORE_TOLERANCE,
                                        min_score=max(INT8_MIN_SCORE, self.nms.score_threshold),
                                        tolerances=INT8_TOLERANCES)
        compare = DetectionComparator(self.nms.score_threshold, tolerances=getattr(model, "export_tolerances", None))
        low, high = self.pixel_range()
        return DeploySpec(module=DetectionExport(model, self.nms).eval(), example_inputs=self.example_inputs(),
                          input_names=["images"], output_names=["boxes", "scores", "labels", "num"],
                          inputs=[InputSpec("images", [Dim("batch", 1, 64), 3, h, w], low=low, high=high)],
                          compare=compare, quantized_compare=quantized, spread_nudge=SPREAD_NUDGE,
                          export_options={"onnx_int8": {**INT8_OPTIONS, "float_modules": float_modules}},
                          deployed_wrapper=DeployedDetector,
                          preprocessing=self.preprocessing, postprocessing=self.postprocessing(), labels=self.labels)

    def meta(self) -> dict[str, Any]:
        return {"labels": self.labels, "preprocessing": self.preprocessing, "postprocessing": self.postprocessing()}

    def plot_metric(self, metric: DetectionMetric, directory: str) -> list[str]:
        if not metric.pr_curves:
            return []
        return [metric.plot_pr_curves(Path(directory) / "pr_curve.png",
                                      title=f"{self.metric_name.upper()} precision-recall (IoU 0.5)")]

    def predictor(self, model: nn.Module, **kwargs: Any) -> Any:
        from .predictor import Detector

        return Detector(model, labels=self.labels, preprocessing=self.preprocessing, nms=self.nms.to_dict(),
                        **kwargs)
