"""``torch.export`` programs (``.pt2``): load with ``torch.export.load`` and run without the model's code."""

from __future__ import annotations

import json

import torch

from oarkit.core.export.context import ExportContext
from oarkit.core.export.exporters.rnn import rnn_while_loop_decompositions
from oarkit.core.export.formats import ExportFormat, register_format


def export_pt2(ctx: ExportContext) -> str:
    """Write ``model.pt2`` with the deploy metadata as extra files under ``oarkit/``."""
    with rnn_while_loop_decompositions():  # an LSTM's sequence length stays dynamic
        program = torch.export.export(ctx.module, ctx.inputs, dynamic_shapes=ctx.dynamic_shapes(),
                                      strict=ctx.options["strict"])
    path = ctx.folder / "model.pt2"
    torch.export.save(program, str(path), extra_files={"oarkit/metadata.json": json.dumps(ctx.metadata)})
    return path.name


register_format(ExportFormat(
    name="pt2", artifact="model.pt2", runtime="torch", exporter=export_pt2,
    description="torch.export program (.pt2), dynamic batch; runs on PyTorch without the model code",
    options={"strict": False}, atol_rel=1e-5, metric_tolerance=0.1,
))
