"""Real held-out sets for the OCR own-data recipes, built from handwriting and photographs that registry packages ship.

Nothing here is drawn by our code: every glyph is one of scikit-learn's handwritten digits (8x8 scans of 43
people's writing, UCI), upscaled with cubic interpolation and set side by side with small random gaps and vertical
jitter; the detection pages are crops of scikit-image's sample photographs. Splits are held out by source, as in
``bench/own_data_sets.py``: sklearn's first 1,437 digits train, the last 360 (other writers) validate, and train and
validation pages crop different photographs (its ``TRAIN_PHOTOS`` / ``VAL_PHOTOS``).

Sets (``python bench/own_data_ocr_sets.py --out data/own``):

- ``ocr_rec_digits``  PaddleOCR recognition lists (``path<TAB>label``): lines of 3-8 handwritten digits, dark ink
                      on light paper, 32-48 px high; the label is the digit string          (train 3000 / val 500)
- ``ocr_det_digits``  PaddleOCR detection labels (``path<TAB>[{"transcription", "points"}]``): 1-4 such lines
                      per 320x320 photograph crop, non-overlapping, 16-40 px high, quads around the ink
                      (dark ink on light ground, light ink on dark ground)       (train 400 / val 100)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_data_sets import TRAIN_PHOTOS, VAL_PHOTOS, _background, _digits, _skimage_data, _write  # noqa: E402

#: set -> (recipe, extra overrides, the validation metric of metrics.csv without ``val_``)
RUNS_OCR = {
    "ocr_rec_digits": ("configs/ocr/ppocrv4_rec_mobile_own_data.yaml", [], "acc"),
    "ocr_det_digits": ("configs/ocr/ppocrv4_det_mobile_own_data.yaml", [], "hmean"),
}
DIGIT_SPLIT = {"train": slice(0, 1437), "val": slice(1437, None)}
REC_COUNTS = {"train": 3000, "val": 500}
DET_COUNTS = {"train": 400, "val": 100}


def digit_line(digits: np.ndarray, labels: np.ndarray, height: int, rng: np.random.Generator,
               length: tuple[int, int] = (3, 8)) -> tuple[np.ndarray, str]:
    """One line of handwritten digits as ink opacity in [0, 1] (``height`` rows) and its digit string."""
    count = int(rng.integers(length[0], length[1] + 1))
    picks = rng.integers(len(digits), size=count)
    glyph_h = max(8, int(round(height * rng.uniform(0.7, 0.85))))
    margin = max(1, height // 10)
    glyphs, gaps, shifts = [], [], []
    for i in picks:
        width = max(6, int(round(glyph_h * rng.uniform(0.6, 0.85))))  # the scans fill their square: narrow them
        glyphs.append(np.clip(cv2.resize(digits[i].astype(np.float32), (width, glyph_h),
                                         interpolation=cv2.INTER_CUBIC), 0, 1))
        gaps.append(int(rng.integers(0, max(2, height // 6))))
        shifts.append(int(rng.integers(-(height - glyph_h) // 3, (height - glyph_h) // 3 + 1)))
    line = np.zeros((height, 2 * margin + sum(g.shape[1] for g in glyphs) + sum(gaps)), np.float32)
    x = margin
    for glyph, gap, shift in zip(glyphs, gaps, shifts):
        y = (height - glyph_h) // 2 + shift
        line[y:y + glyph_h, x:x + glyph.shape[1]] = np.maximum(line[y:y + glyph_h, x:x + glyph.shape[1]], glyph)
        x += glyph.shape[1] + gap
    return np.clip(line * 1.3, 0, 1), "".join(str(int(labels[i])) for i in picks)


def _rec_image(alpha: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Dark ink on light paper with a little sensor noise, grey uint8."""
    paper, ink = rng.uniform(190, 255), rng.uniform(0, 80)
    image = paper - alpha * (paper - ink) + rng.normal(0, 4, alpha.shape)
    return np.clip(image, 0, 255).astype(np.uint8)


