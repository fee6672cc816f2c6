"""Evaluation of a trained segmenter on a dataset split, with the preprocessing and inference mode of its training."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from oarkit.core.engine.checkpoint import find_model_dir
from oarkit.core.errors import ConfigError

from .data.datasets import pad_collate
from .data.module import SegmentationData
from .data.transforms import build_eval_transform
from .metrics import SegmentationMetric
from .predictor import Segmenter

logger = logging.getLogger(__name__)

_DATA_KEYS = ("format", "train_list", "val_list", "train_split", "val_split", "num_classes", "label_file",
              "ignore_index")


def evaluate(source: str | Path, *, data_root: str | None = None, split: str = "val", batch_size: int = 8,
             output_dir: str | Path | None = None, device: str = "cpu") -> dict[str, Any]:
    """mIoU, per-class IoU, pixel accuracy, kappa and Dice of a run on a split, and a confusion-matrix PNG.

    Args:
        source: a run directory (its ``best/`` is used) or a model directory.
        data_root: the dataset; defaults to the ``data.root`` the run was trained on (same format and lists).
        split: ``"val"``/``"train"``, or for list-format data a list file.
        batch_size: images per forward pass (images of different sizes are padded with the ignore label).
        output_dir: where the confusion matrix goes; defaults to the run directory.
        device: ``cpu``, ``cuda``, ...

    Returns:
        The metrics plus ``class_iou_named``, ``confusion_matrix`` (the PNG), ``model_dir``, ``data_root``, ``split``.
    """
    model_dir = find_model_dir(Path(source))
    seg = Segmenter(model_dir, device=device)
    config_file = model_dir / "config.yaml"
    data_cfg = OmegaConf.to_container(OmegaConf.load(config_file).get("data", {}), resolve=False) \
        if config_file.exists() else {}
    root = data_root or data_cfg.get("root")
    if not root:
        raise ConfigError(f"{model_dir} does not say which data it was trained on; pass --data ROOT")
    kwargs = {k: data_cfg[k] for k in _DATA_KEYS if k in data_cfg and not str(data_cfg[k]).startswith("${")}
    data = SegmentationData(root=str(root), **kwargs)
    if seg.labels and len(seg.labels) != data.num_classes:
        data = SegmentationData(root=str(root), **{**kwargs, "num_classes": len(seg.labels)})
    dataset = data.dataset(split, build_eval_transform(seg.preprocessing))
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, collate_fn=lambda s: pad_collate(
        s, data.ignore_index))
    metric = SegmentationMetric(num_classes=len(seg.labels) or data.num_classes, ignore_index=data.ignore_index)
    with torch.no_grad():
        for images, labels in tqdm(loader, desc=f"eval {split}", leave=False):
            metric.update(seg.predict_logits(images.to(seg.device)).argmax(dim=1), (images, labels))
    results = metric.compute()
    names = seg.labels or data.classes
    results["class_iou_named"] = {n: v for n, v in zip(names, results["class_iou"])}
    out_dir = Path(output_dir) if output_dir else model_dir.parent
    results["confusion_matrix"] = metric.plot_confusion(out_dir / f"confusion_matrix_{Path(split).stem}.png", names)
    results.update(model_dir=str(model_dir), data_root=str(root), split=split)
    return results
