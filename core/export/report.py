"""The export table: one row per artifact (format, size, latency, max error, metric, delta, pass/fail)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from oarkit.core.engine.checkpoint import atomic_write_text


@dataclass
class ExportRow:
    """The outcome of one format.

    Attributes:
        format: the format name.
        status: ``pass`` (verified within tolerance), ``fail`` (verified, outside tolerance), ``error`` (the
            export or the verification raised), ``unverified`` (exported without ``verify``).
        folder: the export folder.
        size_bytes: the artifact's size on disk (with its weights file for OpenVINO).
        latency_ms: median batch-1 latency on its runtime.
        outputs: per output, ``max_abs`` and ``max_rel`` against eager; ``max_rel`` is the error its comparator
            reports (by default ``max |artifact - eager| / max |eager|``; see :mod:`~oarkit.core.export.compare`).
        max_rel: the worst ``max_rel`` over the outputs.
        tolerance: the format's tolerance on ``max_rel``.
        metric: the task's main metric of the artifact (with ``--data``).
        metric_delta: the artifact's metric minus the eager (float) model's.
        metric_tolerance: the largest drop accepted, in the metric's own units (the format's points scaled by
            the metric's full scale: 1 point is 1.0 of top-1 accuracy and 0.01 of COCO mAP).
        message: why it failed, and what to do.
        export_s: seconds spent exporting.
    """

    format: str
    status: str = "error"
    folder: str = ""
    size_bytes: int | None = None
    latency_ms: float | None = None
    outputs: dict[str, dict[str, float]] = field(default_factory=dict)
    max_rel: float | None = None
    tolerance: float | None = None
    metric: float | None = None
    metric_delta: float | None = None
    metric_tolerance: float | None = None
    message: str = ""
    export_s: float | None = None


@dataclass
class ExportReport:
    """All rows of one export, with the eager reference they were compared with."""

    source: str
    rows: list[ExportRow] = field(default_factory=list)
    main_indicator: str | None = None
    eager_metric: float | None = None
    eager_latency_ms: float | None = None
    eager_size_bytes: int | None = None
    data_root: str | None = None

    @property
    def ok(self) -> bool:
        """Whether every format passed (or was exported unverified)."""
        return all(r.status in ("pass", "unverified") for r in self.rows)

    def row(self, name: str) -> ExportRow:
        return next(r for r in self.rows if r.format == name)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def table(self) -> str:
        """The report as a Markdown table (eager PyTorch first)."""
        metric = self.main_indicator or "metric"
        head = ["format", "size", "latency b1", "max error (tol)", metric, "delta", "result"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines.append("| " + " | ".join([
            "torch eager", _size(self.eager_size_bytes), _ms(self.eager_latency_ms), "reference",
            _num(self.eager_metric), "", "reference"]) + " |")
        for r in self.rows:
            err = f"{r.max_rel:.2e} ({r.tolerance:.0e})" if r.max_rel is not None and r.tolerance else "-"
            delta = f"{r.metric_delta:+.3g}" if r.metric_delta is not None else "-"
            result = r.status if not r.message else f"{r.status}: {r.message.splitlines()[0][:160]}"
            lines.append("| " + " | ".join([r.format, _size(r.size_bytes), _ms(r.latency_ms), err, _num(r.metric),
                                            delta, result.replace("|", "/")]) + " |")
        return "\n".join(lines)

    def save(self, folder: str | Path) -> tuple[Path, Path]:
        """Write ``report.md`` and ``report.json`` into ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        md, js = folder / "report.md", folder / "report.json"
        atomic_write_text(md, f"# Export of {self.source}\n\n{self.table()}\n")
        atomic_write_text(js, json.dumps(self.to_dict(), indent=2, default=str) + "\n")
        return md, js


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f} ms"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"  # 4 digits: 93.21 (top-1 %), 0.7394 (mAP)
