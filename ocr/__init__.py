"""oarkit.ocr: text detection, orientation and recognition (PaddleOCR on PyTorch).

Importing the kit registers its models (``ocr/...``), its task ids ``ocr/det``, ``ocr/rec`` and ``ocr/cls``
(:class:`oarkit.core.kits.TaskEntry`: tasks, the ``OCR`` predictor, ``export_source``, synthetic datasets), the
task id ``ocr`` of an exported det → (cls →) rec pipeline folder (what ``pipeline.yaml`` names; ``oarkit predict
FOLDER IMAGE`` runs it with ``OCR``), the ``oarkit ocr`` command, the deploy-pipeline glue ``ocr/det_rec`` /
``ocr/det_cls_rec``, and document parsing (:class:`DocParser`: the ``oarkit doc`` command and the task id
``ocr/doc``, whose pipeline name ``doc`` serves it: ``oarkit serve doc``).
"""

from functools import partial
from typing import Any

from oarkit.core.data.images import IMAGE_SUFFIXES
from oarkit.core.kits import TaskEntry, register_command, register_task
from oarkit.ocr import models  # noqa: F401  (registers the ocr/ models)
from oarkit.ocr.charset import CharDictionary
from oarkit.ocr.cli import OCR_COMMAND
from oarkit.ocr.data import OCRClsData, OCRDetData, OCRRecData
from oarkit.ocr.doc import DocParser, DocResult
from oarkit.ocr.doc.cli import DOC_COMMAND
from oarkit.ocr.export import PIPELINE_TASK_ID, export_pipeline, export_source
from oarkit.ocr.losses import CTCLoss, DBLoss
from oarkit.ocr.metrics import ClsMetric, DetMetric, RecMetric, character_error_rate, edit_distance
from oarkit.ocr.paddlex_route import PADDLEX_ROUTE
from oarkit.ocr.pipeline import OCR, OCRLine, OCRResult
from oarkit.ocr.postprocess import DBPostProcess, ctc_greedy_decode
from oarkit.ocr.render import render_line, render_page, write_det_set, write_rec_set
from oarkit.ocr.table import TableRecognizer, TableResult, teds  # registers ocr/slanet_plus, task ocr/table
from oarkit.ocr.tasks import TextDetectionTask, TextOrientationTask, TextRecognitionTask
from oarkit.ocr.web_export import web_export as _web_export  # the name stays the submodule

Predictor = OCR.from_source
DATASETS = {
    "ocr_det_synth": partial(write_det_set, train=200, val=20, size=(640, 640), language="mixed", lines=8),
    "ocr_rec_synth": partial(write_rec_set, train=2000, val=200, language="mixed"),
}


def _predictor(source: Any, **kwargs: Any) -> OCR:
    return OCR.from_source(source, **kwargs)


for _task_id, _task, _metric in (("ocr/det", TextDetectionTask, "*hmean*"), ("ocr/rec", TextRecognitionTask, "*acc*"),
                                 ("ocr/cls", TextOrientationTask, "top1")):
    register_task(TaskEntry(task_id=_task_id, task_class=_task, predictor=_predictor, export_source=export_source,
                            datasets=DATASETS if _task_id == "ocr/det" else {}, card_metric=_metric,
                            input_suffixes=IMAGE_SUFFIXES, paddlex=PADDLEX_ROUTE))
# the whole pipeline (export_pipeline's pipeline.yaml): predicted with, never trained nor exported again
# `oarkit predict ocr IMAGE` / `oarkit serve ocr`: the name stands for OCR()'s default pipeline
# `oarkit export ocr --format web` (or a pipeline folder): the pipeline in the browser (ocr/web/*.js)
register_task(TaskEntry(task_id=PIPELINE_TASK_ID, task_class=None, predictor=_predictor, input_suffixes=IMAGE_SUFFIXES,
                        pipeline_name=PIPELINE_TASK_ID, paddlex=PADDLEX_ROUTE, web_export=_web_export))
register_command(OCR_COMMAND)


def _doc_parser(source: Any, device: str = "cpu") -> DocParser:
    return DocParser(device=device)


# `oarkit predict doc PAGE` / `oarkit serve doc`: the default DocParser (a page in, its DocResult.to_dict() out)
register_task(TaskEntry(task_id="ocr/doc", task_class=None, predictor=_doc_parser, input_suffixes=IMAGE_SUFFIXES,
                        pipeline_name="doc"))
register_command(DOC_COMMAND)

__all__ = [
    "DATASETS", "OCR", "CTCLoss", "CharDictionary", "ClsMetric", "DBLoss", "DBPostProcess", "DetMetric", "DocParser",
    "DocResult", "OCRClsData",
    "OCRDetData", "OCRLine", "OCRRecData", "OCRResult", "Predictor", "RecMetric", "TableRecognizer", "TableResult",
    "TextDetectionTask",
    "TextOrientationTask", "TextRecognitionTask", "character_error_rate", "ctc_greedy_decode", "edit_distance",
    "export_pipeline", "export_source", "render_line", "render_page", "teds", "write_det_set", "write_rec_set",
]
