"""``Classifier``: top-k predictions from a run directory, a registry name or a live module."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from oarkit.clas.data.transforms import build_eval_transform, preprocess_spec
from oarkit.core.data import ImageInput, load_image_input
from oarkit.core.deploy import DeployedModel, is_export_dir
from oarkit.core.engine.checkpoint import find_model_dir, load_model_dir
from oarkit.core.errors import OarkitError
from oarkit.core.registry import create_model, model_info

logger = logging.getLogger(__name__)



def imagenet_labels() -> list[str]:
    """The 1000 ImageNet-1k class descriptions that ship inside timm."""
    from timm.data import ImageNetInfo

    info = ImageNetInfo()
    return [info.index_to_description(i) for i in range(1000)]


@dataclass
class ClassificationResult:
    """The top-k classes of one image."""

    class_ids: list[int]
    scores: list[float]
    labels: list[str]
    source: str | None = None
    image: np.ndarray | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        return self.labels[0]

    @property
    def score(self) -> float:
        return self.scores[0]

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "label": self.label, "score": self.score,
                "topk": [{"class_id": c, "label": n, "score": s}
                         for c, n, s in zip(self.class_ids, self.labels, self.scores)]}

    def plot(self, ax: Any = None) -> Any:
        """Draw the image beside a bar chart of its top-k scores; returns the matplotlib figure."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        if ax is None:
            fig, (ax_img, ax) = plt.subplots(1, 2, figsize=(8, 3.2), gridspec_kw={"width_ratios": [1, 1.4]})
        else:
            fig, ax_img = ax.figure, None
        if ax_img is not None:
            if self.image is not None:
                ax_img.imshow(self.image)
            ax_img.set_title(Path(self.source).name if self.source else "input", fontsize=9)
            ax_img.axis("off")
        y = np.arange(len(self.scores))[::-1]
        ax.barh(y, self.scores, color=["tab:green"] + ["tab:gray"] * (len(self.scores) - 1))
        ax.set_yticks(y, [f"{n} ({c})" for n, c in zip(self.labels, self.class_ids)], fontsize=8)
        ax.set_xlim(0, 1)
        ax.set_xlabel("probability")
        ax.set_title(f"{self.label}: {self.score:.1%}", fontsize=10)
        fig.tight_layout()
        return fig

    def save(self, path: str | Path) -> Path:
        """Save :meth:`plot` as an image file."""
        import matplotlib.pyplot as plt

        fig = self.plot()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path


class Classifier:
    """Image classifier built from a run directory, a registry name or a module.

    Example::

        clf = Classifier("runs/digits")           # best/ of a run, or a model directory
        clf("digit.png").label                     # one input -> one result
        [r.to_dict() for r in clf(["a.png", array, pil_image])]

    Args:
        source: a run or model directory, an export directory (``runs/x/export/onnx``: the artifact runs on its
            runtime, with the preprocessing and labels of its deploy.yaml), a registry name
            (``clas/pp_lcnet_x1_0``) or an ``nn.Module``.
        labels: label names (read from the run directory or the model card when omitted).
        preprocessing: the eval preprocessing spec (likewise read when omitted).
        pretrained: for a registry name, load its registered weights (or a local file path).
        topk: classes returned per image.
        batch_size: images per forward pass.
        device: ``cpu``, ``cuda``, ...
    """

    def __init__(self, source: str | Path | nn.Module, *, labels: Sequence[str] | None = None,
                 preprocessing: dict[str, Any] | None = None, pretrained: bool | str = True, topk: int = 5,
                 batch_size: int = 32, device: str = "cpu") -> None:
        self.device = torch.device(device)
        meta: dict[str, Any] = {}
        if isinstance(source, nn.Module):
            model = source
        elif is_export_dir(source):
            model = DeployedModel(source)
            meta = model.manifest.meta()
        elif Path(source).exists():
            model, meta = load_model_dir(find_model_dir(Path(source)))
        else:
            card = model_info(str(source))
            model = create_model(str(source), pretrained=pretrained)
            meta = {"labels": imagenet_labels() if card.label_names == "imagenet-1k" else [],
                    "preprocessing": preprocess_spec(card.input_size, card.mean, card.std, card.crop_pct,
                                                     card.interpolation)}
        self.model = model.to(self.device).eval()
        self.preprocessing = dict(preprocessing or meta.get("preprocessing") or {})
        if not self.preprocessing:
            raise OarkitError("Classifier needs the eval preprocessing: pass preprocessing=... for a bare module")
        self.labels = list(labels or meta.get("labels") or [])
        self.transform = build_eval_transform(self.preprocessing)
        self.topk, self.batch_size = int(topk), int(batch_size)

    # preprocess / forward / postprocess, as in a transformers pipeline
    def load(self, item: ImageInput) -> tuple[np.ndarray, str | None]:
        """An RGB uint8 array from a path, an array (HW, HWC; RGB) or a PIL image, with its source path."""
        return load_image_input(item, taker="Classifier")

    def preprocess(self, images: Sequence[np.ndarray]) -> torch.Tensor:
        return torch.stack([self.transform(image=im)["image"] for im in images]).to(self.device)

    @torch.no_grad()
    def forward(self, batch: torch.Tensor) -> torch.Tensor:
        out = self.model(batch)
        if isinstance(out, (tuple, list)):
            out = out[0]
        return out.float()

    def postprocess(self, logits: torch.Tensor, sources: Sequence[str | None],
                    images: Sequence[np.ndarray]) -> list[ClassificationResult]:
        scores, ids = logits.softmax(-1).topk(min(self.topk, logits.shape[-1]), dim=-1)
        names = lambda i: self.labels[i] if i < len(self.labels) else str(i)  # noqa: E731
        return [ClassificationResult(class_ids=c.tolist(), scores=s.tolist(), labels=[names(i) for i in c.tolist()],
                                     source=src, image=im) for s, c, src, im in zip(scores, ids, sources, images)]

    def __call__(self, inputs: ImageInput | Sequence[ImageInput]) -> ClassificationResult | list[ClassificationResult]:
        """Classify one input (returns one result) or a list of inputs (returns a list)."""
        single = not isinstance(inputs, (list, tuple))
        items = [inputs] if single else list(inputs)
        results: list[ClassificationResult] = []
        for start in range(0, len(items), self.batch_size):
            loaded = [self.load(item) for item in items[start:start + self.batch_size]]
            images = [im for im, _ in loaded]
            logits = self.forward(self.preprocess(images))
            results += self.postprocess(logits, [src for _, src in loaded], images)
        return results[0] if single else results

    predict = __call__
