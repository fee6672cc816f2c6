"""Evaluation of a trained text model on a dataset split, with the tokenizer and settings it was trained with."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf
from torch.utils.data import DataLoader

from oarkit.core.config import instantiate
from oarkit.core.engine.checkpoint import find_model_dir, load_model_dir
from oarkit.core.engine.trainer import move_to
from oarkit.core.errors import ConfigError
from oarkit.nlp.data import (
    InformationExtractionData,
    QuestionAnsweringData,
    TextClassificationData,
    TextDataModule,
    TokenClassificationData,
)
from oarkit.nlp.tasks import TASKS
from oarkit.nlp.tokenizer import tokenizer_from_spec

logger = logging.getLogger(__name__)

#: the data module of each task, for runs trained from Python without a data config
DATA_MODULES = {"text_classification": TextClassificationData, "token_classification": TokenClassificationData,
                "question_answering": QuestionAnsweringData, "information_extraction": InformationExtractionData}


def rebuild_data(meta: dict[str, Any], cfg: Any, data_root: str | None, *,
                 batch_size: int | None = None) -> TextDataModule | None:
    """The data module a run was trained with (on ``data_root`` when given), or ``None`` when unknown.

    A run from a config has a ``data`` section; a run from the Python API gets its task's data module with the
    settings meta.json recorded (max length, QA stride).
    """
    if "data" in cfg:
        data_cfg = cfg.data.copy()
        if data_root:
            data_cfg.root = str(data_root)
        if batch_size:
            data_cfg.batch_size = int(batch_size)
        return instantiate(data_cfg)
    if not data_root:
        return None
    settings = {k: v for k, v in (meta.get("preprocessing") or {}).items() if k in ("max_length", "doc_stride")}
    if batch_size:
        settings["batch_size"] = int(batch_size)
    return DATA_MODULES[meta["nlp_task"]](root=str(data_root), **settings)


def evaluate(source: str | Path, *, data_root: str | None = None, split: str = "val", batch_size: int = 64,
             device: str = "cpu") -> dict[str, Any]:
    """The task metric of a run on a split (``val``/``dev``, ``test`` or a file name inside the dataset folder).

    Args:
        source: a run directory (its ``best/`` is used) or a model directory.
        data_root: the dataset; defaults to the ``data.root`` the run was trained on.
        split: the split to evaluate.
        batch_size: examples per forward pass.
        device: ``cpu``, ``cuda``, ...

    Returns:
        The metric's results plus ``model_dir``, ``data_root`` and ``split``.
    """
    model_dir = find_model_dir(Path(source))
    model, meta = load_model_dir(model_dir)
    task_cls = TASKS.get(meta.get("nlp_task", ""))
    if task_cls is None:
        raise ConfigError(f"{model_dir}/meta.json names no known text task (nlp_task={meta.get('nlp_task')!r})")
    config_file = model_dir / "config.yaml"
    cfg = OmegaConf.load(config_file) if config_file.exists() else OmegaConf.create({})
    data = rebuild_data(meta, cfg, data_root, batch_size=batch_size)
    if data is None:
        raise ConfigError(f"{model_dir} does not say which data it was trained on; pass --data ROOT")
    task = instantiate(cfg.task) if "task" in cfg else task_cls()
    tokenizer = tokenizer_from_spec(meta["preprocessing"]["tokenizer"])
    data.configure(tokenizer=tokenizer)
    task.attach(tokenizer, labels=meta.get("labels", []), preprocessing=meta.get("preprocessing", {}),
                data_meta={k: meta[k] for k in ("pair", "prompt_lang", "schema") if k in meta})
    dataset = data.dataset(split, train=False)
    loader = DataLoader(dataset, batch_size=data.batch_size, shuffle=False, collate_fn=task.collate)
    dev = torch.device(device)
    model.to(dev)
    metric = task.build_metric()
    with torch.no_grad():
        for batch in loader:
            batch = move_to(batch, dev)
            metric.update(task.validation_step(model, batch), batch)
    results = metric.compute()
    results.update(model_dir=str(model_dir), data_root=str(data.root), split=split)
    return results
