"""The text tasks: what the kit-agnostic Trainer needs to train, evaluate and export each kind of text model."""

from oarkit.nlp.tasks.base import TransformerTask
from oarkit.nlp.tasks.classification import TextClassificationTask
from oarkit.nlp.tasks.extraction import InformationExtractionTask
from oarkit.nlp.tasks.qa import QuestionAnsweringTask
from oarkit.nlp.tasks.tagging import TokenClassificationTask

#: meta.json's ``nlp_task`` -> task class
TASKS = {cls.name: cls for cls in (TextClassificationTask, TokenClassificationTask, QuestionAnsweringTask,
                                   InformationExtractionTask)}

__all__ = ["TASKS", "InformationExtractionTask", "QuestionAnsweringTask", "TextClassificationTask",
           "TokenClassificationTask", "TransformerTask"]
