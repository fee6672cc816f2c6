"""The export pipeline: every requested format exported, described by deploy.yaml, verified, tabulated.

A format that fails is reported in the table with its reason; the others go on.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import json
import logging
import shutil
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oarkit.core.deploy.manifest import DEPLOY_FILE, DeployManifest, TensorInfo
from oarkit.core.deploy.model import DeployedModel
from oarkit.core.engine.deploy_spec import DeploySpec, Dim, InputSpec
from oarkit.core.errors import ConfigError, OarkitError
from oarkit.core.export.context import CalibrationBatches, ExportContext
from oarkit.core.export.formats import ExportFormat, get_format, metric_allowance, parse_formats
from oarkit.core.export.prepare import (
    batch_one_sizes,
    deploy_copy,
    random_inputs,
    shape_problems,
    traceable_inputs,
    verification_sizes,
)
from oarkit.core.export.report import ExportReport, ExportRow
from oarkit.core.export.source import ExportSource
from oarkit.core.export.verify import (
    compare_outputs,
    hold_to_own_spread,
    median_latency_ms,
    own_spread,
    task_metric,
)

logger = logging.getLogger(__name__)

VERSIONED = ("oarkit", "torch", "torchvision", "timm", "onnx", "onnxscript", "onnxruntime", "openvino", "executorch",
             "torchao")


def versions() -> dict[str, str]:
    """Versions of the packages that shape an artifact."""
    out = {}
    for dist in VERSIONED:
        with contextlib.suppress(md.PackageNotFoundError):
            out[dist] = md.version(dist)
    return out


def _folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file() and p.name != DEPLOY_FILE)


def _state_bytes(module: nn.Module) -> int:
    return sum(t.numel() * t.element_size() for t in module.state_dict().values())


def _input_infos(specs: Sequence[InputSpec]) -> list[TensorInfo]:
    """The graph's inputs for deploy.yaml: a dynamic axis by name, with its range and multiple."""
    return [TensorInfo(name=s.name, shape=[d.name if isinstance(d, Dim) else int(d) for d in s.dims],
                       dtype=str(s.dtype), ranges={d.name: d.to_dict() for d in s.dynamic().values()})
            for s in specs]


def _output_infos(names: Sequence[str], tensors: Sequence[torch.Tensor], dynamic: dict[str, dict[int, str]]
                  ) -> list[TensorInfo]:
    infos = []
    for name, t in zip(names, tensors):
        shape: list[int | str] = list(t.shape)
        for axis, label in dynamic.get(name, {}).items():
            shape[int(axis)] = label
        infos.append(TensorInfo(name=name, shape=shape, dtype=str(t.dtype).removeprefix("torch.")))
    return infos


