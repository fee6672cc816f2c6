"""``Taskflow``: PaddleNLP's one-line entry, ``Taskflow(task, model=...)(inputs) -> list of plain dicts``.

Tasks: ``text_classification``, ``ner`` (alias ``token_classification``), ``information_extraction`` (with a
``schema``) and ``question_answering``. ``model`` is a run directory trained with oarkit, a model directory, or a
registry name with loadable weights; PaddleNLP's hosted task models are not available offline, so there is no
silent default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oarkit.core.errors import ConfigError, UnknownNameError, did_you_mean
from oarkit.nlp.extraction import InformationExtractor, Schema
from oarkit.nlp.predictor import QuestionAnswerer, TextClassifier, TokenClassifier

#: Taskflow task -> (predictor class, the run's ``nlp_task`` it serves)
TASKFLOW_TASKS: dict[str, tuple[type, str]] = {
    "text_classification": (TextClassifier, "text_classification"),
    "ner": (TokenClassifier, "token_classification"),
    "token_classification": (TokenClassifier, "token_classification"),
    "information_extraction": (InformationExtractor, "information_extraction"),
    "question_answering": (QuestionAnswerer, "question_answering"),
}


class Taskflow:
    """Run a text task end to end on raw inputs.

    Example::

        Taskflow("text_classification", model="runs/minilm_l6_text_cls")(["wake me up at 7"])
        # [{"text": "wake me up at 7", "label": "set_alarm", "score": 0.98, "topk": [...]}]
        ie = Taskflow("information_extraction", model="runs/uie", schema=["时间", {"竞赛名称": ["主办方"]}])

    Args:
        task: one of :data:`TASKFLOW_TASKS`.
        model: a run or model directory, a registry name or a module (with ``tokenizer=``).
        schema: what ``information_extraction`` extracts (see :func:`~oarkit.nlp.extraction.parse_schema`).
        **kwargs: options of the task's predictor (``batch_size``, ``max_length``, ``device``, ``topk``, ...).
    """

    def __init__(self, task: str, model: str | Path | Any = None, *, schema: Schema | None = None,
                 **kwargs: Any) -> None:
        if task not in TASKFLOW_TASKS:
            raise UnknownNameError(f"unknown Taskflow task {task!r}.{did_you_mean(task, TASKFLOW_TASKS)} "
                                   f"Tasks: {', '.join(TASKFLOW_TASKS)}")
        if model is None:
            raise ConfigError(f"Taskflow({task!r}) needs model=: a run directory trained with oarkit (e.g. "
                              "runs/minilm_l6_text_cls), a model directory or a registry name with its weights")
        cls, served = TASKFLOW_TASKS[task]
        self.task = task
        if cls is InformationExtractor:
            self.predictor = InformationExtractor(model, schema=schema, **kwargs)
        elif schema is not None:
            raise ConfigError(f"schema= is for information_extraction, not {task!r}")
        else:
            self.predictor = cls(model, **kwargs)
        trained_for = self.predictor.meta.get("nlp_task")
        if trained_for and trained_for != served:
            raise ConfigError(f"{model} was trained for {trained_for!r}, which does not serve Taskflow({task!r}); "
                              f"use Taskflow({next(t for t, (_, s) in TASKFLOW_TASKS.items() if s == trained_for)!r})")

    def set_schema(self, schema: Schema) -> None:
        """Replace the extraction schema (``information_extraction`` only)."""
        if not isinstance(self.predictor, InformationExtractor):
            raise ConfigError(f"set_schema() is for information_extraction, not {self.task!r}")
        self.predictor.set_schema(schema)

    def __call__(self, inputs: Any) -> list[dict[str, Any]]:
        """The results of one input or a list of inputs, always as a list of plain dicts."""
        out = self.predictor(inputs)
        return [r.to_dict() for r in (out if isinstance(out, list) else [out])]
