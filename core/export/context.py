"""What an exporter gets: the graph to export, its example inputs, the folder, options and calibration data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oarkit.core.engine.deploy_spec import DeploySpec
from oarkit.core.export.prepare import dynamic_shapes

CalibrationBatches = list[tuple[torch.Tensor, ...]]


@dataclass
class ExportContext:
    """Everything one exporter call needs; built by the pipeline, one per format.

    Attributes:
        spec: the kit's deploy spec; ``spec.module`` is the export wrapper, in eval mode, with re-parameterizable
            blocks fused.
        inputs: the example inputs with every dynamic axis at a size ``torch.export`` keeps symbolic (see
            :func:`~.prepare.traceable_inputs`: it would specialise a batch of one into a constant).
        folder: where the artifact goes.
        options: the format's resolved options.
        calibration: returns batches of real inputs (training images, eval preprocessing) for int8 formats.
        artifacts: folders of the formats exported before this one, by name (a format ``after`` another one
            reads its artifact from here).
        metadata: string facts to embed in the artifact where the format allows (ONNX metadata_props,
            OpenVINO rt_info, ``.pt2`` extra files): the deploy manifest as JSON, the source, the versions.
        quantization: set by int8 exporters to describe the scheme (written into deploy.yaml).
    """

    spec: DeploySpec
    inputs: tuple[torch.Tensor, ...]
    folder: Path
    options: dict[str, Any] = field(default_factory=dict)
    calibration: Callable[[], CalibrationBatches] | None = None
    artifacts: dict[str, Path] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    quantization: dict[str, Any] | None = None

    @property
    def module(self) -> nn.Module:
        return self.spec.module

    def dynamic_shapes(self, max_batch: int | None = None) -> tuple[dict[int, Any], ...]:
        """``torch.export`` dynamic shapes of the spec's inputs, with their declared ranges and multiples and the
        batch axis capped at ``max_batch`` (see :func:`~.prepare.dynamic_shapes`)."""
        return dynamic_shapes(self.spec, max_batch)

    def calibration_batches(self) -> CalibrationBatches:
        """The calibration inputs; a clear error when the source has no training images to offer."""
        from oarkit.core.errors import ConfigError

        batches = self.calibration() if self.calibration is not None else []
        if not batches:
            raise ConfigError("int8 export needs calibration images and this source has none: pass --data ROOT "
                              "(a dataset with a train split) or export from a run directory whose data exists")
        return batches