class Exporter:
    """Exports one source to many formats; see :func:`export` for the arguments."""

    def __init__(self, source: ExportSource, *, output_dir: str | Path | None = None, verify: bool = True,
                 data_root: str | None = None, options: dict[str, dict[str, Any]] | None = None,
                 calibration_images: int = 256, batch_size: int = 32, metric_limit: int | None = None,
                 example_inputs: tuple[torch.Tensor, ...] | None = None) -> None:
        self.source = source
        self.output_dir = Path(output_dir) if output_dir else Path(source.output_dir)
        self.verify = verify
        self.data_root = data_root or source.data_root
        self.options = dict(options or {})
        self.calibration_images = int(calibration_images)
        self.batch_size = int(batch_size)
        self.metric_limit = metric_limit
        source.model.eval()  # not chained: a PT2E module's patched eval() returns None
        self.spec: DeploySpec = source.task.deploy_spec(source.model)
        self.batch_size = min(self.batch_size, largest_batch(self.spec))  # a detector's graph takes up to 16
        self.reference = self.spec.module
        self.reference.eval()
        if example_inputs is not None:  # e.g. a small size for a quick zoo check
            self.spec.example_inputs = tuple(example_inputs)
        self.deploy = deploy_copy(self.spec)
        self.inputs = traceable_inputs(self.deploy)
        self.prequantized: dict[str, Any] | None = getattr(self.spec.module, "oarkit_quantization", None)
        self._calibration: CalibrationBatches | None = None
        self._val_dataset: Any = None
        self._higher_is_better = True
        self._full_scale = 100.0

    # -------------------------------------------------------------- data
    def _dataset(self, split: str) -> Any:
        if self.source.dataset is None:
            return None
        if self.data_root and not Path(self.data_root).exists():
            raise ConfigError(f"the dataset {self.data_root} does not exist; pass --data ROOT")
        return self.source.dataset(self.data_root or "", split)

    def calibration(self) -> CalibrationBatches:
        """Up to ``calibration_images`` training inputs with the eval preprocessing, in batches (built once)."""
        if self._calibration is None:
            dataset = self._dataset(self.source.calibration_split)
            batches: CalibrationBatches = []
            if dataset is not None and len(dataset):
                g = torch.Generator().manual_seed(0)
                count = min(self.calibration_images, len(dataset))
                order = torch.randperm(len(dataset), generator=g)[:count].tolist()
                for start in range(0, count, self.batch_size):
                    samples = [dataset[i] for i in order[start:start + self.batch_size]]
                    batches.append(self.graph_inputs(samples))
            self._calibration = batches
        return self._calibration

    def graph_inputs(self, samples: list[Any]) -> tuple[torch.Tensor, ...]:
        """The graph's inputs in a batch of dataset samples (the task's collate, then its ``export_inputs``)."""
        inputs = tuple(self.source.task.export_inputs(self.source.task.collate(samples)))
        if len(inputs) != len(self.spec.input_names):
            raise OarkitError(f"{type(self.source.task).__name__}.export_inputs(batch) gives {len(inputs)} tensors "
                              f"for the {len(self.spec.input_names)} graph inputs {self.spec.input_names}; make it "
                              "return one tensor per input name, in order")
        return inputs

    def val_dataset(self) -> Any:
        if self._val_dataset is None:
            self._val_dataset = self._dataset(self.source.validation_split)
        return self._val_dataset

    # -------------------------------------------------------------- the run
    def run(self, formats: str | Sequence[str], *, quantize: str | None = None) -> ExportReport:
        """Export every format of ``formats`` (``"onnx,pt2"``, ``"all"``) and, when asked, verify each."""
        names = parse_formats(formats, quantize=quantize)
        for name in self.options:
            get_format(name)  # an option block for an unknown format is a typo
        self.output_dir.mkdir(parents=True, exist_ok=True)
        report = ExportReport(source=self.source.origin, data_root=self.data_root,
                              eager_size_bytes=_state_bytes(self.reference))
        if self.verify:
            report.eager_latency_ms = median_latency_ms(self.reference, self.inputs_b1())
            dataset = self.val_dataset()
            if dataset is not None:
                baseline = self.source.baseline or self.source.model
                metric = self.source.task.build_metric()
                indicator = metric.main_indicator
                report.main_indicator = indicator
                self._higher_is_better = metric.higher_is_better
                self._full_scale = float(metric.full_scale)
                report.eager_metric = float(task_metric(self.source.task, baseline, dataset,
                                                        batch_size=self.batch_size, limit=self.metric_limit)[indicator])
        done: dict[str, Path] = {}
        for name in names:
            fmt = get_format(name)
            row = self.export_one(fmt, done, report)
            report.rows.append(row)
            logger.info("%-16s %s%s", name, row.status, f": {row.message.splitlines()[0]}" if row.message else "")
        report.save(self.output_dir)
        return report

    def inputs_b1(self) -> tuple[torch.Tensor, ...]:
        """Random inputs of the traced shapes at a batch of one (what latency is measured on)."""
        return random_inputs(self.deploy, batch_one_sizes(self.deploy, self.inputs), seed=1)

    def verification_inputs(self) -> list[tuple[torch.Tensor, ...]]:
        """Random inputs the export never saw, drawn inside the declared ranges: every dynamic axis at its
        smallest admitted size, then at sizes drawn among the admitted ones."""
        return [random_inputs(self.deploy, verification_sizes(self.deploy, self.inputs, seed=seed,
                                                              smallest=smallest), seed=seed)
                for seed, smallest in ((11, True), (12, False))]

    def folder_name(self, fmt: ExportFormat) -> str:
        return f"{fmt.name}_int8" if self.prequantized and not fmt.quantized else fmt.name

    def export_one(self, fmt: ExportFormat, done: dict[str, Path], report: ExportReport) -> ExportRow:
        folder = self.output_dir / self.folder_name(fmt)
        tolerance, metric_points = fmt.tolerances(int8_graph=bool(self.prequantized))
        row = ExportRow(format=self.folder_name(fmt), folder=str(folder), tolerance=tolerance,
                        metric_tolerance=metric_allowance(metric_points, self._full_scale))
        tic = time.perf_counter()
        try:
            if fmt.after is not None and fmt.after not in done:
                raise OarkitError(f"it is built from the {fmt.after!r} artifact, which failed (see its row)")
            if fmt.quantized and self.prequantized:
                raise ConfigError("the model is already int8 (quantization-aware training); export its float "
                                  "formats instead, which carry the int8 graph")
            fmt.check_dependencies()
            # the model's own choices (a detector's int8 op types) first, then the caller's
            options = fmt.resolve_options({**self.spec.export_options.get(fmt.name, {}),
                                           **self.options.get(fmt.name, {})})
            manifest = self._write(fmt, folder, options, done)
            done[fmt.name] = folder
            row.size_bytes = _folder_size(folder)
            row.export_s = round(time.perf_counter() - tic, 2)
            if not self.verify:
                row.status = "unverified"
                return row
            self._verify(fmt, folder, manifest, row, report)
        except Exception as err:  # a failing format is a row of the table; the others go on
            logger.debug("export to %s failed", fmt.name, exc_info=True)
            row.status, row.message = "error", f"{type(err).__name__}: {err}"
            row.export_s = row.export_s or round(time.perf_counter() - tic, 2)
        return row

    def _write(self, fmt: ExportFormat, folder: Path, options: dict[str, Any], done: dict[str, Path]
               ) -> DeployManifest:
        """Export into a hidden sibling folder, write deploy.yaml, then swap it in by rename."""
        tmp = folder.with_name(f".{folder.name}.tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        manifest = self._manifest(fmt, options)
        ctx = ExportContext(spec=self.deploy, inputs=self.inputs, folder=tmp, options=options,
                            calibration=self.calibration, artifacts=dict(done),
                            metadata={"oarkit.deploy": json.dumps(manifest.to_dict(), default=str),
                                      "oarkit.task": manifest.task, "oarkit.model": str(manifest.model),
                                      "oarkit.labels": json.dumps(manifest.labels)})
        manifest.artifact = fmt.exporter(ctx)
        manifest.max_batch = options.get("max_batch")  # an exporter may have had to lower it
        manifest.quantization = ctx.quantization or self.prequantized
        manifest.write(tmp)
        if folder.exists():
            shutil.rmtree(folder)
        tmp.rename(folder)
        return manifest

    def _manifest(self, fmt: ExportFormat, options: dict[str, Any]) -> DeployManifest:
        meta = self.source.meta
        with torch.no_grad():
            outputs = self.reference(*self.inputs)
        outputs = tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)
        return DeployManifest(
            format=fmt.name, artifact=fmt.artifact, runtime=fmt.runtime, task=self.source.task.task_id,
            model=(meta.get("model") or {}).get("name") or getattr(self.source.model, "oarkit_name", None),
            inputs=_input_infos(self.deploy.input_specs()),
            outputs=_output_infos(self.spec.output_names, outputs, self.deploy.output_dynamic_axes()),
            preprocessing=dict(self.spec.preprocessing), postprocessing=dict(self.spec.postprocessing),
            labels=list(self.spec.labels),
            source={"origin": self.source.origin, "metrics": meta.get("metrics", {}), "epoch": meta.get("epoch"),
                    "options": options},
            runtime_options=dict(fmt.runtime_options), max_batch=options.get("max_batch"), versions=versions(),
            created=datetime.now(timezone.utc).isoformat(timespec="seconds"))

    def _verify(self, fmt: ExportFormat, folder: Path, manifest: DeployManifest, row: ExportRow,
                report: ExportReport) -> None:
        deployed = DeployedModel(folder)
        batches = self.verification_inputs()
        dataset = self.val_dataset()
        if dataset is not None and len(dataset):
            real = self.graph_inputs([dataset[i] for i in range(min(len(dataset), self.batch_size))])
            misfit = shape_problems(self.deploy, real)
            if misfit:  # the task's own inference brings such inputs to the graph's shapes; the metric covers them
                logger.info("outputs are compared on random inputs only: the data's batch does not fit the graph "
                            "(%s)", "; ".join(misfit))
            else:
                batches.append(real)
        int8 = fmt.quantized or bool(self.prequantized)
        compare = self.spec.quantized_compare if int8 and self.spec.quantized_compare is not None \
            else self.spec.compare
        errors = compare_outputs(self.reference, deployed, batches, self.spec.output_names, compare)
        if self.spec.spread_nudge is not None and not int8:
            spread = own_spread(self.reference, batches, self.spec.output_names, compare, self.spec.spread_nudge)
            hold_to_own_spread(errors, spread, row.tolerance, self.spec.spread_nudge)
        row.outputs = {name: {"max_abs": e.max_abs, "max_rel": e.error,
                              **({"tolerance": e.tolerance} if e.tolerance is not None else {})}
                       for name, e in errors.items()}
        row.max_rel = max((e.error for e in errors.values()), default=0.0)
        row.latency_ms = median_latency_ms(deployed, self.inputs_b1())
        problems = [f"output {name!r} differs by {e.error:.3g} (tolerance "
                    f"{row.tolerance if e.tolerance is None else e.tolerance:g}{'; ' + e.note if e.note else ''})"
                    for name, e in errors.items() if not e.within(row.tolerance)]  # NaN fails too
        if dataset is not None and report.main_indicator is not None:
            scored = self.spec.deployed_wrapper(deployed) if self.spec.deployed_wrapper else deployed
            value = task_metric(self.source.task, scored, dataset, batch_size=self.batch_size,
                                limit=self.metric_limit)[report.main_indicator]
            row.metric = float(value)
            row.metric_delta = row.metric - float(report.eager_metric)
            loss = -row.metric_delta if self._higher_is_better else row.metric_delta
            if loss > row.metric_tolerance:
                problems.append(f"{report.main_indicator} {'drops' if self._higher_is_better else 'rises'} by "
                                f"{loss:.3g} (tolerance {row.metric_tolerance:.3g}, "
                                f"{100 * row.metric_tolerance / self._full_scale:g} points of {self._full_scale:g})")
        row.status = "fail" if problems else "pass"
        row.message = "; ".join(problems)
        manifest.verification = {"status": row.status, "outputs": row.outputs, "tolerance": row.tolerance,
                                 "latency_ms": row.latency_ms, "metric": row.metric, "metric_delta": row.metric_delta,
                                 "main_indicator": report.main_indicator, "data_root": self.data_root}
        manifest.write(folder)


