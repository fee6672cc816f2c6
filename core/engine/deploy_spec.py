"""The deploy spec: how a trained model leaves PyTorch.

A task describes its export graph with a :class:`DeploySpec`: the wrapper module, example inputs, and for each
input the axes that may vary, with their ranges and required multiples (:class:`Dim`, :class:`InputSpec`)::

    DeploySpec(module=DBExport(model), example_inputs=(torch.randn(1, 3, 640, 640),),
               input_names=["images"], output_names=["probability"],
               inputs=[InputSpec("images", [Dim("batch", 1, 64), 3, Dim("height", 32, 1280, multiple=32),
                                            Dim("width", 32, 1280, multiple=32)])],
               output_axes={"probability": {0: "batch", 2: "height", 3: "width"}})

Export traces with dynamic shapes that follow the declared ranges, verification draws random inputs inside them,
and ``deploy.yaml`` records them so a deployed model refuses a shape the graph was not made for. The older form,
``dynamic_axes={"images": {0: "batch"}}``, still works: each named axis becomes an unbounded :class:`Dim`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from oarkit.core.errors import ConfigError

if TYPE_CHECKING:
    from oarkit.core.export.compare import OutputComparator


@dataclass(frozen=True)
class Dim:
    """A dynamic axis: its name, its range and the multiple its size must be.

    Axes of several inputs that carry the same name must have the same size (the batch of ids and mask).

    Attributes:
        name: the axis name (``batch``, ``height``, ``sequence``); the graph and deploy.yaml use it.
        min: the smallest size.
        max: the largest size; ``None``: unbounded.
        multiple: sizes must be multiples of this (a stride-32 detector: 32).
    """

    name: str
    min: int = 1
    max: int | None = None
    multiple: int = 1

    def __post_init__(self) -> None:
        if self.multiple < 1:
            raise ConfigError(f"Dim {self.name!r}: multiple={self.multiple} must be at least 1")
        if self.min < 0 or (self.max is not None and self.max < self.min):
            raise ConfigError(f"Dim {self.name!r}: the range [{self.min}, {self.max}] is empty; give 0 <= min <= max")
        if self.max is not None and self.lowest > self.max:
            raise ConfigError(f"Dim {self.name!r}: no multiple of {self.multiple} lies in [{self.min}, {self.max}]")

    @property
    def lowest(self) -> int:
        """The smallest admitted size."""
        return -(-self.min // self.multiple) * self.multiple

    @property
    def highest(self) -> int | None:
        """The largest admitted size (``None``: unbounded)."""
        return None if self.max is None else self.max // self.multiple * self.multiple

    def admits(self, size: int) -> bool:
        """Whether an axis of ``size`` lies in the range and is a multiple."""
        return size >= self.min and (self.max is None or size <= self.max) and size % self.multiple == 0

    def sizes(self, upper: int) -> list[int]:
        """The admitted sizes up to ``upper`` (and the range's own maximum), smallest first."""
        top = upper if self.highest is None else min(upper, self.highest)
        return list(range(self.lowest, top + 1, self.multiple))

    def describe(self) -> str:
        """``height in [32, 1280], a multiple of 32``."""
        text = f"{self.name} in [{self.min}, {'inf' if self.max is None else self.max}]"
        return text + (f", a multiple of {self.multiple}" if self.multiple > 1 else "")

    def to_dict(self) -> dict[str, int | None]:
        """The range as deploy.yaml records it."""
        return {"min": self.min, "max": self.max, "multiple": self.multiple}


@dataclass
class InputSpec:
    """One graph input: its axes (dynamic ones as :class:`Dim`), dtype and the values random inputs take.

    Attributes:
        name: the input name (one of the spec's ``input_names``).
        dims: one entry per axis: a :class:`Dim` for an axis that varies, an ``int`` for a fixed size, ``None``
            for the example input's size (fixed).
        dtype: the dtype (``float32``, ``int64``); ``None``: the example input's.
        low, high: random verification inputs are drawn uniformly from ``[low, high)`` (token ids:
            ``[0, vocab)``, masks: ``[1, 2)``); float inputs without them are standard normal, integer inputs
            without them span the example input's values.
    """

    name: str
    dims: Sequence[Dim | int | None]
    dtype: str | None = None
    low: float | None = None
    high: float | None = None

    def dynamic(self) -> dict[int, Dim]:
        """The dynamic axes, by position."""
        return {axis: d for axis, d in enumerate(self.dims) if isinstance(d, Dim)}

    def resolved(self, example: torch.Tensor) -> InputSpec:
        """This spec with every ``None`` size and the dtype read from ``example``, checked against it.

        Raises:
            ConfigError: the example has another rank, a fixed size differs, or a dynamic size is outside its range.
        """
        if len(self.dims) != example.ndim:
            raise ConfigError(f"input {self.name!r} declares {len(self.dims)} axes, its example input has shape "
                              f"{tuple(example.shape)}")
        dims: list[Dim | int | None] = []
        for axis, (d, size) in enumerate(zip(self.dims, example.shape)):
            if isinstance(d, Dim) and not d.admits(int(size)):
                raise ConfigError(f"input {self.name!r}: the example's axis {axis} is {int(size)}, outside "
                                  f"{d.describe()}; make the example input fit its declared range")
            if isinstance(d, int) and d != int(size):
                raise ConfigError(f"input {self.name!r}: axis {axis} is declared {d}, the example's is {int(size)}")
            dims.append(int(size) if d is None else d)
        dtype = self.dtype or str(example.dtype).removeprefix("torch.")
        low, high = self.low, self.high
        if low is None and high is None and not example.is_floating_point() and example.dtype != torch.bool:
            low, high = (int(example.min()), int(example.max()) + 1) if example.numel() else (0, 1)
        return dataclasses.replace(self, dims=dims, dtype=dtype, low=low, high=high)


@dataclass
class DeploySpec:
    """How a trained model leaves PyTorch: the graph to export and what a deployed predictor needs.

    Attributes:
        module: the export wrapper (training-only branches off, outputs flattened to tensors).
        example_inputs: inputs that trace the wrapper (inside the declared ranges).
        input_names, output_names: names of the graph's inputs and outputs.
        inputs: each input's axes, ranges and multiples (see :class:`InputSpec`); inputs not listed here take
            their dynamic axes from ``dynamic_axes`` (unbounded) or are fixed at the example's shape.
        dynamic_axes: per input or output name, the names of the axes that may vary (``{"images": {0: "batch"}}``);
            filled in from ``inputs`` when those are declared.
        output_axes: per output name, its dynamic axes for deploy.yaml (a ragged ``{0: "boxes"}``); outputs named
            in neither this nor ``dynamic_axes`` get ``{0: "batch"}`` when an input's first axis varies.
        compare: how verification compares the artifact's outputs with eager ones: a comparator or a list of them
            (:mod:`oarkit.core.export.compare`: ragged rows, boxes matched by IoU, probabilities); outputs none of
            them reports are compared element-wise relative to their range, with equal shapes.
        quantized_compare: the comparators for int8 artifacts (int8 formats, and float formats carrying a QAT
            graph), when they must judge otherwise than ``compare`` (a detector: confident detections only, with
            bounds of their own); ``None``: ``compare``.
        spread_nudge: float artifacts are also held to how far eager's own outputs move when every float input
            moves by this much (standard normal noise times ``spread_nudge``) on the same batches, where that is
            more than an output's tolerance: outputs that select among near-ties (a detector's top-k and NMS, a
            DETR's query selection) move that far under any rounding difference, which an export cannot avoid;
            ``None``: off.
        export_options: per format name, the options this model exports with unless the caller gives them (a
            detector: ``{"onnx_int8": {"op_types": ["Conv"]}}``, so decoding and NMS stay float).
        deployed_wrapper: makes a deployed artifact (positional tensors in, a tuple out) callable as the task's
            ``validation_step`` calls the trained model (keyword inputs, named outputs), so verification scores the
            artifact with the task's own code; ``None``: the task calls models as the export wrapper is called.
        preprocessing: how raw inputs become ``example_inputs`` (resize, crop, mean, std, ...).
        postprocessing: parameters of the post-processing (top-k, thresholds, ...).
        labels: label names, index order.
    """

    module: nn.Module
    example_inputs: tuple[torch.Tensor, ...]
    input_names: list[str]
    output_names: list[str]
    inputs: list[InputSpec] = field(default_factory=list)
    dynamic_axes: dict[str, dict[int, str]] = field(default_factory=dict)
    output_axes: dict[str, dict[int, str]] = field(default_factory=dict)
    compare: OutputComparator | Sequence[OutputComparator] | None = None
    quantized_compare: OutputComparator | Sequence[OutputComparator] | None = None
    spread_nudge: float | None = None
    export_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    deployed_wrapper: Callable[[nn.Module], nn.Module] | None = None
    preprocessing: dict[str, Any] = field(default_factory=dict)
    postprocessing: dict[str, Any] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.spread_nudge is not None and not self.spread_nudge > 0:
            raise ConfigError(f"DeploySpec spread_nudge={self.spread_nudge} must be a positive input change (1e-6 for "
                              "a detector) or None for off")
        self.dynamic_axes = {name: dict(axes) for name, axes in self.dynamic_axes.items()}
        unknown = [s.name for s in self.inputs if s.name not in self.input_names]
        if unknown:
            raise ConfigError(f"DeploySpec declares inputs {unknown} that are not among input_names "
                              f"{self.input_names}")
        for spec in self.inputs:
            axes = {axis: d.name for axis, d in spec.dynamic().items()}
            given = {int(a): n for a, n in self.dynamic_axes.get(spec.name, {}).items()}
            if given and given != axes:
                raise ConfigError(f"input {spec.name!r}: dynamic_axes {given} disagree with its declared dims {axes}")
            self.dynamic_axes[spec.name] = axes

    def input_specs(self, examples: Sequence[torch.Tensor] | None = None) -> list[InputSpec]:
        """One resolved :class:`InputSpec` per input name, in order (``dynamic_axes`` entries converted).

        Args:
            examples: the tensors the shapes are read from (default: ``example_inputs``).

        Raises:
            ConfigError: an example does not fit its declaration, or one axis name has two different ranges.
        """
        examples = tuple(self.example_inputs if examples is None else examples)
        if len(examples) != len(self.input_names):
            raise ConfigError(f"DeploySpec has {len(self.input_names)} input names {self.input_names} and "
                              f"{len(examples)} example inputs")
        declared = {s.name: s for s in self.inputs}
        dims: dict[str, Dim] = {}
        specs = []
        for name, example in zip(self.input_names, examples):
            spec = declared.get(name)
            if spec is None:
                axes = {int(a): n for a, n in self.dynamic_axes.get(name, {}).items()}
                spec = InputSpec(name, [Dim(axes[a]) if a in axes else None for a in range(example.ndim)])
            spec = spec.resolved(example)
            for d in spec.dynamic().values():
                if dims.setdefault(d.name, d) != d:
                    raise ConfigError(f"the axis {d.name!r} is declared twice with different ranges: "
                                      f"{dims[d.name].describe()} and {d.describe()}")
            specs.append(spec)
        return specs

    def dims(self) -> dict[str, Dim]:
        """Every dynamic axis by name."""
        return {d.name: d for spec in self.input_specs() for d in spec.dynamic().values()}

    def output_dynamic_axes(self) -> dict[str, dict[int, str]]:
        """The dynamic axes of each output (see ``output_axes``)."""
        batch = any(0 in spec.dynamic() for spec in self.input_specs())
        out = {}
        for name in self.output_names:
            axes = self.output_axes.get(name, self.dynamic_axes.get(name))
            out[name] = {int(a): str(n) for a, n in axes.items()} if axes is not None else (
                {0: "batch"} if batch else {})
        return out
