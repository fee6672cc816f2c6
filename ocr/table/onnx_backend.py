"""SLANet-plus through onnxruntime on the same ONNX file the port's weights come from: the recognizer's
``backend="onnxruntime"``, returning what the PyTorch port's eval forward returns."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from oarkit.core.deploy.optional import MissingDependencyError

from .tokens import EOS


def trim_steps(probs: np.ndarray, locs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The steps Paddle's eval forward returns: up to the step at which every table has emitted ``eos``
    (paddle2onnx's Loop slices one unwritten step more)."""
    ids = probs.argmax(-1) == EOS
    if not ids.any(1).all():
        return probs, locs
    steps = int(ids.argmax(1).max()) + 1
    return probs[:, :steps], locs[:, :steps]


class OnnxSLANet:
    """An onnxruntime session of ``slanet-plus.onnx``; called on a preprocessed ``[B, 3, 488, 488]`` float32 batch.

    Args:
        path: the ONNX file.
        threads: intra-op threads (``None``: onnxruntime's default).
    """

    def __init__(self, path: str | Path, threads: int | None = None) -> None:
        try:
            import onnxruntime as ort
        except ImportError as err:
            raise MissingDependencyError("TableRecognizer(backend='onnxruntime') needs onnxruntime: "
                                         "pip install onnxruntime") from err
        options = ort.SessionOptions()
        options.log_severity_level = 3  # the exported Loop warns about its scalar shapes on every step
        if threads:
            options.intra_op_num_threads, options.inter_op_num_threads = int(threads), 1
        self.path = Path(path)
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input_name = self.session.get_inputs()[0].name

    def __call__(self, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(structure_probs [B, T, C], loc_preds [B, T, 8])``."""
        locs, probs = self.session.run(None, {self.input_name: np.ascontiguousarray(batch, np.float32)})
        return trim_steps(probs, locs)
