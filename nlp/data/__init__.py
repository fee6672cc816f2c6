"""Text data: readers of the on-disk formats, featurisation, dynamic padding, length bucketing, DataModules."""

from oarkit.nlp.data.bucketing import LengthBucketedBatches
from oarkit.nlp.data.collate import PadCollator, WindowCollator, model_inputs
from oarkit.nlp.data.examples import AnnotatedText, PromptExample, QAExample, TaggedSentence, TextExample
from oarkit.nlp.data.module import (
    InformationExtractionData,
    QuestionAnsweringData,
    TextClassificationData,
    TextDataModule,
    TokenClassificationData,
)
from oarkit.nlp.data.readers import read_classification, read_conll, read_doccano, read_label_list, read_squad

__all__ = [
    "AnnotatedText", "InformationExtractionData", "LengthBucketedBatches", "PadCollator", "PromptExample",
    "QAExample", "QuestionAnsweringData", "TaggedSentence", "TextClassificationData", "TextDataModule",
    "TextExample", "TokenClassificationData", "WindowCollator", "model_inputs", "read_classification", "read_conll",
    "read_doccano", "read_label_list", "read_squad",
]
