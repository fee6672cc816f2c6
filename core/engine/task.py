"""The task seam: what a kit supplies so that the kit-agnostic Trainer can train, evaluate and export it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset, Sampler, default_collate

from oarkit.core.engine.deploy_spec import DeploySpec  # noqa: F401  (re-exported: its old home)
from oarkit.core.engine.metric import Metric
from oarkit.core.errors import ConfigError, did_you_mean


class DataModule(ABC):
    """A kit's data: its splits and loader settings; the Trainer builds loaders and samplers from it.

    Attributes:
        batch_size: training samples per process and step.
        eval_batch_size: samples per evaluation batch; ``None``: ``batch_size``. A prediction must not depend
            on it (the kit pads with a mask, groups by size in :meth:`batch_sampler`, or evaluates one at a time).
        num_workers: loader worker processes.
    """

    batch_size: int = 32
    eval_batch_size: int | None = None
    num_workers: int = 0

    @abstractmethod
    def train_dataset(self) -> Dataset:
        """The training split."""

    def val_dataset(self) -> Dataset | None:
        """The validation split, or ``None`` when there is none."""
        return None

    def splits(self) -> tuple[str, ...]:
        """The names :meth:`dataset` accepts (``train``, ``val``, and whatever else the kit reads: ``test``)."""
        return ("train", "val")

    def dataset(self, split: str) -> Dataset:
        """Any split with the *evaluation* preprocessing unless it is ``train`` (what ``oarkit eval`` reads).

        Kits whose data has more splits (a ``test`` list, another list file) override this.

        Raises:
            ConfigError: the split is unknown or absent.
        """
        if split == "train":
            return self.train_dataset()
        if split == "val":
            val = self.val_dataset()
            if val is not None:
                return val
        choices = self.splits()
        raise ConfigError(f"{type(self).__name__} has no split {split!r}.{did_you_mean(split, choices)} "
                          f"Splits: {', '.join(choices)}")

    def batch_sampler(self, sampler: Sampler[int], dataset: Dataset, *, batch_size: int, train: bool,
                      drop_last: bool) -> Sampler[list[int]] | None:
        """A batch sampler over ``sampler``'s indices (aspect-ratio groups, multi-scale batches); ``None``: plain
        batches of ``batch_size``.

        ``sampler`` is the Trainer's (shuffled and sharded per rank in training, sharded in evaluation); a batch
        sampler with a ``set_epoch(epoch)`` method is told each epoch.
        """
        return None


class Task(ABC):
    """Research code apart from engineering code: a kit's task owns the model, its losses and metric.

    The Trainer calls :meth:`setup` once, then :meth:`training_step` and :meth:`validation_step` per batch;
    it never looks inside the model, the losses or the metric.
    """

    #: what the task does (``clas``, ``seg``, ``det``, ``ocr/rec``, ``nlp/text_classification``, ...): the id its
    #: models' cards, its run's meta.json and its deploy manifests carry (see :mod:`oarkit.core.kits`)
    task_id: str = ""

    @property
    def kit(self) -> str:
        """The kit that owns the task: the first component of :attr:`task_id`."""
        return self.task_id.split("/", 1)[0]

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

    def restore(self, meta: dict[str, Any]) -> None:
        """Take back what :meth:`setup` learned from the data (labels, preprocessing) from a run's meta.json.

        The inverse of :meth:`meta`: a task instantiated from a run's config, then restored, validates,
        predicts and exports exactly as it did in training, without the training data.
        """
        return None

    def configure_data(self, data: DataModule) -> None:
        """Give a data module what a restored task knows (preprocessing, class names), so that its splits are
        read as in training (evaluation of a run on another dataset root goes through here)."""
        return None

    def default_data(self, root: str) -> DataModule | None:
        """The data module of a run trained from Python without a data config, at ``root``; ``None``: unknown."""
        return None

    def callbacks(self) -> list[Any]:
        """Callbacks of the task's own (an assigner switched at an epoch), added to the Trainer's."""
        return []

    def parameter_groups(self, model: nn.Module, *, decay_norm_and_bias: bool = False) -> list[dict[str, Any]] | None:
        """Optimizer parameter groups of the task's own (e.g. layer-wise LR decay); ``None`` for the default.

        Groups may carry ``lr_scale``: the Trainer multiplies the optimizer's base LR by it.

        Args:
            model: the model being trained.
            decay_norm_and_bias: ``trainer.decay_norm_and_bias``: whether biases and normalisation weights get
                weight decay (the default groups give them none).
        """
        return None

    def distill_layers(self, model: nn.Module) -> list[str]:
        """Names of the submodules whose outputs carry the logits to distill, where the model's own training
        output does not (a detector returns its losses); ``[]`` (the default) distills the model's output."""
        return []

    def distill_logits(self, outputs: Any) -> list[tuple[torch.Tensor, int]]:
        """The logits that knowledge distillation matches, each with its class dimension (``[(logits, 1)]`` for
        ``[B, C]`` or ``[B, C, H, W]``). ``outputs`` is the model's output, or, where :meth:`distill_layers` names
        layers, a dict of each layer's output. The teacher's outputs (from its eval-mode forward on the same
        inputs) go through the same method, so a kit whose eval outputs differ from its training outputs
        (probabilities instead of logits) returns comparable logits for both. Tasks that can be distilled
        override it."""
        raise ConfigError(f"{type(self).__name__} declares no logits to distill (Task.distill_logits); distill= "
                          "works on the tasks that do (clas, seg, det, ocr rec and det, nlp text classification)")

    def prepare_distill_teacher(self, teacher: nn.Module, meta: dict[str, Any]) -> None:
        """Called once with the loaded teacher and its meta.json (``{}`` for a registry name) before distillation
        starts, so that a kit can make the teacher's logits comparable with its own (a recognizer whose teacher
        reads another dictionary maps the teacher's columns to its characters); nothing by default."""
        return None

    def align_distill_logits(self, student: torch.Tensor, teacher: torch.Tensor,
                             dim: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A student's and a teacher's logits made comparable where the kit knows how (a recognizer whose
        training forward pools to another sequence length than its eval forward); unchanged by default."""
        return student, teacher

    def unlabeled_dataset(self, data: DataModule, root: str) -> Any:
        """A dataset of the images under ``root`` (no labels), each sample the model's input as ``data``'s training
        transform makes it, for ``distill=ssld distill.unlabeled_root=DIR``; tasks that take unlabeled data
        override it."""
        raise ConfigError(f"{type(self).__name__} takes no unlabeled data (Task.unlabeled_dataset): "
                          "distill.unlabeled_root works for image classification; leave it unset")

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

    def export_inputs(self, batch: Any) -> tuple[torch.Tensor, ...]:
        """The export graph's inputs in a collated batch, in the order of the deploy spec's ``input_names``.

        Export feeds these to the eager wrapper and the artifact (verification) and to int8 calibration. The
        default reads an ``(inputs..., targets)`` tuple: every item but the last (a bare tensor is the input).
        """
        if isinstance(batch, torch.Tensor):
            return (batch,)
        if isinstance(batch, (tuple, list)) and len(batch) > 1:
            return tuple(batch[:-1])
        raise NotImplementedError(f"{type(self).__name__} batches are {type(batch).__name__}s, not (inputs..., "
                                  "targets) tuples: define export_inputs(batch) to pick the graph's inputs")

    def meta(self) -> dict[str, Any]:
        """Task facts for meta.json (labels, preprocessing); must be JSON-serialisable."""
        return {}

    def predictor(self, model: nn.Module, **kwargs: Any) -> Any:
        """The kit's predictor around a live model (what ``Trainer.predict`` calls)."""
        raise NotImplementedError(f"{type(self).__name__} does not define predictor()")

    def plot_metric(self, metric: Metric, directory: str) -> list[str]:
        """Save pictures of a computed metric (confusion matrix, PR curves) into ``directory``; return paths."""
        return []


class TaskWrapper(Task):
    """A task around another (quantization-aware training, say) that changes a few methods and forwards every
    other attribute to ``inner`` — including methods :class:`Task` grows later, which no hand-written forwarding
    would keep.

    A subclass defines what it changes; whatever it (or its instance) does not define comes from ``inner``.
    """

    def __init__(self, inner: Task) -> None:
        self.inner = inner

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("__") or name == "inner" or name in object.__getattribute__(self, "__dict__"):
            return object.__getattribute__(self, name)
        for cls in type(self).__mro__:
            if cls is TaskWrapper:
                break
            if name in vars(cls):  # the wrapper's own override
                return object.__getattribute__(self, name)
        inner = object.__getattribute__(self, "__dict__").get("inner")
        if inner is not None and hasattr(inner, name):
            return getattr(inner, name)
        return object.__getattribute__(self, name)

    def setup(self, data: DataModule) -> nn.Module:
        return self.inner.setup(data)

    def training_step(self, model: nn.Module, batch: Any) -> dict[str, torch.Tensor]:
        return self.inner.training_step(model, batch)

    def validation_step(self, model: nn.Module, batch: Any) -> Any:
        return self.inner.validation_step(model, batch)

    def build_metric(self) -> Metric:
        return self.inner.build_metric()
