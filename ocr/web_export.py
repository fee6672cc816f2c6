"""The OCR pipeline as a web folder (``oarkit export ocr --format web --out DIR``): det → (cls →) rec on
onnxruntime-web, with the kit's JavaScript (``ocr/web/*.js``: the glue, DB post-processing, crops, CTC decoding)
beside the Python it ports.

The source is ``ocr`` (the pipeline ``OCR()`` builds by default: :data:`~oarkit.ocr.pipeline.ocr.DEFAULT_DET` and
``DEFAULT_REC``, exported here to ONNX) or an exported OCR pipeline folder (``pipeline.yaml``, see
:func:`oarkit.ocr.export_pipeline`) whose stages are ONNX. ``deploy.json`` carries each stage's settings merged as
the Python glue merges them (defaults, then ``deploy.yaml``, then ``pipeline.yaml``), so that the page runs with
exactly the settings ``OCR(folder)`` runs with.
"""

from __future__ import annotations

import inspect
import json
import logging
import tempfile
from pathlib import Path
from typing import Any

import torch

from oarkit.core.deploy.manifest import read_manifest
from oarkit.core.deploy.pipeline import Stage, get_glue, is_pipeline_dir, read_pipeline, stage_folder, write_pipeline
from oarkit.core.errors import OarkitError

from .export import PIPELINE_TASK_ID, export_source
from .pipeline.glue import CLS_DEFAULTS, DET_DEFAULTS, REC_DEFAULTS, dictionary_of, settings
from .pipeline.ocr import DEFAULT_DET, DEFAULT_REC, version_of

logger = logging.getLogger(__name__)

WEB_DIR = Path(__file__).resolve().parent / "web"
#: the kit's modules: ocr.js is the page's kit.js, the others sit beside it under their own names
KIT_SCRIPT = WEB_DIR / "ocr.js"
KIT_MODULES = ("ocr_db.js", "ocr_image.js")
ONNX_FORMATS = ("onnx", "onnx_int8")
QUANTIZE = (None, "int8")
#: what int8 calibration of the default pipeline renders (no dataset comes with registry names): pages for the
#: detector, lines for the recognizer, and how many of them calibration reads
CALIBRATION = {"det": {"train": 32, "val": 8, "size": (640, 640), "language": "mixed", "lines": 8},
               "rec": {"train": 128, "val": 32, "language": "mixed"}}
CALIBRATION_IMAGES = 32


def _plain(value: Any) -> Any:
    """``value`` as JSON data (tuples as lists, paths and other objects as strings)."""
    return json.loads(json.dumps(value, default=str))


def _int8_sibling(folder: Path) -> Path | None:
    """The verified ``onnx_int8`` export beside a float stage folder (``det/onnx`` → ``det/onnx_int8``), if any:
    its ``report.json`` row (written by the export that made it) must say ``pass``."""
    sibling = folder.parent / "onnx_int8"
    report = folder.parent / "report.json"
    if not (sibling / "deploy.yaml").is_file() or not report.is_file():
        return None
    rows = json.loads(report.read_text()).get("rows") or []
    ok = any(row.get("format") == "onnx_int8" and row.get("status") == "pass" for row in rows)
    return sibling if ok else None


def _stage_models(folder: Path, quantize: str | None) -> dict[str, tuple[Path, Stage, str]]:
    """Per stage of the pipeline folder: its export folder, the :class:`Stage` the glue would see (manifest and
    parameters, no runtime) and the format it runs in the browser."""
    manifest = read_pipeline(folder)
    out = {}
    for name, spec in manifest.stages.items():
        path = stage_folder(folder, name, spec.model)
        stage_manifest = read_manifest(path)
        if quantize == "int8" and stage_manifest.format == "onnx":
            sibling = _int8_sibling(path)
            if sibling is not None:
                path, stage_manifest = sibling, read_manifest(sibling)
            else:
                logger.warning("stage %s of %s has no verified onnx_int8 export beside %s; it stays float (export "
                               "the pipeline with format='onnx_int8' and data_roots for calibration, or run "
                               "`oarkit export ocr --format web --quantize int8`)", name, folder, path)
        if stage_manifest.format not in ONNX_FORMATS:
            raise OarkitError(f"stage {name!r} of {folder} is a {stage_manifest.format} export; the web export runs "
                              f"ONNX ({', '.join(ONNX_FORMATS)}): export the pipeline with format='onnx' "
                              "(oarkit.ocr.export_pipeline)")
        out[name] = (path, Stage(name=name, model=None, parameters=dict(spec.parameters), manifest=stage_manifest,
                                 folder=path), stage_manifest.format)
    return out


