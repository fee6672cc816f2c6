"""Evaluation of a trained classifier on a dataset split, with the same preprocessing it was trained with."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from oarkit.clas.data.datasets import ImageFolderDataset, ListFileDataset
from oarkit.clas.data.transforms import build_eval_transform
from oarkit.clas.metrics import ClassificationMetric
from oarkit.clas.predictor import Classifier
from oarkit.core.engine.checkpoint import find_model_dir
from oarkit.core.errors import ConfigError

logger = logging.getLogger(__name__)


def evaluate(source: str | Path, *, data_root: str | None = None, split: str = "val", batch_size: int = 64,
             output_dir: str | Path | None = None, device: str = "cpu") -> dict[str, Any]:
    """Top-1 / top-5 / per-class accuracy of a run on a split, and a confusion-matrix PNG.

    Args:
        source: a run directory (its ``best/`` is used) or a model directory.
        data_root: the dataset; defaults to the ``data.root`` the run was trained on.
        split: the image-folder split, or for list-file data the list file (``val`` means the run's val list).
        batch_size: images per forward pass.
        output_dir: where the confusion matrix goes; defaults to the model directory's parent run.
        device: ``cpu``, ``cuda``, ...

    Returns:
        The metrics plus ``confusion_matrix`` (the PNG path), ``model_dir`` and ``data_root``.
    """
    model_dir = find_model_dir(Path(source), exports=True)
    clf = Classifier(model_dir, device=device, batch_size=batch_size)
    config_file = model_dir / "config.yaml"
    data_cfg = OmegaConf.load(config_file).get("data", {}) if config_file.exists() else {}
    root = data_root or data_cfg.get("root")
    if not root:
        raise ConfigError(f"{model_dir} does not say which data it was trained on; pass --data ROOT")
    transform = build_eval_transform(clf.preprocessing)
    if data_cfg.get("format", "imagefolder") == "list":
        list_file = data_cfg.get("val_list", "val_list.txt") if split == "val" else split
        dataset = ListFileDataset(root, list_file, transform)
    else:
        dataset = ImageFolderDataset(root, split, transform, classes=clf.labels or None)
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=False)
    metric = ClassificationMetric(num_classes=max(len(clf.labels), dataset.num_classes
                                                  if hasattr(dataset, "num_classes") else len(dataset.classes)))
    with torch.no_grad():
        for images, labels in tqdm(loader, desc=f"eval {split}", leave=False):
            metric.update(clf.forward(images.to(clf.device)), (images, labels))
    results = metric.compute()
    out_dir = Path(output_dir) if output_dir else model_dir.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    results["confusion_matrix"] = str(metric.plot_confusion(out_dir / f"confusion_matrix_{split}.png",
                                                            clf.labels or dataset.classes))
    results.update(model_dir=str(model_dir), data_root=str(root), split=split)
    return results
