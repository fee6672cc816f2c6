"""``DeployedModel``: an export folder that behaves like the eager export wrapper (tensors in, tensors out)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from oarkit.core.deploy.manifest import DEPLOY_FILE, DeployManifest, read_manifest
from oarkit.core.deploy.runtimes import Runtime, open_runtime
from oarkit.core.errors import OarkitError


class DeployedModel(nn.Module):
    """An exported artifact as a module, so that kit predictors and metrics run on it unchanged.

    Inputs are moved to the CPU as arrays of the dtypes ``deploy.yaml`` records for the graph's inputs (float32
    images, int64 token ids), batches larger than the artifact's ``max_batch`` are run in chunks, and the outputs
    come back as tensors on the inputs' device: one tensor for a single-output graph, a tuple otherwise.

    Example::

        model = DeployedModel("runs/digits/export/onnx_int8")
        logits = model(torch.randn(4, 3, 32, 32))
        model.manifest.labels, model.manifest.preprocessing

    Args:
        folder: an export folder (artifact plus ``deploy.yaml``).
        **runtime_options: engine settings, e.g. ``inference_precision="default"`` for OpenVINO, ``threads=2``.
    """

    def __init__(self, folder: str | Path, **runtime_options: Any) -> None:
        super().__init__()
        self.folder = Path(folder)
        self.manifest: DeployManifest = read_manifest(self.folder)
        self.runtime: Runtime = open_runtime(self.folder, self.manifest, **runtime_options)
        self.input_dtypes = [np.dtype(info.dtype) for info in self.manifest.inputs]

    def _cast(self, arrays: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        """The inputs as the graph's dtypes (float32 where the manifest predates recorded dtypes)."""
        if self.input_dtypes and len(arrays) != len(self.input_dtypes):
            names = [info.name for info in self.manifest.inputs]
            raise OarkitError(f"{self.folder} takes {len(names)} inputs ({', '.join(names)}), got {len(arrays)}")
        dtypes = self.input_dtypes or [np.dtype(np.float32)] * len(arrays)
        chunked = bool(self.manifest.max_batch)
        problems = [p for info, a in zip(self.manifest.inputs, arrays)
                    for p in info.shape_problems(tuple(a.shape), unbounded_first_axis=chunked)]
        if problems:
            raise OarkitError(f"{self.folder} cannot run these inputs: {'; '.join(problems)} (see its "
                              f"{DEPLOY_FILE}); resize or pad them to a shape the graph takes")
        return tuple(np.ascontiguousarray(a, dtype=d) for a, d in zip(arrays, dtypes))

    def run_numpy(self, *arrays: np.ndarray) -> list[np.ndarray]:
        """Outputs of the artifact for numpy inputs, chunked along the batch axis when needed."""
        arrays = self._cast(arrays)
        limit = self.manifest.max_batch
        batch = arrays[0].shape[0] if arrays and arrays[0].ndim else 0
        if not limit or batch <= limit:
            return self.runtime.run(arrays)
        chunks = [self.runtime.run(tuple(a[i:i + limit] for a in arrays)) for i in range(0, batch, limit)]
        return [np.concatenate([c[k] for c in chunks]) for k in range(len(chunks[0]))]

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        device = inputs[0].device if inputs else torch.device("cpu")
        outs = self.run_numpy(*(x.detach().cpu().numpy() for x in inputs))
        tensors = tuple(torch.from_numpy(np.asarray(o)).to(device) for o in outs)
        return tensors[0] if len(tensors) == 1 else tensors

    def extra_repr(self) -> str:
        return f"{self.folder}, format={self.manifest.format}, runtime={self.manifest.runtime}"
