"""The task seam: what a kit supplies so that the kit-agnostic Trainer can train, evaluate and export it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset, default_collate

from oarkit.core.engine.metric import Metric


@dataclass
class DeploySpec:
    """How a trained model leaves PyTorch: the graph to export and what a deployed predictor needs.

    Attributes:
        module: the export wrapper (training-only branches off, outputs flattened to tensors).
        example_inputs: inputs that trace the wrapper.
        input_names, output_names: names of the graph's inputs and outputs.
        dynamic_axes: per input name, the axes that may vary (``{"images": {0: "batch"}}``).
        preprocessing: how raw inputs become ``example_inputs`` (resize, crop, mean, std, ...).
        postprocessing: parameters of the post-processing (top-k, thresholds, ...).
        labels: label names, index order.
    """

    module: nn.Module
    example_inputs: tuple[torch.Tensor, ...]
    input_names: list[str]
    output_names: list[str]
    dynamic_axes: dict[str, dict[int, str]] = field(default_factory=dict)
    preprocessing: dict[str, Any] = field(default_factory=dict)
    postprocessing: dict[str, Any] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)


class DataModule(ABC):
    """A kit's data: the datasets and loader settings; the Trainer builds loaders and samplers from it."""

    batch_size: int = 32
    num_workers: int = 0

    @abstractmethod
    def train_dataset(self) -> Dataset:
        """The training split."""

    def val_dataset(self) -> Dataset | None:
        """The validation split, or ``None`` when there is none."""
        return None


class Task(ABC):
    """Research code apart from engineering code: a kit's task owns the model, its losses and metric.

    The Trainer calls :meth:`setup` once, then :meth:`training_step` and :meth:`validation_step` per batch;
    it never looks inside the model, the losses or the metric.
    """

    #: the kit's short name, written into every run directory's meta.json
    kit: str = ""

    @abstractmethod
    def setup(self, data: DataModule) -> nn.Module:
        """Read what the model needs from the data (classes, label names) and build the model."""

    @abstractmethod
    def training_step(self, model: nn.Module, batch: Any) -> dict[str, torch.Tensor]:
        """Losses of one batch; ``"loss"`` is what is back-propagated, the rest is logged."""

    @abstractmethod
    def validation_step(self, model: nn.Module, batch: Any) -> Any:
        """Raw outputs of one validation batch, in the form :meth:`build_metric`'s metric takes."""

    @abstractmethod
    def build_metric(self) -> Metric:
        """A fresh metric; its ``main_indicator`` ranks checkpoints."""

    def parameter_groups(self, model: nn.Module, *, decay_norm_and_bias: bool = False) -> list[dict[str, Any]] | None:
        """Optimizer parameter groups of the task's own (e.g. layer-wise LR decay); ``None`` for the default.

        Groups may carry ``lr_scale``: the Trainer multiplies the optimizer's base LR by it.

        Args:
            model: the model being trained.
            decay_norm_and_bias: ``trainer.decay_norm_and_bias``: whether biases and normalisation weights get
                weight decay (the default groups give them none).
        """
        return None

    def postprocess(self, outputs: Any) -> Any:
        """Turn raw model outputs into results (top-k, boxes, masks, ...)."""
        return outputs

    def collate(self, samples: list[Any]) -> Any:
        """Stack dataset samples into a batch."""
        return default_collate(samples)

    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        """Inputs of the shape the model takes, for compile warm-up and export."""
        raise NotImplementedError(f"{type(self).__name__} does not define example_inputs()")

    def deploy_spec(self, model: nn.Module) -> DeploySpec:
        """What export needs; see :class:`DeploySpec`."""
        raise NotImplementedError(f"{type(self).__name__} does not define deploy_spec()")

    def meta(self) -> dict[str, Any]:
        """Task facts for meta.json (labels, preprocessing); must be JSON-serialisable."""
        return {}

    def predictor(self, model: nn.Module, **kwargs: Any) -> Any:
        """The kit's predictor around a live model (what ``Trainer.predict`` calls)."""
        raise NotImplementedError(f"{type(self).__name__} does not define predictor()")

    def plot_metric(self, metric: Metric, directory: str) -> list[str]:
        """Save pictures of a computed metric (confusion matrix, PR curves) into ``directory``; return paths."""
        return []
