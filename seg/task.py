"""The semantic-segmentation task: what the kit-agnostic Trainer needs to train, validate and export a segmenter."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oarkit.core.engine.task import DeploySpec, Task
from oarkit.core.errors import ConfigError
from oarkit.core.registry import factory_name, model_factory, model_info

from .data.datasets import pad_collate
from .data.labels import color_map
from .data.module import SegmentationData
from .inference import InferenceConfig, infer, main_logits
from .losses import CrossEntropyLoss
from .metrics import SegmentationMetric

logger = logging.getLogger(__name__)


class SegmentationExport(nn.Module):
    """Export wrapper: the eval-mode model returning one logits tensor (N, C, H, W) at the input resolution."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return main_logits(self.model(images), images.shape[2:])


def as_list(outputs: Any) -> list[torch.Tensor]:
    """A model's outputs as a list of logits tensors (main first)."""
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    if isinstance(outputs, dict):
        return [outputs["out"], *([outputs["aux"]] if "aux" in outputs else [])]
    if hasattr(outputs, "logits"):
        return [outputs.logits]
    return list(outputs)


class SegmentationTask(Task):
    """Semantic segmentation with a registry model, per-output losses with coefficients, and an mIoU metric.

    A model returns a list of logits: the main output first, then (in training) its auxiliary heads for deep
    supervision. Each output gets a loss — ``losses`` holds one shared loss or one per output — times its
    coefficient; the coefficients default to the model's ``loss_coefs`` (its PaddleSeg recipe).

    Args:
        model: a registry name (``seg/pp_liteseg_stdc1``) or a factory taking ``num_classes`` (a ``_partial_``
            ``oarkit.core.create_model`` node in configs).
        pretrained: for a name, load its registered weights (``True``) or a local file; heads are re-initialised
            when the number of classes differs.
        losses: one loss for every output or one per output (default: cross-entropy).
        loss_coefs: one coefficient per output (default: the model's ``loss_coefs``, else 1 then 0.4s).
        ignore_index: the label left out of losses and metrics (must match the data's).
        inference_mode: ``"whole"`` or ``"slide"`` for validation and prediction.
        crop_size: sliding-window size ``[height, width]`` (default: the training crop).
        stride: sliding-window step (default: two thirds of the window).
        scales: test-time scales whose probabilities are averaged.
        flip: test-time horizontal flip.
        channels_last: keep the model's weights in channels-last memory order (on these CPUs a PP-LiteSeg step is
            1.2x faster, 1.6x with bf16); checkpoints are saved contiguous either way.
    """

    task_id = "seg"

    def __init__(self, model: str | Callable[..., nn.Module] = "seg/pp_liteseg_stdc1", *,
                 pretrained: bool | str = False, losses: Sequence[nn.Module] | None = None,
                 loss_coefs: Sequence[float] | None = None, ignore_index: int = 255, inference_mode: str = "whole",
                 crop_size: Sequence[int] | None = None, stride: Sequence[int] | None = None,
                 scales: Sequence[float] = (1.0,), flip: bool = False, channels_last: bool = False) -> None:
        self.channels_last = bool(channels_last)
        self.model_factory = model_factory(model, pretrained=pretrained)
        self.losses = nn.ModuleList(losses) if losses else None
        self.loss_coefs = None if loss_coefs is None else [float(c) for c in loss_coefs]
        self.ignore_index = int(ignore_index)
        self.inference_settings = {"mode": inference_mode, "crop_size": None if crop_size is None else list(crop_size),
                                   "stride": None if stride is None else list(stride), "scales": list(scales),
                                   "flip": bool(flip)}
        # Fail on bad settings before any work (a sliding window without crop_size takes the data's crop later).
        InferenceConfig(**{**self.inference_settings, "crop_size": self.inference_settings["crop_size"] or [1, 1]})
        self.inference = InferenceConfig()
        #: when set, validation runs with this instead of ``inference`` (export verification at the export size)
        self.validation_inference: InferenceConfig | None = None
        self.labels: list[str] = []
        self.preprocessing: dict[str, Any] = {}

    @property
    def model_name(self) -> str | None:
        """The registry name behind the model factory, when there is one."""
        return factory_name(self.model_factory)

    # -- setup ----------------------------------------------------------------------------------------------
    def setup(self, data: SegmentationData) -> nn.Module:
        name = self.model_name
        if name is not None:
            card = model_info(name)
            data.configure(mean=card.mean, std=card.std)
        if getattr(data, "ignore_index", self.ignore_index) != self.ignore_index:
            raise ConfigError(f"task.ignore_index={self.ignore_index} differs from data.ignore_index="
                              f"{data.ignore_index}; set both to the same value")
        self.labels = list(data.classes)
        self.preprocessing = data.preprocess_spec()
        settings = dict(self.inference_settings)
        settings["crop_size"] = settings["crop_size"] or self.preprocessing["crop_size"]
        self.inference = InferenceConfig(**settings)
        model = self.model_factory(num_classes=len(self.labels))
        self.default_coefs = list(getattr(model, "loss_coefs", (1.0,)))
        if self.losses is None:
            self.losses = nn.ModuleList([CrossEntropyLoss(ignore_index=self.ignore_index)])
        if self.channels_last:
            model = model.to(memory_format=torch.channels_last)
        logger.info("model %s with %d classes (%.2fM parameters)", name or type(model).__name__, len(self.labels),
                    sum(p.numel() for p in model.parameters()) / 1e6)
        return model

    def restore(self, meta: dict[str, Any]) -> None:
        self.labels = list(meta.get("labels") or [])
        self.preprocessing = dict(meta.get("preprocessing") or {})
        if not self.preprocessing:
            raise ConfigError("meta.json has no preprocessing, so the segmenter cannot be rebuilt; retrain it with "
                              "tools/train.py, which records it")
        self.inference = InferenceConfig(**(meta.get("inference") or {}))

    def configure_data(self, data: SegmentationData) -> None:
        data.use_trained(preprocessing=self.preprocessing, labels=self.labels)

    def default_data(self, root: str) -> SegmentationData:
        return SegmentationData(root=root, num_classes=len(self.labels), ignore_index=self.ignore_index)

    # -- steps ----------------------------------------------------------------------------------------------
    def coefficients(self, num_outputs: int) -> list[float]:
        """The loss coefficient of each of ``num_outputs`` training outputs."""
        if self.loss_coefs is not None:
            if len(self.loss_coefs) != num_outputs:
                raise ConfigError(f"task.loss_coefs has {len(self.loss_coefs)} values but the model returns "
                                  f"{num_outputs} outputs in training; give one coefficient per output")
            return self.loss_coefs
        coefs = getattr(self, "default_coefs", [1.0])
        return coefs if len(coefs) == num_outputs else [1.0] + [0.4] * (num_outputs - 1)

    def distill_logits(self, outputs: Any) -> list[tuple[torch.Tensor, int]]:
        """The main per-pixel logits ``[B, C, H, W]`` (auxiliary heads are trained on labels only)."""
        return [(as_list(outputs)[0], 1)]

    def training_step(self, model: nn.Module, batch: Any) -> dict[str, torch.Tensor]:
        images, labels = batch
        outputs = as_list(model(images))
        coefs = self.coefficients(len(outputs))
        losses = self.losses
        if len(losses) not in (1, len(outputs)):
            raise ConfigError(f"task.losses has {len(losses)} losses for {len(outputs)} model outputs; give one loss "
                              "for all outputs or one per output")
        logs: dict[str, torch.Tensor] = {}
        total = None
        for i, (out, coef) in enumerate(zip(outputs, coefs)):
            loss_fn = losses[i if len(losses) > 1 else 0]
            value = loss_fn(main_logits(out, labels.shape[-2:]), labels)
            logs["loss_main" if i == 0 else f"loss_aux{i}"] = value.detach()
            total = coef * value if total is None else total + coef * value
        return {"loss": total, **logs}

    def validation_step(self, model: nn.Module, batch: Any) -> torch.Tensor:
        """Predicted labels (N, H, W) under the task's inference mode."""
        return infer(model, batch[0], self.validation_inference or self.inference).argmax(dim=1)

    def build_metric(self) -> SegmentationMetric:
        return SegmentationMetric(num_classes=max(1, len(self.labels)), ignore_index=self.ignore_index)

    def postprocess(self, outputs: Any) -> torch.Tensor:
        """Label maps (N, H, W) from raw outputs or logits."""
        return main_logits(outputs).argmax(dim=1)

    def collate(self, samples: list[Any]) -> Any:
        return pad_collate(samples, self.ignore_index)

    # -- export, metadata, prediction -------------------------------------------------------------------------
    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        h, w = self.preprocessing.get("crop_size", (512, 512))
        return (torch.randn(1, 3, h, w),)

    def deploy_spec(self, model: nn.Module) -> DeploySpec:
        """Logits at the input resolution, exported at the training crop with a dynamic batch.

        The inference mode travels in the post-processing: a deployed predictor slides the exported crop over
        larger images, or resizes each (scaled) image to it. The spatial size stays fixed because adaptive pooling
        and Paddle's "same" padding do not export with symbolic heights and widths.
        """
        inference = self.inference.to_dict()
        if inference["mode"] == "whole":
            inference["crop_size"] = self.preprocessing.get("crop_size")
        return DeploySpec(module=SegmentationExport(model).eval(), example_inputs=self.example_inputs(),
                          input_names=["images"], output_names=["logits"],
                          dynamic_axes={"images": {0: "batch"}},
                          preprocessing=self.preprocessing,
                          postprocessing={"activation": "argmax", "num_classes": len(self.labels),
                                          "ignore_index": self.ignore_index, "inference": inference},
                          labels=self.labels)

    def meta(self) -> dict[str, Any]:
        return {"labels": self.labels, "preprocessing": self.preprocessing, "inference": self.inference.to_dict(),
                "ignore_index": self.ignore_index, "palette": color_map(len(self.labels)).tolist()}

    def plot_metric(self, metric: SegmentationMetric, directory: str) -> list[str]:
        return [metric.plot_confusion(Path(directory) / "confusion_matrix.png", self.labels)]

    def predictor(self, model: nn.Module, **kwargs: Any) -> Any:
        from .predictor import Segmenter

        return Segmenter(model, labels=self.labels, preprocessing=self.preprocessing,
                         inference=self.inference.to_dict(), **kwargs)
