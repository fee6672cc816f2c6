"""A real held-out text set for the NLP own-data recipe, built from Debian's ``fortunes`` package, and its baselines.

``nlp_fortunes`` is topic classification over human-written quotations, jokes and epigrams: the label is the
fortune file an entry comes from (``/usr/share/games/fortunes/<category>``, entries separated by lines holding
``%``). Entries longer than 400 characters are dropped (MiniLM's 128 tokens hold the rest), texts that occur twice
(within or across categories) are dropped, each class is capped at 300 entries (seeded draw) and 20 % of every
class is held out for dev.tsv (seeded). About 1,800 entries in 8 classes: computers, drugs, education, food, law,
literature, politics, science.

    apt-get install fortunes
    python bench/own_data_nlp_sets.py --out data/own            # writes data/own/nlp_fortunes/{train,dev}.tsv
    python tools/train.py -c configs/nlp/minilm_l6_text_cls_own_data.yaml data.root=data/own/nlp_fortunes

``baseline_nlp`` fits scikit-learn's TF-IDF + logistic regression and TF-IDF + linear SVM on the same files.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections import Counter
from pathlib import Path

FORTUNES = Path("/usr/share/games/fortunes")
CATEGORIES = ("computers", "drugs", "education", "food", "law", "literature", "politics", "science")
MAX_CHARS = 400
PER_CLASS = 300
DEV_FRACTION = 0.2
#: set -> (recipe, extra overrides, the validation metric of metrics.csv without ``val_``)
RUNS_NLP = {"nlp_fortunes": ("configs/nlp/minilm_l6_text_cls_own_data.yaml", [], "accuracy")}


def fortunes(category: str, folder: Path = FORTUNES) -> list[str]:
    """The entries of one fortune file, each flattened to one line (tabs and newlines become spaces)."""
    path = folder / category
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: install Debian's fortunes package (apt-get install fortunes)")
    text = path.read_bytes().decode("utf-8", errors="replace")
    return [" ".join(e.split()) for e in re.split(r"(?m)^%\s*$", text) if e.strip()]


def _write(path: Path, rows: list[tuple[str, str]]) -> None:
    path.write_text("text\tlabel\n" + "".join(f"{t}\t{label}\n" for t, label in rows), encoding="utf-8")


def build_nlp(out: Path, seed: int = 0, folder: Path = FORTUNES) -> Path:
    """Write ``out/nlp_fortunes/{train,dev}.tsv`` and ``labels.txt``; returns the set's folder.

    Raises:
        FileNotFoundError: the fortunes package is not installed (the message says how to install it).
    """
    entries = {c: [e for e in fortunes(c, folder) if len(e) <= MAX_CHARS] for c in CATEGORIES}
    counts = Counter(e for es in entries.values() for e in es)
    rng = random.Random(seed)
    train, dev = [], []
    for category, texts in entries.items():
        unique = sorted({e for e in texts if counts[e] == 1})
        rng.shuffle(unique)
        unique = unique[:PER_CLASS]
        held = round(DEV_FRACTION * len(unique))
        dev += [(t, category) for t in unique[:held]]
        train += [(t, category) for t in unique[held:]]
    rng.shuffle(train)
    root = Path(out) / "nlp_fortunes"
    root.mkdir(parents=True, exist_ok=True)
    _write(root / "train.tsv", train)
    _write(root / "dev.tsv", dev)
    (root / "labels.txt").write_text("\n".join(CATEGORIES) + "\n")
    return root


def _read(path: Path) -> tuple[list[str], list[str]]:
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    return [r[0] for r in rows], [r[1] for r in rows]


def baseline_nlp(root: Path) -> dict[str, float]:
    """Dev accuracy (%) and fit seconds of TF-IDF (word 1-2 grams, sublinear tf) + logistic regression and
    + a linear SVM, fitted on ``root/train.tsv``."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import LinearSVC

    xt, yt = _read(Path(root) / "train.tsv")
    xv, yv = _read(Path(root) / "dev.tsv")
    scores: dict[str, float] = {}
    for name, model in (("tfidf_logreg", LogisticRegression(max_iter=2000, C=10.0)), ("tfidf_linsvm", LinearSVC())):
        started = time.perf_counter()
        fitted = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1), model).fit(xt, yt)
        scores[f"{name}_s"] = time.perf_counter() - started
        scores[name] = 100 * sum(p == y for p, y in zip(fitted.predict(xv), yv)) / len(yv)
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="data/own")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    root = build_nlp(Path(args.out), args.seed)
    sizes = {split: len((root / f"{split}.tsv").read_text().splitlines()) - 1 for split in ("train", "dev")}
    print(json.dumps({"root": str(root), **sizes, **baseline_nlp(root)}))


if __name__ == "__main__":
    main()
