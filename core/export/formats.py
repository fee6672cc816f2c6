"""The export-format registry: each format by name, with its options, optional dependency and tolerance.

A format is data (ultralytics keeps its export table the same way): the pipeline looks a name up, checks the
options against the declared ones, imports what the format needs, and calls its exporter. Registries in oarkit
hold model variants and export formats only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from oarkit.core.deploy.optional import require
from oarkit.core.errors import ConfigError, UnknownNameError, did_you_mean

if TYPE_CHECKING:
    from oarkit.core.export.context import ExportContext

Exporter = Callable[["ExportContext"], str]

INT8_ATOL_REL = 0.5  # of the output range, on random inputs the calibration never saw; the metric decides
INT8_METRIC_TOLERANCE = 1.0  # points: hundredths of the main metric's full scale (see metric_allowance)


def metric_allowance(points: float, full_scale: float = 100.0) -> float:
    """A tolerance in points as a change of the metric itself: ``points`` hundredths of its ``full_scale``.

    One point is 1.0 of a percentage (top-1 accuracy, F1) and 0.01 of a fraction (COCO mAP, mIoU), so one
    tolerance means the same for every kit (:attr:`Metric.full_scale <oarkit.core.engine.metric.Metric.full_scale>`).
    """
    if not full_scale > 0:
        raise ConfigError(f"a metric's full_scale must be positive (100 for a percentage, 1 for a fraction), "
                          f"got {full_scale!r}")
    return float(points) * float(full_scale) / 100.0


@dataclass(frozen=True)
class ExportFormat:
    """One export format.

    Attributes:
        name: the format name (``onnx``, ``onnx_int8``, ...); also the folder the artifact goes to.
        artifact: the artifact's file name.
        runtime: the runtime that executes it (a key of :data:`oarkit.core.deploy.RUNTIMES`).
        exporter: writes the artifact into ``ctx.folder``; returns its file name.
        description: one line for listings.
        requires: import names the exporter and the runtime need (checked before exporting).
        options: the options the format accepts, with their defaults.
        after: a format whose artifact this one is built from (exported first when missing).
        quantized: whether the artifact holds int8 weights and activations (needs calibration images).
        atol_rel: the output tolerance, as max |artifact - eager| over max |eager| per output.
        metric_tolerance: the largest accepted drop of the task's main metric against eager, in points
            (hundredths of the metric's full scale, :func:`metric_allowance`).
        runtime_options: settings the artifact's runtime is opened with (written into deploy.yaml).
    """

    name: str
    artifact: str
    runtime: str
    exporter: Exporter
    description: str = ""
    requires: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    after: str | None = None
    quantized: bool = False
    atol_rel: float = 1e-4
    metric_tolerance: float = 0.2
    runtime_options: dict[str, Any] = field(default_factory=dict)

    def tolerances(self, *, int8_graph: bool = False) -> tuple[float, float]:
        """``(atol_rel, metric_tolerance)``; a float format carrying an int8 graph gets the int8 tolerances."""
        if int8_graph and not self.quantized:
            return max(self.atol_rel, INT8_ATOL_REL), max(self.metric_tolerance, INT8_METRIC_TOLERANCE)
        return self.atol_rel, self.metric_tolerance

    def check_dependencies(self) -> None:
        """Import every package the format needs; a missing one raises with the ``pip install`` hint."""
        for module in self.requires:
            require(module, purpose=f"the {self.name!r} export format")

    def resolve_options(self, given: dict[str, Any]) -> dict[str, Any]:
        """The declared defaults updated with ``given``; an undeclared option raises with the closest name."""
        for key in given:
            if key not in self.options:
                raise ConfigError(f"export format {self.name!r} has no option {key!r}."
                                  f"{did_you_mean(key, self.options)} Options: "
                                  f"{', '.join(f'{k}={v!r}' for k, v in self.options.items()) or 'none'}.")
        return {**self.options, **given}


_FORMATS: dict[str, ExportFormat] = {}


def register_format(fmt: ExportFormat) -> ExportFormat:
    """Add a format to the registry; a duplicate name is an error."""
    if fmt.name in _FORMATS:
        raise ConfigError(f"export format {fmt.name!r} is already registered")
    if fmt.after is not None and fmt.after not in _FORMATS:
        raise ConfigError(f"export format {fmt.name!r} builds on {fmt.after!r}, which is not registered yet")
    _FORMATS[fmt.name] = fmt
    return fmt


def _ensure_registered() -> None:
    import oarkit.core.export.exporters  # noqa: F401  (registers the built-in formats)


def list_formats(*, quantized: bool | None = None) -> list[str]:
    """Registered format names in registration order; ``quantized`` filters float or int8 ones."""
    _ensure_registered()
    return [n for n, f in _FORMATS.items() if quantized is None or f.quantized == quantized]


def get_format(name: str) -> ExportFormat:
    """The format called ``name``.

    Raises:
        UnknownNameError: no such format; the message lists the closest names.
    """
    _ensure_registered()
    if name not in _FORMATS:
        raise UnknownNameError(f"unknown export format {name!r}.{did_you_mean(name, _FORMATS)} "
                               f"Formats: {', '.join(_FORMATS)} (or 'all').")
    return _FORMATS[name]


def parse_formats(spec: str | Iterable[str], *, quantize: str | None = None) -> list[str]:
    """Format names from ``"onnx,pt2"``, ``"all"`` or a list, with int8 variants added for ``quantize="int8"``.

    Formats another one is built from come first; each name appears once.
    """
    _ensure_registered()
    if quantize not in (None, "", "none", "int8"):
        raise ConfigError(f"quantize={quantize!r} is not supported; use 'int8' (or leave it out)")
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    if not names:
        raise ConfigError(f"no export format given; choose from {', '.join(list_formats())} or 'all'")
    wanted: list[str] = []
    for name in names:
        wanted += list_formats(quantized=False) if name == "all" else [get_format(name).name]
    if quantize == "int8":
        wanted += [f.name for f in _FORMATS.values() if f.quantized and f.name.removesuffix("_int8") in wanted]
    ordered: list[str] = []

    def add(name: str) -> None:
        fmt = _FORMATS[name]
        if fmt.after is not None:
            add(fmt.after)
        if name not in ordered:
            ordered.append(name)

    for name in wanted:
        add(name)
    return ordered
