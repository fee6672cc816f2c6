"""``deploy.yaml``: what an exported artifact is and how to feed it, written beside every artifact."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from oarkit.core.engine.checkpoint import atomic_write_text
from oarkit.core.errors import OarkitError

DEPLOY_FILE = "deploy.yaml"
MANIFEST_VERSION = 1


@dataclass
class TensorInfo:
    """One graph input or output: its name, shape (a string for a dynamic axis), dtype, and for an input the
    range of each dynamic axis (``{"height": {"min": 32, "max": 1280, "multiple": 32}}``)."""

    name: str
    shape: list[int | str]
    dtype: str = "float32"
    ranges: dict[str, dict[str, int | None]] = field(default_factory=dict)

    def shape_problems(self, shape: tuple[int, ...], *, unbounded_first_axis: bool = False) -> list[str]:
        """Why an array of ``shape`` does not fit this input (empty when it does).

        Args:
            shape: the array's shape.
            unbounded_first_axis: ignore the first axis' upper bound (the deployed model runs it in chunks).
        """
        if len(shape) != len(self.shape):
            return [f"{self.name} has shape {tuple(shape)}, the graph takes {len(self.shape)} axes {self.shape}"]
        problems = []
        for axis, (want, size) in enumerate(zip(self.shape, shape)):
            if isinstance(want, int):
                if size != want:
                    problems.append(f"{self.name} axis {axis} is {size}, the graph takes {want}")
                continue
            bounds = self.ranges.get(str(want)) or {}
            low, high, multiple = bounds.get("min") or 0, bounds.get("max"), bounds.get("multiple") or 1
            if unbounded_first_axis and axis == 0:
                high = None
            if size < low or (high is not None and size > high) or size % multiple:
                text = f"[{low}, {'inf' if high is None else high}]" + (
                    f", a multiple of {multiple}" if multiple > 1 else "")
                problems.append(f"{self.name} axis {axis} ({want}) is {size}, the graph takes {text}")
        return problems


@dataclass
class DeployManifest:
    """The contents of ``deploy.yaml``.

    Attributes:
        format: the export format (``onnx``, ``onnx_int8``, ``openvino``, ...).
        artifact: the artifact's file name inside the folder.
        runtime: the runtime that executes it (``onnxruntime``, ``openvino``, ``executorch``, ``torch``).
        task: the kit that owns the model (``clas``), so that the command line finds its predictor.
        model: the registry name of the source model.
        inputs, outputs: the graph's tensors, in order.
        preprocessing: how a raw input becomes the first input tensor (the kit's spec, as in meta.json).
        postprocessing: parameters of the kit's post-processing (top-k, activation, thresholds, ...).
        labels: label names, index order.
        quantization: how the artifact was quantized, or ``None`` for a float artifact.
        source: where it came from (checkpoint, its metrics, the exporter's options).
        runtime_options: settings the runtime is opened with (``inference_precision: f32``).
        max_batch: the largest batch the artifact takes in one call (ExecuTorch plans memory for a bound).
        versions: package versions at export time.
        created: ISO time of the export.
        verification: the verification results, filled in after the artifact checked itself.
    """

    format: str
    artifact: str
    runtime: str
    task: str = ""
    model: str | None = None
    inputs: list[TensorInfo] = field(default_factory=list)
    outputs: list[TensorInfo] = field(default_factory=list)
    preprocessing: dict[str, Any] = field(default_factory=dict)
    postprocessing: dict[str, Any] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)
    quantization: dict[str, Any] | None = None
    source: dict[str, Any] = field(default_factory=dict)
    runtime_options: dict[str, Any] = field(default_factory=dict)
    max_batch: int | None = None
    versions: dict[str, str] = field(default_factory=dict)
    created: str = ""
    verification: dict[str, Any] | None = None
    version: int = MANIFEST_VERSION

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def meta(self) -> dict[str, Any]:
        """The run-directory view of the artifact (the keys a kit reads from ``meta.json``)."""
        return {"task": self.task, "model": {"name": self.model}, "labels": list(self.labels),
                "preprocessing": dict(self.preprocessing), "postprocessing": dict(self.postprocessing)}

    def write(self, folder: str | Path) -> Path:
        """Write ``deploy.yaml`` into ``folder`` atomically; returns its path."""
        path = Path(folder) / DEPLOY_FILE
        atomic_write_text(path, yaml.safe_dump(_plain(self.to_dict()), sort_keys=False, allow_unicode=True))
        return path

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, where: str = DEPLOY_FILE) -> DeployManifest:
        known = {f.name for f in dataclasses.fields(cls)}
        missing = [k for k in ("format", "artifact", "runtime") if k not in data]
        if missing:
            raise OarkitError(f"{where} lacks {missing}; re-export the model with `oarkit export`")
        values = {k: v for k, v in data.items() if k in known}
        for key in ("inputs", "outputs"):
            values[key] = [TensorInfo(**t) for t in values.get(key) or []]
        return cls(**values)


def _plain(value: Any) -> Any:
    """Tuples and numpy scalars as plain YAML lists and numbers."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()
    return value


def is_export_dir(path: str | Path) -> bool:
    """Whether ``path`` is an export folder (holds a ``deploy.yaml``)."""
    return (Path(path) / DEPLOY_FILE).is_file()


def read_manifest(folder: str | Path) -> DeployManifest:
    """The :class:`DeployManifest` of an export folder.

    Raises:
        OarkitError: there is no readable ``deploy.yaml`` or its artifact is missing.
    """
    folder = Path(folder)
    path = folder / DEPLOY_FILE
    if not path.is_file():
        raise OarkitError(f"{folder} is not an export folder (no {DEPLOY_FILE}); export one with "
                          f"`oarkit export RUN_DIR --format onnx`")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise OarkitError(f"{path} is not valid YAML: {err}") from err
    manifest = DeployManifest.from_dict(data, where=str(path))
    if not (folder / manifest.artifact).exists():
        raise OarkitError(f"{path} names the artifact {manifest.artifact!r}, which is missing from {folder}; "
                          "re-export the model")
    return manifest
