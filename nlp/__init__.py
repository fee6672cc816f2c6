"""oarkit.nlp: text tasks (PaddleNLP on PyTorch): classification, token classification, QA, UIE, Taskflow.

Importing the kit registers its models, one task id per text task (``nlp/text_classification``,
``nlp/token_classification``, ``nlp/question_answering``, ``nlp/information_extraction``; see
:class:`oarkit.core.kits.TaskEntry`) and the ``oarkit train-tokenizer`` verb, which is all the command line knows
of it. ``Predictor`` picks the predictor of a run's task id.
"""

from pathlib import Path
from typing import Any

from oarkit.core.engine.evaluation import evaluate_run as evaluate
from oarkit.core.errors import ConfigError
from oarkit.core.kits import TaskEntry, register_command, register_task, source_entry
from oarkit.nlp import models  # noqa: F401  (registers the nlp/ models)
from oarkit.nlp.cli import TRAIN_TOKENIZER
from oarkit.nlp.data import (
    InformationExtractionData,
    QuestionAnsweringData,
    TextClassificationData,
    TokenClassificationData,
)
from oarkit.nlp.demo import prepare_intents
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
#: task id -> (task, predictor, command-line predict options it takes)
_TASKS: dict[str, tuple[type, type, tuple[str, ...]]] = {
    "nlp/text_classification": (TextClassificationTask, TextClassifier, ("topk",)),
    "nlp/token_classification": (TokenClassificationTask, TokenClassifier, ()),
    "nlp/question_answering": (QuestionAnsweringTask, QuestionAnswerer, ()),
    "nlp/information_extraction": (InformationExtractionTask, InformationExtractor, ()),
}


def _summary(meta: dict[str, Any]) -> dict[str, Any]:
    preprocessing = meta.get("preprocessing") or {}
    tokenizer = preprocessing.get("tokenizer") or {}
    out: dict[str, Any] = {}
    if tokenizer:
        name = tokenizer.get("name_or_path") or "trained for the run"
        out["tokenizer"] = f"{name} ({tokenizer.get('vocab_size')} tokens)"
    if preprocessing.get("max_length"):
        out["max length"] = preprocessing["max_length"]
    return out


for _task_id, (_task, _predictor, _options) in _TASKS.items():
    register_task(TaskEntry(task_id=_task_id, task_class=_task, predictor=_predictor, predict_options=_options,
                            export_source=export_source, datasets=DATASETS, summary=_summary,
                            card_metric="*"))  # encoders publish benchmark averages of several names
register_command(TRAIN_TOKENIZER)


def Predictor(source: Any, **kwargs: Any) -> Any:  # noqa: N802  (named like the other kits' predictors)
    """The predictor of a run directory's, export folder's or registry model's task id (a module: a text
    classifier). Options that predictor does not take (``topk`` for extraction and QA) are dropped."""
    if not isinstance(source, (str, Path)):
        return TextClassifier(source, **kwargs)
    entry = source_entry(source)
    if entry.kit != "nlp":
        raise ConfigError(f"{source} is a {entry.task_id!r} model, not a text model")
    for option in {"topk"} - set(entry.predict_options):
        kwargs.pop(option, None)
    return entry.predictor(source, **kwargs)


__all__ = [
    "DATASETS", "AnswerResult", "EntityResult", "ExtractionResult", "InformationExtractionData",
    "InformationExtractionTask", "InformationExtractor", "Predictor", "QuestionAnswerer", "QuestionAnsweringData",
    "QuestionAnsweringTask", "Taskflow", "TextClassificationData", "TextClassificationResult", "TextClassificationTask",
    "TextClassifier", "TokenClassificationData", "TokenClassificationTask", "TokenClassifier", "evaluate",
    "export_source", "prepare_intents", "train_wordpiece",
]
