"""oarkit.nlp: text tasks (PaddleNLP on PyTorch): classification, token classification, QA, UIE, Taskflow.

The names below are also the kit protocol the command line uses: ``Predictor`` (built from a run directory, a
registry name or a module; it picks the predictor of the run's task), ``evaluate`` (a run on a dataset split) and
``export_source`` (what ``oarkit export`` exports) and ``DATASETS`` (preparers of the datasets that ship offline).
"""

from pathlib import Path
from typing import Any

from oarkit.nlp import models  # noqa: F401  (registers the nlp/ models)
from oarkit.nlp.data import (
    InformationExtractionData,
    QuestionAnsweringData,
    TextClassificationData,
    TokenClassificationData,
)
from oarkit.nlp.demo import prepare_intents
from oarkit.nlp.evaluate import evaluate
from oarkit.nlp.export import export_source
from oarkit.nlp.extraction import ExtractionResult, InformationExtractor
from oarkit.nlp.predictor import (
    AnswerResult,
    EntityResult,
    QuestionAnswerer,
    TextClassificationResult,
    TextClassifier,
    TokenClassifier,
)
from oarkit.nlp.taskflow import Taskflow
from oarkit.nlp.tasks import (
    InformationExtractionTask,
    QuestionAnsweringTask,
    TextClassificationTask,
    TokenClassificationTask,
)
from oarkit.nlp.tokenizer import train_wordpiece

DATASETS = {"intents": prepare_intents}
_PREDICTORS = {"text_classification": TextClassifier, "token_classification": TokenClassifier,
               "question_answering": QuestionAnswerer, "information_extraction": InformationExtractor}


def Predictor(source: Any, **kwargs: Any) -> Any:  # noqa: N802  (the kit protocol's name)
    """The predictor a run directory's task calls for (a registry name: by its card's task).

    Options a predictor does not take (``topk`` for extraction and QA) are dropped.
    """
    import json

    from oarkit.core.deploy import is_export_dir, read_manifest
    from oarkit.core.engine.checkpoint import find_model_dir
    from oarkit.core.registry import model_info

    if isinstance(source, (str, Path)) and is_export_dir(source):
        kind = read_manifest(source).preprocessing.get("task", "")
    elif isinstance(source, (str, Path)) and Path(source).exists():
        kind = json.loads((find_model_dir(Path(source)) / "meta.json").read_text()).get("nlp_task", "")
    else:
        kind = "information_extraction" if model_info(str(source)).task == "information_extraction" \
            else "text_classification"
    cls = _PREDICTORS.get(kind, TextClassifier)
    if cls in (InformationExtractor, QuestionAnswerer):
        kwargs.pop("topk", None)
    return cls(source, **kwargs)


__all__ = [
    "DATASETS", "AnswerResult", "EntityResult", "ExtractionResult", "InformationExtractionData",
    "InformationExtractionTask", "InformationExtractor", "Predictor", "QuestionAnswerer", "QuestionAnsweringData",
    "QuestionAnsweringTask", "Taskflow", "TextClassificationData", "TextClassificationResult", "TextClassificationTask",
    "TextClassifier", "TokenClassificationData", "TokenClassificationTask", "TokenClassifier", "evaluate",
    "export_source", "prepare_intents", "train_wordpiece",
]
