"""Runtimes that execute exported artifacts: numpy arrays in, numpy arrays out, one class per engine.

Each runtime imports its engine lazily, so a deployment needs only the engine of its own format.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from oarkit.core.deploy.manifest import DeployManifest
from oarkit.core.deploy.optional import require
from oarkit.core.errors import OarkitError, UnknownNameError, did_you_mean

logger = logging.getLogger(__name__)


class Runtime(ABC):
    """An opened artifact.

    Args:
        path: the artifact file.
        manifest: its ``deploy.yaml``.
        **options: engine settings (they win over the manifest's ``runtime_options``).
    """

    name: str = ""

    def __init__(self, path: str | Path, manifest: DeployManifest, **options: Any) -> None:
        self.path = Path(path)
        self.manifest = manifest
        self.options = {**manifest.runtime_options, **options}

    @abstractmethod
    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Outputs for ``inputs`` (in the manifest's input order), as float arrays in output order."""


class OnnxRuntime(Runtime):
    """onnxruntime's CPU provider (``providers``, ``threads`` and ``spinning`` are options).

    ``spinning=False`` lets idle pool threads sleep instead of spinning (onnxruntime's default): on CPUs shared with
    other jobs spinning costs, PP-OCRv4 rec at 2 threads took 96 ms spinning and 53 ms without at a load of 3-5.
    """

    name = "onnxruntime"

    def __init__(self, path: str | Path, manifest: DeployManifest, **options: Any) -> None:
        super().__init__(path, manifest, **options)
        ort = require("onnxruntime", purpose="running ONNX artifacts")
        session_options = ort.SessionOptions()
        if self.options.get("threads"):
            session_options.intra_op_num_threads = int(self.options["threads"])
        if "spinning" in self.options:
            session_options.add_session_config_entry("session.intra_op.allow_spinning",
                                                     "1" if self.options["spinning"] else "0")
        providers = self.options.get("providers") or ["CPUExecutionProvider"]
        self.session = ort.InferenceSession(str(self.path), session_options, providers=list(providers))
        self.input_names = [i.name for i in self.session.get_inputs()]

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return list(self.session.run(None, dict(zip(self.input_names, inputs))))


class OpenVINORuntime(Runtime):
    """OpenVINO on a device (``device``, default ``CPU``) at an inference precision.

    ``inference_precision`` is ``f32`` (what export verification uses) or ``default`` (OpenVINO's own choice,
    bf16 on CPUs with AVX512-BF16).
    """

    name = "openvino"

    def __init__(self, path: str | Path, manifest: DeployManifest, **options: Any) -> None:
        super().__init__(path, manifest, **options)
        ov = require("openvino", purpose="running OpenVINO artifacts")
        config: dict[str, Any] = {}
        precision = str(self.options.get("inference_precision", "f32"))
        if precision != "default":
            config["INFERENCE_PRECISION_HINT"] = precision
        if self.options.get("threads"):
            config["INFERENCE_NUM_THREADS"] = int(self.options["threads"])
        self.compiled = ov.Core().compile_model(str(self.path), str(self.options.get("device", "CPU")), config)
        self.request = self.compiled.create_infer_request()

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        results = self.request.infer(list(inputs))
        return [np.asarray(results[out]) for out in self.compiled.outputs]


class ExecuTorchRuntime(Runtime):
    """ExecuTorch's Python runtime on a ``.pte`` program (XNNPACK-delegated where the exporter lowered it)."""

    name = "executorch"

    def __init__(self, path: str | Path, manifest: DeployManifest, **options: Any) -> None:
        super().__init__(path, manifest, **options)
        runtime = require("executorch.runtime", purpose="running ExecuTorch (.pte) artifacts")
        self.method = runtime.Runtime.get().load_program(str(self.path)).load_method("forward")
        if self.method is None:
            raise OarkitError(f"{self.path} has no 'forward' method; re-export it with `oarkit export`")
        # Memory is planned for a bounded batch, which can be smaller than the export's max_batch.
        sizes = self.method.metadata.input_tensor_meta(0).sizes()
        self.capacity = int(sizes[0]) if len(sizes) else 0

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        import torch

        batch = int(inputs[0].shape[0]) if inputs and inputs[0].ndim else 0
        step = self.capacity if self.capacity and batch > self.capacity else max(batch, 1)
        chunks = []
        for start in range(0, max(batch, 1), step):
            tensors = [torch.from_numpy(np.ascontiguousarray(x[start:start + step] if batch else x)) for x in inputs]
            chunks.append([o.detach().numpy() if hasattr(o, "detach") else np.asarray(o)
                           for o in self.method.execute(tensors)])
        return [np.concatenate([c[k] for c in chunks]) for k in range(len(chunks[0]))]


class TorchExportRuntime(Runtime):
    """A ``torch.export`` program (``.pt2``) run by PyTorch."""

    name = "torch"

    def __init__(self, path: str | Path, manifest: DeployManifest, **options: Any) -> None:
        super().__init__(path, manifest, **options)
        import torch

        self.module = torch.export.load(str(self.path)).module()

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        import torch

        with torch.no_grad():
            out = self.module(*[torch.from_numpy(np.ascontiguousarray(x)) for x in inputs])
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [o.detach().float().numpy() for o in outs]


RUNTIMES: dict[str, type[Runtime]] = {r.name: r for r in (OnnxRuntime, OpenVINORuntime, ExecuTorchRuntime,
                                                          TorchExportRuntime)}


def open_runtime(folder: str | Path, manifest: DeployManifest, **options: Any) -> Runtime:
    """Open the artifact of an export folder with the runtime its manifest names."""
    if manifest.runtime not in RUNTIMES:
        raise UnknownNameError(f"{folder}/deploy.yaml names the runtime {manifest.runtime!r}, which oarkit does not "
                               f"know.{did_you_mean(manifest.runtime, RUNTIMES)} Runtimes: {', '.join(RUNTIMES)}.")
    return RUNTIMES[manifest.runtime](Path(folder) / manifest.artifact, manifest, **options)
