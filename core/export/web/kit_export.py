"""What a kit's ``web_export`` calls: export the ONNX model through :func:`oarkit.core.export.export` (verified
against eager PyTorch), then write the web folder around it with the kit's module and the model's deploy.yaml."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from oarkit.core.errors import OarkitError
from oarkit.core.export.web.folder import write_web_folder
from oarkit.core.export.web.runtime import web_runtime_dir

#: the ``--quantize`` values a web export takes, and the ONNX format each exports
QUANTIZED_FORMATS = {None: "onnx", "int8": "onnx_int8"}


def export_onnx_for_web(source: Any, folder: Path, *, quantize: str | None = None,
                        export_options: dict[str, Any] | None = None) -> tuple[Path, dict[str, Any]]:
    """Export ``source`` (an :class:`~oarkit.core.export.ExportSource`) to ONNX (``onnx_int8`` with
    ``quantize="int8"``) under ``folder``, verified; returns the model file and its deploy.yaml as plain data.

    Raises:
        OarkitError: an unknown ``quantize``, or an export that fails its verification (with the report's table).
    """
    from oarkit.core.export import export

    if quantize not in QUANTIZED_FORMATS:
        raise OarkitError(f"--quantize {quantize!r} is not supported by the web export; use int8 or leave it out")
    fmt = QUANTIZED_FORMATS[quantize]
    report = export(source, fmt, output_dir=folder, verify=True, **(export_options or {}))
    row = report.row(fmt)
    if row.status != "pass":
        raise OarkitError(f"the {fmt} export that the web folder would carry did not verify ({row.status}: "
                          f"{row.message}); the report:\n{report.table()}")
    onnx_dir = Path(row.folder)
    deploy = yaml.safe_load((onnx_dir / "deploy.yaml").read_text())
    return onnx_dir / deploy.get("artifact", "model.onnx"), deploy


def export_web(source: str | Path, *, out: str | Path, quantize: str | None, export_source: Callable[..., Any],
               kit_script: Path, pretrained: bool | str = True, deploy_extra: dict[str, Any] | None = None,
               title: str | None = None) -> Path:
    """A single-model kit's web export: ``export_source(source, pretrained=...)``, its verified ONNX as the
    model ``model``, written with ``kit_script`` into ``out``; the export's report lands in ``out/report.md``.

    Args:
        source: a run directory, model directory or registry name.
        out: the web folder.
        quantize: ``None`` (float) or ``"int8"``.
        export_source: the kit's ``export_source``.
        kit_script: the kit's ES module.
        pretrained: for a registry name, load its registered weights (``False``: random weights).
        deploy_extra: more top-level deploy.json keys the kit's module reads (defaults such as ``threshold``).
        title: the page title (default: ``oarkit <task> · <model name>``).
    """
    web_runtime_dir()  # before the export: a missing npm cache fails at once
    exported = export_source(source, pretrained=pretrained)
    with tempfile.TemporaryDirectory(prefix="oarkit-web-") as tmp:
        model, deploy = export_onnx_for_web(exported, Path(tmp), quantize=quantize)
        name = deploy.get("model") or Path(str(source)).name
        task = deploy.get("task") or ""
        out = write_web_folder(out, task_id=task, kit_script=kit_script, models={"model": model},
                               deploy={"models": {"model": deploy}, **(deploy_extra or {})},
                               title=title or f"oarkit {task} · {name}")
        for report in ("report.md", "report.json"):
            if (Path(tmp) / report).exists():
                shutil.copyfile(Path(tmp) / report, Path(out) / report)
    return Path(out)
