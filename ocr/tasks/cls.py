"""The text-line orientation task (``ocr/cls``): 0 or 180 degrees, cross-entropy, accuracy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.engine.deploy_spec import Dim, InputSpec
from oarkit.core.engine.task import DeploySpec, Task
from oarkit.core.errors import ConfigError
from oarkit.core.export.compare import Probabilities
from oarkit.core.registry import factory_name, model_factory, model_info

from ..data.module import OCRClsData
from ..int8 import ThresholdAgreement, int8_export_options
from ..metrics import ClsMetric

LABELS = ["0", "180"]
#: the pipeline turns a line when the classifier gives 180 degrees at least this probability (PaddleOCR's cls_thresh)
TURN_THRESHOLD = 0.9
#: the share of lines whose turn decision an int8 export may change
INT8_TURN_TOLERANCE = 0.05


class ClsExport(nn.Module):
    """Export wrapper: the eval-mode classifier returning ``[B, 2]`` probabilities."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(images)


class TextOrientationTask(Task):
    """Text-line orientation classification (PaddleOCR's ``ClsHead``: 0 / 180 degrees).

    Args:
        model: a registry name (``ocr/cls_mv3_mobile``) or a factory.
        pretrained: load the registered weights (``True``) or a local file.
    """

    task_id = "ocr/cls"

    def __init__(self, model: str | Callable[..., nn.Module] = "ocr/cls_mv3_mobile", *,
                 pretrained: bool | str = False) -> None:
        self.model_factory = model_factory(model, pretrained=pretrained)
        self.preprocessing: dict[str, Any] = {}

    def setup(self, data: OCRClsData) -> nn.Module:
        name = factory_name(self.model_factory)
        if name is not None:
            spec = model_info(name).input_spec
            size = getattr(spec, "size", None)
            data.configure(height=size[0] if size else None, width=size[1] if size else None,
                           mean=getattr(spec, "mean", None), std=getattr(spec, "std", None))
        self.preprocessing = {"height": data.height, "width": data.width, "mean": list(data.mean),
                              "std": list(data.std), "bgr": True}
        return self.model_factory()

    def restore(self, meta: dict[str, Any]) -> None:
        self.preprocessing = dict(meta.get("preprocessing") or {})
        if not self.preprocessing:
            raise ConfigError("meta.json has no preprocessing; retrain the classifier with tools/train.py")

    def configure_data(self, data: OCRClsData) -> None:
        p = self.preprocessing
        data.configure(height=p.get("height"), width=p.get("width"), mean=p.get("mean"), std=p.get("std"))

    def default_data(self, root: str) -> OCRClsData:
        return OCRClsData(root=root)

    def training_step(self, model: nn.Module, batch: Any) -> dict[str, torch.Tensor]:
        logits = model(batch["image"])
        return {"loss": F.cross_entropy(logits.float(), batch["labels"])}

    def validation_step(self, model: nn.Module, batch: Any) -> torch.Tensor:
        return model(batch["image"])

    def build_metric(self) -> ClsMetric:
        return ClsMetric()

    def collate(self, samples: list[dict[str, Any]]) -> dict[str, Any]:
        return {"image": torch.stack([s["image"] for s in samples]),
                "labels": torch.tensor([s["label"] for s in samples], dtype=torch.long)}

    def export_inputs(self, batch: Any) -> tuple[torch.Tensor, ...]:
        return (batch["image"],)

    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        p = self.preprocessing
        return (torch.randn(1, 3, int(p.get("height", 48)), int(p.get("width", 192))),)

    def deploy_spec(self, model: nn.Module) -> DeploySpec:
        """Probabilities with a dynamic batch at the classifier's fixed input size; an int8 artifact is held to
        the decision the pipeline takes from them (turn a line when its 180-degree probability reaches 0.9)."""
        return DeploySpec(module=ClsExport(model).eval(), example_inputs=self.example_inputs(),
                          input_names=["images"], output_names=["probabilities"],
                          inputs=[InputSpec("images", [Dim("batch", 1, 64), 3, None, None])],
                          compare=Probabilities(["probabilities"]),
                          quantized_compare=ThresholdAgreement(["probabilities"], threshold=TURN_THRESHOLD, column=1,
                                                               tolerance=INT8_TURN_TOLERANCE),
                          export_options=int8_export_options(["Conv"]),
                          preprocessing=self.preprocessing, postprocessing={"threshold": TURN_THRESHOLD},
                          labels=LABELS)

    def meta(self) -> dict[str, Any]:
        return {"preprocessing": self.preprocessing, "labels": LABELS}

    def predictor(self, model: nn.Module, **kwargs: Any) -> Any:
        from ..pipeline.ocr import OCR

        return OCR(cls=model, cls_preprocess=self.preprocessing, **kwargs)
