"""The own-data recipes on real held-out data, beside classical baselines fitted in seconds on the same split.

Builds the sets of ``bench/own_data_sets.py`` (real digits, faces and photographs shipped by scikit-learn and
scikit-image), trains each kit's own-data recipe on them with only ``data.root`` (and ``data.num_classes``)
changed and ``trainer.time_limit`` set, and fits scikit-learn's logistic regression and RBF SVM on the raw
pixels of the classification sets (the same files, the same split). Writes ``bench/results/own_data.md``.

    python bench/own_data.py --minutes 15                  # every set
    python bench/own_data.py --minutes 5 --only clas_lfw   # one
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_data_nlp_sets import RUNS_NLP, baseline_nlp, build_nlp  # noqa: E402
from own_data_ocr_sets import RUNS_OCR, build_ocr  # noqa: E402
from own_data_sets import build  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUNS = {  # set -> (recipe, extra overrides, the metric reported)
    "clas_digits": ("configs/clas/pp_lcnet_x1_0_own_data.yaml", [], "top1"),
    "clas_lfw": ("configs/clas/pp_lcnet_x1_0_own_data.yaml", [], "top1"),
    "det_digits": ("configs/det/ppyoloe_plus_crn_s_own_data.yaml", [], "map50"),
    "det_faces": ("configs/det/ppyoloe_plus_crn_s_own_data.yaml", [], "map50"),
    "seg_digits": ("configs/seg/pp_mobileseg_tiny_own_data.yaml", [], "miou"),
    "seg_faces": ("configs/seg/pp_mobileseg_tiny_own_data.yaml", [], "miou"),
    **RUNS_OCR,
    **RUNS_NLP,
}


def _pixels(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    from PIL import Image

    classes = sorted(p.name for p in folder.iterdir() if p.is_dir())
    xs, ys = [], []
    for label, name in enumerate(classes):
        for path in sorted((folder / name).iterdir()):
            xs.append(np.asarray(Image.open(path).convert("L").resize((16, 16)), np.float32).ravel() / 255)
            ys.append(label)
    return np.stack(xs), np.array(ys)


def baselines(root: Path) -> dict[str, float]:
    """Top-1 (%) of logistic regression and an RBF SVM on raw 16x16 pixels (standardised), fitted on train."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    xt, yt = _pixels(root / "train")
    xv, yv = _pixels(root / "val")
    scores = {}
    for name, model in (("logreg", LogisticRegression(max_iter=2000)), ("svm_rbf", SVC())):
        started = time.perf_counter()
        fitted = make_pipeline(StandardScaler(), model).fit(xt, yt)
        scores[name] = 100 * float((fitted.predict(xv) == yv).mean())
        scores[f"{name}_s"] = time.perf_counter() - started
    return scores


def best_metric(run: Path, key: str) -> float | None:
    """The best validation ``key`` of a run, from its ``metrics.csv``."""
    import csv

    path = run / "metrics.csv"
    if not path.exists():
        return None
    with open(path) as f:
        values = [float(r[f"val_{key}"]) for r in csv.DictReader(f) if r.get(f"val_{key}")]
    return max(values) if values else None


def train(name: str, minutes: float, data: Path, out: Path) -> dict:
    recipe, extra, key = RUNS[name]
    run = out / name
    cmd = [sys.executable, "tools/train.py", "-c", recipe, f"data.root={data / name}", f"output_dir={run}",
           f"trainer.time_limit={minutes}", "trainer.progress=false", *extra]
    env = {**os.environ, "NO_ALBUMENTATIONS_UPDATE": "1", "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    with open(out / f"{name}.log", "w") as log:
        code = subprocess.call(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    return {"set": name, "recipe": recipe, "metric": key, "value": best_metric(run, key), "exit": code,
            "minutes": (time.perf_counter() - started) / 60}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=15.0, help="trainer.time_limit of each run")
    parser.add_argument("--only", nargs="*", default=list(RUNS), choices=list(RUNS))
    parser.add_argument("--data", default="data/own")
    parser.add_argument("--out", default="runs/own_data_bench")
    args = parser.parse_args()
    data, out = ROOT / args.data, ROOT / args.out
    build(data)
    build_ocr(data)
    if any(name.startswith("nlp_") for name in args.only):
        build_nlp(data)  # Debian's fortunes: apt-get install fortunes
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.only:
        row = train(name, args.minutes, data, out)
        if name.startswith("clas_"):
            row.update(baselines(data / name))
        elif name.startswith("nlp_"):
            row.update(baseline_nlp(data / name))
        rows.append(row)
        print(json.dumps(row))
    (out / "results.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