def largest_batch(spec: DeploySpec) -> int:
    """The largest batch every input of ``spec`` takes (its axis 0: a :class:`Dim`'s max, or a fixed size);
    a large number when unbounded."""
    largest = 1 << 30
    for item in spec.inputs or ():
        first = item.dims[0] if len(item.dims) else None
        if isinstance(first, Dim) and first.max is not None:
            largest = min(largest, int(first.max))
        elif isinstance(first, int):
            largest = min(largest, first)
    return largest


def export(source: ExportSource, formats: str | Sequence[str] = "onnx", *, quantize: str | None = None,
           output_dir: str | Path | None = None, verify: bool = True, data_root: str | None = None,
           options: dict[str, dict[str, Any]] | None = None, calibration_images: int = 256, batch_size: int = 32,
           metric_limit: int | None = None, example_inputs: tuple[torch.Tensor, ...] | None = None) -> ExportReport:
    """Export ``source`` to ``formats``, write a deploy.yaml beside each artifact, and verify each one.

    Args:
        source: the kit's :class:`~oarkit.core.export.source.ExportSource`.
        formats: ``"onnx,pt2,openvino,executorch"``, ``"all"``, or a list of names (see ``list_formats()``).
        quantize: ``"int8"`` adds the int8 variant of every requested format.
        output_dir: where the format folders go (default: ``<run>/export``).
        verify: run every artifact against eager PyTorch on fresh random inputs (and the data's samples and
            task metric when a dataset is known).
        data_root: the dataset for calibration and the metric (default: the one the run was trained on).
        options: per-format options, ``{"onnx": {"opset": 18}, "executorch": {"max_batch": 8}}``.
        calibration_images: training images int8 calibration reads.
        batch_size: batch size of calibration and metric passes.
        metric_limit: evaluate the metric on at most this many samples (None: the whole split).
        example_inputs: trace with these instead of the spec's example inputs (another input size).

    Returns:
        The :class:`ExportReport`; it is also saved as ``report.md`` and ``report.json`` in the output folder.
    """
    exporter = Exporter(source, output_dir=output_dir, verify=verify, data_root=data_root, options=options,
                        calibration_images=calibration_images, batch_size=batch_size, metric_limit=metric_limit,
                        example_inputs=example_inputs)
    return exporter.run(formats, quantize=quantize)