def write_rec(root: Path, split: str, digits: np.ndarray, labels: np.ndarray, count: int,
              rng: np.random.Generator) -> None:
    """``root/<split>/*.png`` and ``root/<split>.txt``."""
    rows = []
    for index in range(count):
        alpha, text = digit_line(digits, labels, int(rng.integers(32, 49)), rng)
        name = f"{split}/{index:05d}.png"
        _write(root / name, _rec_image(alpha, rng))
        rows.append(f"{name}\t{text}")
    (root / f"{split}.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")


def _free(occupied: list[tuple[int, int, int, int]], w: int, h: int, size: int,
          rng: np.random.Generator) -> tuple[int, int] | None:
    """A spot for a ``w`` x ``h`` box inside the page that keeps 4 px clear of every occupied box."""
    if w > size or h > size:
        return None
    for _ in range(50):
        x, y = int(rng.integers(0, size - w + 1)), int(rng.integers(0, size - h + 1))
        if all(x + w + 4 <= a or a + c + 4 <= x or y + h + 4 <= b or b + d + 4 <= y for a, b, c, d in occupied):
            occupied.append((x, y, w, h))
            return x, y
    return None


def _colour(canvas: np.ndarray, x: int, y: int, w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Dark ink where the ground is light, light ink where it is dark (75 levels off it or more)."""
    local = float(canvas[y:y + h, x:x + w].mean())
    return rng.uniform(0, 50, 3) if local >= 130 else rng.uniform(205, 255, 3)


def det_page(digits: np.ndarray, labels: np.ndarray, photos: list[np.ndarray], size: int,
             rng: np.random.Generator) -> tuple[np.ndarray, list[dict]]:
    """A photograph crop with 1-4 digit lines and their PaddleOCR regions (quads around the ink)."""
    canvas = _background(photos, size, rng)
    occupied: list[tuple[int, int, int, int]] = []
    regions = []
    for _ in range(int(rng.integers(1, 5))):
        alpha, text = digit_line(digits, labels, int(rng.integers(16, 41)), rng)
        h, w = alpha.shape
        spot = _free(occupied, w, h, size, rng)
        if spot is None:
            continue
        x, y = spot
        colour = _colour(canvas, x, y, w, h, rng)
        a = alpha[..., None]
        canvas[y:y + h, x:x + w] = a * colour + (1 - a) * canvas[y:y + h, x:x + w]
        ys, xs = np.nonzero(alpha > 0.3)
        x1, y1, x2, y2 = x + int(xs.min()), y + int(ys.min()), x + int(xs.max()) + 1, y + int(ys.max()) + 1
        regions.append({"transcription": text, "points": [[x1, y1], [x2, y1], [x2, y2], [x1, y2]]})
    return canvas.astype(np.uint8), regions


def write_det(root: Path, split: str, digits: np.ndarray, labels: np.ndarray, photos: list[np.ndarray], count: int,
              rng: np.random.Generator, size: int = 320) -> None:
    """``root/<split>/*.jpg`` and ``root/<split>.txt`` in PaddleOCR's detection label format."""
    rows = []
    for index in range(count):
        image, regions = det_page(digits, labels, photos, size, rng)
        name = f"{split}/{index:05d}.jpg"
        _write(root / name, image)
        rows.append(f"{name}\t{json.dumps(regions)}")
    (root / f"{split}.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")


def build_ocr(out: str | os.PathLike, seed: int = 0) -> Path:
    """Write ``ocr_rec_digits`` and ``ocr_det_digits`` under ``out`` (see the module docstring); returns ``out``."""
    out = Path(out)
    rng = np.random.default_rng(seed)
    digits, labels = _digits()
    photos = {"train": [_skimage_data(n) for n in TRAIN_PHOTOS], "val": [_skimage_data(n) for n in VAL_PHOTOS]}
    for split, part in DIGIT_SPLIT.items():
        write_rec(out / "ocr_rec_digits", split, digits[part], labels[part], REC_COUNTS[split], rng)
        write_det(out / "ocr_det_digits", split, digits[part], labels[part], photos[split], DET_COUNTS[split], rng)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="data/own", help="the folder to write the sets into")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"wrote the OCR sets to {build_ocr(args.out, args.seed)}")


if __name__ == "__main__":
    main()
