"""The zoo support table: every registered model through build, forward, backward, export and parity.

``oarkit zoo-check 'clas/*' --write docs/model_zoo.md`` writes the table from what actually ran, one row a
model; ``--sample`` takes one model of every family (the test suite's sweep); ``--formats onnx,pt2,openvino,
executorch`` (or ``all``) exports each model to every format and verifies each artifact against eager PyTorch.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from oarkit.core.engine.checkpoint import atomic_write_text
from oarkit.core.registry import create_model, list_models, model_info

logger = logging.getLogger(__name__)

STEPS = ("build", "forward", "backward")


@dataclass
class ZooRow:
    """What one model did: ``ok``, ``fail`` or ``-`` (not reached) per step, then per export format ``pass``,
    ``fail`` (outside tolerance) or ``error``, with the worst relative error of its outputs."""

    name: str
    family: str = ""
    params_m: float | None = None
    build: str = "-"
    forward: str = "-"
    backward: str = "-"
    exports: dict[str, str] = field(default_factory=dict)
    max_rel: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    message: str = ""

    @property
    def ok(self) -> bool:
        return (self.build == "ok" and all(getattr(self, s) in ("ok", "-") for s in STEPS)
                and all(v == "pass" for v in self.exports.values()))


def sample_names(pattern: str = "clas/*") -> list[str]:
    """One model per family among the names matching ``pattern``: the first not tagged ``large``."""
    chosen: dict[str, str] = {}
    for name in list_models(pattern):
        card = model_info(name)
        current = chosen.get(card.family)
        if current is None or ("large" in model_info(current).tags and "large" not in card.tags):
            chosen[card.family] = name
    return sorted(chosen.values())


def _export_source(name: str) -> Any:
    """The export source of a registry name's task id (the owning kit's), with random weights."""
    from oarkit.core.errors import OarkitError
    from oarkit.core.kits import task_entry

    entry = task_entry(model_info(name).task)
    if entry.export_source is None:
        raise OarkitError(f"{name}: its task id {entry.task_id!r} declares no export source, so it cannot export")
    return entry.export_source(name, pretrained=False)


def check_model(name: str, *, formats: Sequence[str] = ("onnx",), workdir: str | Path | None = None) -> ZooRow:
    """Run one model through every step and export format; a failing step ends the row with its reason.

    Args:
        name: the registry name.
        formats: export formats to export and verify (``()``: build, forward and backward only).
        workdir: where the temporary export folders go.
    """
    tic = time.perf_counter()
    row = ZooRow(name=name)
    step = "build"
    try:
        card = model_info(name)
        row.family = card.family
        torch.manual_seed(0)
        model = create_model(name, num_classes=10)
        row.params_m = sum(p.numel() for p in model.parameters()) / 1e6
        row.build, step = "ok", "forward"
        x = torch.randn(2, *card.test_input_size)
        model.train()
        out = model(x)
        out = out[0] if isinstance(out, (tuple, list)) else out
        row.forward, step = "ok", "backward"
        out.float().pow(2).mean().backward()
        if not all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None):
            raise FloatingPointError("non-finite gradients")
        row.backward = "ok"
        del model, out
        if formats:
            step = "export"
            _export(row, card, formats, workdir)
    except Exception as err:  # a failing model is a row of the table
        if step in STEPS:
            setattr(row, step, "fail")
        row.message = f"{step}: {type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"
        logger.debug("%s failed at %s", name, step, exc_info=True)
    row.seconds = round(time.perf_counter() - tic, 1)
    results = [f"{s}={getattr(row, s)}" for s in STEPS] + [f"{k}={v}" for k, v in row.exports.items()]
    logger.info("%-40s %s %s", name, " ".join(results), row.message)
    return row


def _export(row: ZooRow, card: Any, formats: Sequence[str], workdir: str | Path | None) -> None:
    """Export with random weights to every format at the card's test input size, verified; fill the row."""
    from oarkit.core.export.pipeline import export

    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        report = export(_export_source(row.name), list(formats), output_dir=tmp, verify=True,
                        example_inputs=(torch.randn(1, *card.test_input_size),))
    messages = []
    for result in report.rows:
        row.exports[result.format] = result.status
        if result.max_rel is not None:
            row.max_rel[result.format] = result.max_rel
        if result.message:
            messages.append(f"{result.format}: {result.message.splitlines()[0][:160]}")
    row.message = "; ".join(messages)


def check_models(names: Sequence[str], *, formats: Sequence[str] = ("onnx",)) -> list[ZooRow]:
    """:func:`check_model` for each name, in order, with a progress bar."""
    from tqdm.auto import tqdm

    return [check_model(n, formats=formats) for n in tqdm(names, desc="zoo check", unit="model")]


def resolve_names(patterns: Sequence[str], *, sample: bool = False) -> list[str]:
    """Registry names matching any of ``patterns``; ``sample`` keeps one per family."""
    names: list[str] = []
    for pattern in patterns:
        found = sample_names(pattern) if sample else list_models(pattern)
        names += [n for n in found if n not in names]
    return names


def zoo_markdown(rows: Sequence[ZooRow], *, command: str) -> str:
    """The model-zoo page: a summary line and one row a model, a column per step and per export format."""
    import importlib.metadata as md

    formats = list(dict.fromkeys(f for r in rows for f in r.exports))
    passed = sum(r.ok for r in rows)
    exported = (f"exported with its registered head to {', '.join(f'`{f}`' for f in formats)} (dynamic batch) and "
                "each artifact run against eager PyTorch in eval mode on fresh random inputs; *max rel err* is the "
                "worst max |artifact - eager| / max |eager| over the formats (tolerance 1e-4), ") if formats else ""
    head = ["model", "family", "params (M)", *STEPS, *formats, "max rel err", "s", "note"]
    lines = [
        "# Model zoo support",
        "",
        f"Generated by `{command}` on {datetime.now(timezone.utc).date()} (torch {md.version('torch')}, "
        f"onnxruntime {md.version('onnxruntime')}). Do not edit by hand: rerun the command.",
        "",
        f"Each model is built with random weights, run forward and backward on its test input with a 10-class head "
        f"(train mode), {exported}as `oarkit export --verify` does.",
        "",
        f"**{passed} of {len(rows)} models pass every step.**",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in rows:
        params = f"{r.params_m:.2f}" if r.params_m is not None else "-"
        err = f"{max(r.max_rel.values()):.1e}" if r.max_rel else "-"
        note = r.message.replace("|", "/")[:160]
        cells = [f"`{r.name}`", r.family, params, *(getattr(r, s) for s in STEPS),
                 *(r.exports.get(f, "-") for f in formats), err, f"{r.seconds:.0f}", note]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_zoo_table(rows: Sequence[ZooRow], path: str | Path, *, command: str) -> Path:
    """Write :func:`zoo_markdown` to ``path`` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, zoo_markdown(rows, command=command))
    return path


__all__ = ["STEPS", "ZooRow", "check_model", "check_models", "resolve_names", "sample_names", "write_zoo_table",
           "zoo_markdown"]
