"""The image-classification task: what the kit-agnostic Trainer needs to train and export a classifier."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oarkit.clas.data.mixup import MixupCutmix
from oarkit.clas.data.module import ClassificationData
from oarkit.clas.losses import CrossEntropyLoss, SoftTargetCrossEntropy
from oarkit.clas.metrics import ClassificationMetric
from oarkit.core.engine.task import DeploySpec, Task
from oarkit.core.errors import ConfigError, OarkitError
from oarkit.core.registry import factory_name, model_factory, model_info

logger = logging.getLogger(__name__)


class LogitsOnly(nn.Module):
    """Export wrapper: eval-mode forward that returns one logits tensor (tuples and named outputs flattened)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        out = self.model(images)
        if isinstance(out, (tuple, list)):
            out = out[0]
        return getattr(out, "logits", out)


class ClassificationTask(Task):
    """Image classification with a registry model, cross-entropy, optional mixup / cutmix, top-k accuracy.

    Args:
        model: a registry name (``clas/pp_lcnet_x0_5``) or a factory taking ``num_classes`` (a ``_partial_``
            ``oarkit.core.create_model`` node in configs).
        pretrained: load the registered weights (``True``) or a local file; the head is re-initialised when
            the number of classes differs. Only used when ``model`` is a name.
        label_smoothing: label smoothing of the cross-entropy.
        mixup_alpha, cutmix_alpha: Beta parameters of mixup and cutmix (0 disables each).
        mix_prob: probability that a batch is mixed.
        topk: the k of the reported top-k accuracies.
    """

    task_id = "clas"

    def __init__(self, model: str | Callable[..., nn.Module] = "clas/pp_lcnet_x1_0", *,
                 pretrained: bool | str = False, label_smoothing: float = 0.0, mixup_alpha: float = 0.0,
                 cutmix_alpha: float = 0.0, mix_prob: float = 1.0, topk: Sequence[int] = (1, 5)) -> None:
        if not 0.0 <= label_smoothing < 1.0:
            raise ConfigError(f"task.label_smoothing must lie in [0, 1), got {label_smoothing}")
        self.model_factory = model_factory(model, pretrained=pretrained)
        self.label_smoothing = label_smoothing
        self.mix_settings = {"mixup_alpha": mixup_alpha, "cutmix_alpha": cutmix_alpha, "prob": mix_prob}
        self.topk = tuple(int(k) for k in topk)
        self.labels: list[str] = []
        self.preprocessing: dict[str, Any] = {}
        self.mixup: MixupCutmix | None = None

    @property
    def model_name(self) -> str | None:
        """The registry name behind the model factory, when there is one."""
        return factory_name(self.model_factory)

    def setup(self, data: ClassificationData) -> nn.Module:
        name = self.model_name
        if name is not None:
            card = model_info(name)
            data.configure(input_size=card.input_size, mean=card.mean, std=card.std, crop_pct=card.crop_pct,
                           interpolation=card.interpolation)
        self.labels = list(data.classes)
        self.preprocessing = data.preprocess_spec()
        num_classes = len(self.labels)
        self.loss = CrossEntropyLoss(label_smoothing=self.label_smoothing)
        self.soft_loss = SoftTargetCrossEntropy()
        mixer = MixupCutmix(num_classes=num_classes, label_smoothing=self.label_smoothing, **self.mix_settings)
        self.mixup = mixer if mixer.enabled else None
        model = self.model_factory(num_classes=num_classes)
        logger.info("model %s with %d classes (%.2fM parameters)", name or type(model).__name__, num_classes,
                    sum(p.numel() for p in model.parameters()) / 1e6)
        return model

    def restore(self, meta: dict[str, Any]) -> None:
        self.labels = list(meta.get("labels") or [])
        self.preprocessing = dict(meta.get("preprocessing") or {})
        if not self.preprocessing:
            raise OarkitError("meta.json has no preprocessing, so the classifier cannot be rebuilt; retrain it with "
                              "tools/train.py, which records it")

    def configure_data(self, data: ClassificationData) -> None:
        data.use_trained(preprocessing=self.preprocessing, labels=self.labels)

    def default_data(self, root: str) -> ClassificationData:
        return ClassificationData(root=root)

    def training_step(self, model: nn.Module, batch: Any) -> dict[str, torch.Tensor]:
        images, labels = batch
        if self.mixup is not None:
            images, targets = self.mixup(images, labels)
            return {"loss": self.soft_loss(LogitsOnly(model)(images), targets)}
        return {"loss": self.loss(LogitsOnly(model)(images), labels)}

    def validation_step(self, model: nn.Module, batch: Any) -> torch.Tensor:
        return LogitsOnly(model)(batch[0]).float()

    def unlabeled_dataset(self, data: ClassificationData, root: str) -> Any:
        return data.unlabeled_dataset(root)

    def distill_logits(self, outputs: Any) -> list[tuple[torch.Tensor, int]]:
        if isinstance(outputs, (tuple, list)):
            outputs = outputs[0]
        return [(getattr(outputs, "logits", outputs), 1)]

    def build_metric(self) -> ClassificationMetric:
        return ClassificationMetric(num_classes=max(1, len(self.labels)), topk=self.topk)

    def postprocess(self, outputs: torch.Tensor, topk: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-k ``(scores, class_ids)`` from logits; scores are softmax probabilities."""
        probs = outputs.float().softmax(dim=-1)
        return probs.topk(min(topk, probs.shape[-1]), dim=-1)

    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        h, w = self.preprocessing.get("crop", (224, 224))
        return (torch.randn(1, 3, h, w),)

    def deploy_spec(self, model: nn.Module) -> DeploySpec:
        return DeploySpec(module=LogitsOnly(model).eval(), example_inputs=self.example_inputs(),
                          input_names=["images"], output_names=["logits"],
                          dynamic_axes={"images": {0: "batch"}}, preprocessing=self.preprocessing,
                          postprocessing={"topk": min(5, len(self.labels)), "activation": "softmax"},
                          labels=self.labels)

    def meta(self) -> dict[str, Any]:
        return {"labels": self.labels, "preprocessing": self.preprocessing}

    def plot_metric(self, metric: ClassificationMetric, directory: str) -> list[str]:
        return [str(metric.plot_confusion(Path(directory) / "confusion_matrix.png", self.labels))]

    def predictor(self, model: nn.Module, **kwargs: Any) -> Any:
        from oarkit.clas.predictor import Classifier

        return Classifier(model, labels=self.labels, preprocessing=self.preprocessing, **kwargs)