def _glue_parameters(glue_name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """The glue's keyword arguments: its defaults under ``pipeline.yaml``'s."""
    known = get_glue(glue_name).parameters() or {}
    defaults = {k: v for k, v in known.items() if v is not inspect.Parameter.empty}
    return {**defaults, **parameters}


def export_default_pipeline(folder: str | Path, *, quantize: str | None = None,
                            pretrained: bool | str = True) -> tuple[Path, dict[str, str]]:
    """Export the pipeline ``OCR()`` builds by default (its det and rec registry models) to ONNX under ``folder``
    and write its ``pipeline.yaml``.

    With ``quantize="int8"`` each stage is also exported to ``onnx_int8``, calibrated on rendered pages and lines,
    and runs int8 where that artifact verifies; a stage whose int8 artifact fails verification stays float (the
    PP-OCRv6 recognizer's does). ``pretrained=False`` exports random weights (``--random-weights``).

    Returns:
        ``(folder, {stage: format it runs in})``.

    Raises:
        OarkitError: a stage's float export failed.
    """
    from oarkit.core.export import export

    from .render import write_det_set, write_rec_set

    if quantize not in QUANTIZE:
        raise OarkitError(f"quantize={quantize!r}: the OCR web export takes None (float) or 'int8'")
    folder = Path(folder)
    formats: dict[str, str] = {}
    stages: dict[str, str] = {}
    for kind, name in (("det", DEFAULT_DET), ("rec", DEFAULT_REC)):
        src = export_source(name, pretrained=pretrained)
        height = int(src.task.preprocessing.get("height", 48)) if kind == "rec" else 640
        example = (torch.randn(1, 3, 640, 640),) if kind == "det" else (torch.randn(1, 3, height, 320),)
        data_root = None
        if quantize == "int8":
            data_root = str(folder / "calibration" / kind)
            writer = write_det_set if kind == "det" else write_rec_set
            writer(data_root, **CALIBRATION[kind])
        report = export(src, "onnx_int8" if quantize == "int8" else "onnx", output_dir=folder / kind, verify=True,
                        example_inputs=example, data_root=data_root, calibration_images=CALIBRATION_IMAGES)
        rows = {row.format: row for row in report.rows}
        if rows.get("onnx") is None or rows["onnx"].status not in ("pass", "unverified"):
            row = rows.get("onnx")
            raise OarkitError(f"the {kind} stage {name} failed to export to ONNX: "
                              f"{row.status if row else 'missing'}: {row.message if row else ''}")
        chosen = "onnx"
        if quantize == "int8":
            int8 = rows.get("onnx_int8")
            if int8 is not None and int8.status == "pass":
                chosen = "onnx_int8"
            else:
                logger.warning("the %s stage %s stays float: its int8 artifact did not verify (%s: %s)", kind, name,
                               int8.status if int8 else "missing", int8.message if int8 else "")
        formats[kind] = chosen
        stages[kind] = f"{kind}/{chosen}"
    write_pipeline(folder, glue="ocr/det_rec", stages=stages, task=PIPELINE_TASK_ID)
    return folder, formats


def web_export(source: str | Path, *, out: str | Path, quantize: str | None = None,
               pretrained: bool | str = True) -> Path:
    """Write the web folder of an OCR pipeline (the ``ocr`` task's ``web_export``).

    Args:
        source: ``ocr`` (the default ``OCR()`` pipeline, exported now) or an exported OCR pipeline folder.
        out: the web folder.
        quantize: ``"int8"``: stages run their int8 artifacts where those verify (for a folder: a verified
            ``onnx_int8`` export beside a stage's ``onnx`` one), float otherwise; ``None``: float.
        pretrained: for ``ocr``, the registered weights (``False``: random ones, ``--random-weights``).

    Returns:
        ``out``.

    Raises:
        OarkitError: the source is neither ``ocr`` nor a pipeline folder, a stage is not ONNX, or onnxruntime-web
            is not installed (``make web-deps``).
    """
    if quantize not in QUANTIZE:
        raise OarkitError(f"quantize={quantize!r}: the OCR web export takes None (float) or 'int8'")
    if is_pipeline_dir(source):
        return _write(Path(source), Path(out), quantize)
    if str(source) == PIPELINE_TASK_ID:
        with tempfile.TemporaryDirectory(prefix="oarkit_ocr_web_") as tmp:
            folder, formats = export_default_pipeline(Path(tmp) / "pipeline", quantize=quantize,
                                                      pretrained=pretrained)
            logger.info("default OCR pipeline exported (%s)", ", ".join(f"{k}: {v}" for k, v in formats.items()))
            return _write(folder, Path(out), None)
    raise OarkitError(f"{source} is not an OCR pipeline: give 'ocr' (the default OCR() pipeline) or a folder holding "
                      "pipeline.yaml (oarkit.ocr.export_pipeline writes one)")


def _write(folder: Path, out: Path, quantize: str | None) -> Path:
    from oarkit.core.export.web import web_runtime_dir, write_web_folder

    pipeline = read_pipeline(folder)
    if pipeline.task and pipeline.task != PIPELINE_TASK_ID:
        raise OarkitError(f"{folder} is a {pipeline.task} pipeline, not an OCR one")
    stages = _stage_models(folder, quantize)
    if "det" not in stages or "rec" not in stages:
        raise OarkitError(f"{folder}: an OCR pipeline needs det and rec stages, it has {sorted(stages)}")
    defaults = {"det": DET_DEFAULTS, "rec": REC_DEFAULTS, "cls": CLS_DEFAULTS}
    merged: dict[str, dict[str, Any]] = {}
    for name, (_, stage, _) in stages.items():
        values = settings(stage, defaults[name])
        values.pop("dictionary", None)
        merged[name] = _plain(values)
    dictionary = dictionary_of(stages["rec"][1])
    with tempfile.TemporaryDirectory(prefix="oarkit_ocr_dict_") as tmp:
        dict_file = Path(tmp) / "dict.txt"
        # one class a line, class 1 first (the space use_space_char appends included); no trailing newline, so that
        # a line that is a space stays one
        dict_file.write_text("\n".join(dictionary.characters), encoding="utf-8")
        extra = {name: WEB_DIR / name for name in KIT_MODULES}
        extra.update({"vendor/clipper.js": web_runtime_dir() / "clipper-lib" / "clipper.js", "dict.txt": dict_file})
        models = {name: path / stage.manifest.artifact for name, (path, stage, _) in stages.items()}
        deploy = {"models": {name: _plain(stage.manifest.to_dict()) for name, (_, stage, _) in stages.items()},
                  "ocr": {"glue": pipeline.glue, "stages": merged,
                          "parameters": _plain(_glue_parameters(pipeline.glue, dict(pipeline.parameters))),
                          "dictionary": "dict.txt", "num_classes": dictionary.num_classes,
                          "clipper": "vendor/clipper.js",
                          "formats": {name: fmt for name, (_, _, fmt) in stages.items()}}}
        return write_web_folder(out, task_id=PIPELINE_TASK_ID, kit_script=KIT_SCRIPT, models=models, deploy=deploy,
                                title=_title(stages), extra_files=extra)


def _title(stages: dict[str, tuple[Path, Stage, str]]) -> str:
    """``oarkit OCR · PP-OCRv6-small`` (a version's det + rec), else the stages' model names; int8 stages said."""
    names = {name: stage.manifest.model or name for name, (_, stage, _) in stages.items()}
    version = version_of(names["det"])
    described = (version if version and version_of(names["rec"]) == version and len(stages) == 2
                 else " + ".join(names.values()))
    int8 = [name for name, (_, _, fmt) in stages.items() if fmt == "onnx_int8"]
    return f"oarkit OCR · {described}" + (f" ({', '.join(int8)} int8)" if int8 else "")
