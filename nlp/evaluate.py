"""The data module a text run was trained with (export reads its splits); evaluation is core's ``evaluate_run``."""

from __future__ import annotations

import logging
from typing import Any

from oarkit.core.config import instantiate
from oarkit.nlp.data import (
    InformationExtractionData,
    QuestionAnsweringData,
    TextClassificationData,
    TextDataModule,
    TokenClassificationData,
)

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
