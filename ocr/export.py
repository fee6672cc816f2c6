"""What export needs from the OCR kit: each model with its set-up task (det, rec, cls), and the pipeline folder
(``pipeline.yaml`` naming the exported stages and the det → cls → rec glue) that ``OCR(folder)`` runs."""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Dataset

from oarkit.core.deploy.pipeline import StageSpec, write_pipeline
from oarkit.core.errors import OarkitError
from oarkit.core.export import export
from oarkit.core.export.report import ExportReport
from oarkit.core.export.source import ExportSource, TrainedModel, resolve_export_source
from oarkit.core.registry import create_model, model_info

from .charset import CharDictionary
from .data.datasets import DetPreprocess, RecPreprocess
from .data.module import OCRClsData, OCRDetData, OCRRecData
from .pipeline.ocr import DEFAULT_DET, DEFAULT_REC
from .tasks import TextDetectionTask, TextOrientationTask, TextRecognitionTask
from .tasks.det import published_postprocess

logger = logging.getLogger(__name__)

#: the task id a pipeline folder's ``pipeline.yaml`` names (text detection + recognition, end to end)
PIPELINE_TASK_ID = "ocr"
TASKS = {"ocr/det": TextDetectionTask, "ocr/rec": TextRecognitionTask, "ocr/cls": TextOrientationTask}
DATA = {"ocr/det": OCRDetData, "ocr/rec": OCRRecData, "ocr/cls": OCRClsData}


def _dataset(root: str, split: str, *, task: Any, data_config: dict[str, Any]) -> Dataset | None:
    if not root:
        return None
    keys = ("format", "train_list", "val_list")
    data = DATA[task.task_id](root=root, **{k: data_config[k] for k in keys
                                            if k in data_config and not str(data_config[k]).startswith("${")})
    task.configure_data(data)
    return data.dataset(split)


def _from_model_dir(trained: TrainedModel) -> ExportSource:
    task = trained.restored_task(TASKS.get(trained.task_id, TextDetectionTask))
    data_config = trained.data_config()
    return ExportSource(task=task, model=trained.model, origin=str(trained.folder), output_dir=trained.output_dir,
                        meta=trained.meta, data_root=data_config.get("root"),
                        dataset=functools.partial(_dataset, task=task, data_config=data_config))


def registry_meta(name: str, model: torch.nn.Module) -> dict[str, Any]:
    """The meta.json a registry model would have: its task id, preprocessing, (det) post-processing and (rec)
    dictionary."""
    card = model_info(name)
    spec = card.input_spec
    meta: dict[str, Any] = {"task": card.task, "model": {"name": name, "kwargs": getattr(model, "oarkit_kwargs", {})}}
    if card.task == "ocr/det":
        pre = DetPreprocess(mean=tuple(spec.mean), std=tuple(spec.std), limit_side_len=int(spec.size[0]))
        meta["preprocessing"] = pre.to_dict()
        meta["postprocess"] = published_postprocess(model).to_dict()
    elif card.task == "ocr/rec":
        dictionary = CharDictionary.of_model(model)
        meta["preprocessing"] = RecPreprocess(height=int(getattr(model, "image_height", 48))).to_dict()
        meta["dictionary"] = dictionary.to_dict()
    elif card.task == "ocr/cls":
        size = getattr(spec, "size", (48, 192))
        meta["preprocessing"] = {"height": int(size[0]), "width": int(size[1]),
                                 "mean": list(getattr(spec, "mean", (0.5,) * 3)),
                                 "std": list(getattr(spec, "std", (0.5,) * 3)), "bgr": True}
    else:
        raise OarkitError(f"{name} is a {card.task} model, not an OCR one")
    return meta


def _from_registry(name: str, pretrained: bool | str) -> ExportSource:
    inference = {"guidance": False} if model_info(name).task == "ocr/rec" else {}  # no training-only head
    model = create_model(name, pretrained=pretrained, **inference).eval()
    meta = registry_meta(name, model)
    task = TASKS[meta["task"]](name)
    task.restore(meta)
    return ExportSource(task=task, model=model, origin=name, output_dir=Path("exports") / name.replace("/", "_"),
                        meta={**meta, "weights": "pretrained" if pretrained else "random"},
                        dataset=functools.partial(_dataset, task=task, data_config={}))


