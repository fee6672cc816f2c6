"""Export: registered formats (onnx, pt2, openvino, executorch and their int8 variants), each artifact written
with a deploy.yaml and verified against eager PyTorch.

    from oarkit.clas import export_source
    from oarkit.core.export import export

    report = export(export_source("runs/digits"), "all", quantize="int8", data_root="data/digits")
    print(report.table())
"""

from oarkit.core.export.compare import (
    Difference,
    MatchedBoxes,
    OutputComparator,
    Probabilities,
    RaggedRows,
    RangeRelative,
)
from oarkit.core.export.context import ExportContext
from oarkit.core.export.formats import ExportFormat, get_format, list_formats, parse_formats, register_format
from oarkit.core.export.pipeline import Exporter, export
from oarkit.core.export.prepare import reparameterize
from oarkit.core.export.report import ExportReport, ExportRow
from oarkit.core.export.source import ExportSource, TrainedModel, resolve_export_source

__all__ = [
    "Difference", "MatchedBoxes", "OutputComparator", "Probabilities", "RaggedRows", "RangeRelative",
    "ExportContext", "ExportFormat", "ExportReport", "ExportRow", "ExportSource", "Exporter", "export", "get_format",
    "TrainedModel", "list_formats", "parse_formats", "register_format", "reparameterize", "resolve_export_source",
]