def export_source(source: str | Path, *, pretrained: bool | str = True) -> ExportSource:
    """A run directory, model directory or registry name of an OCR model, ready for
    :func:`oarkit.core.export.export`."""
    return resolve_export_source(source, from_model_dir=_from_model_dir,
                                 from_registry=functools.partial(_from_registry, pretrained=pretrained))


def export_pipeline(output_dir: str | Path, *, det: str | Path = DEFAULT_DET, rec: str | Path = DEFAULT_REC,
                    cls: str | Path | None = None,
                    format: str = "onnx", pretrained: bool | str = True, verify: bool = True,
                    det_example: tuple[int, int] = (640, 640), rec_example_width: int = 320,
                    parameters: dict[str, Any] | None = None, data_roots: dict[str, str] | None = None,
                    calibration_images: int = 256, stage_formats: dict[str, str] | None = None
                    ) -> tuple[Path, dict[str, ExportReport]]:
    """Export det, (cls) and rec to ``format`` under ``output_dir`` and write its ``pipeline.yaml``.

    Args:
        output_dir: the pipeline folder (``det/<format>``, ``rec/<format>``, ... inside).
        det, rec, cls: run directories or registry names (det and rec default to ``OCR()``'s, PP-OCRv6 small).
        format: an export format (``onnx``, ``openvino``, ``onnx_int8``, ...); the stages run its artifacts
            (the float artifacts an int8 format is built from are written beside them).
        pretrained: for registry names, load the registered weights.
        verify: verify each artifact against eager PyTorch (random inputs inside the declared ranges).
        det_example: the detector's traced ``(height, width)`` (multiples of 32).
        rec_example_width: the recognizer's traced width.
        parameters: the glue's keyword arguments (``drop_score``, ``rec_batch_size``, ...).
        data_roots: per stage (``det``, ``cls``, ``rec``), a dataset for int8 calibration and the verification
            metric (a run directory brings its own; a registry name has none).
        calibration_images: training images int8 calibration reads per stage.
        stage_formats: per stage, a format other than ``format`` (``{"rec": "onnx"}``: an int8 pipeline whose
            recognizer stays float).

    Returns:
        ``(folder, {stage: ExportReport})``.

    Raises:
        OarkitError: a stage failed to export or verify (its report names why).
    """
    output_dir = Path(output_dir)
    stages: dict[str, StageSpec] = {}
    reports: dict[str, ExportReport] = {}
    unknown = sorted(set(stage_formats or {}) - {"det", "cls", "rec"})
    if unknown:
        raise OarkitError(f"stage_formats names {unknown}; the stages are det, cls and rec")
    for kind, source in (("det", det), ("cls", cls), ("rec", rec)):
        if source is None:
            continue
        stage_format = (stage_formats or {}).get(kind, format)
        src = export_source(source, pretrained=pretrained)
        if src.task.task_id != f"ocr/{kind}":
            raise OarkitError(f"the {kind} stage {source} is a {src.task.task_id} model")
        example = None
        if kind == "det":
            example = (torch.randn(1, 3, *det_example),)
        elif kind == "rec":
            example = (torch.randn(1, 3, int(src.task.preprocessing.get("height", 48)), int(rec_example_width)),)
        report = export(src, stage_format, output_dir=output_dir / kind, verify=verify, example_inputs=example,
                        data_root=(data_roots or {}).get(kind), calibration_images=calibration_images)
        reports[kind] = report
        row = report.rows[-1]  # the format asked for comes after those it is built from
        if row.status not in ("pass", "unverified"):
            raise OarkitError(f"the {kind} stage failed to export to {stage_format}: {row.status}: {row.message}")
        stages[kind] = StageSpec(model=f"{kind}/{row.format}")
    glue = "ocr/det_cls_rec" if "cls" in stages else "ocr/det_rec"
    write_pipeline(output_dir, glue=glue, stages=stages, parameters=dict(parameters or {}),
                   task=PIPELINE_TASK_ID)
    logger.info("pipeline written to %s (%s)", output_dir, ", ".join(f"{k}: {v.model}" for k, v in stages.items()))
    return output_dir, reports
