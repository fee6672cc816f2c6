"""Real-data sets for validating the own-data recipes, built from data that registry packages ship.

Nothing here is drawn by our code: the objects are scikit-learn's handwritten digits (scans of 43 people's
writing, UCI) and scikit-image's LFW subset (100 face and 100 non-face photograph crops), the backgrounds are
crops of scikit-image's sample photographs. Detection and segmentation sets paste the real objects onto the
real backgrounds, as the issue's own trial did with product photographs. Every split is held out by source:

- digits: sklearn's first 1,437 digits train, the last 360 (other writers) validate;
- LFW: the first 70 faces and 70 non-faces train, the other 30 + 30 validate;
- backgrounds: train canvases crop one set of photographs, validation canvases another.

Sets (``python bench/own_data_sets.py --out data/own``):

- ``clas_digits``  ImageFolder, 10 classes, 32x32 grey                     (train 1437 / val 360)
- ``clas_lfw``     ImageFolder, face / nonface, 50x50 grey                 (train 140 / val 60)
- ``det_digits``   COCO, 10 classes, 2-5 digits of 22-44 px per 160x160 photo canvas, ink of a random colour
- ``det_faces``    COCO, 1 class, faces among non-face distractor crops on 160x160 photo canvases
- ``seg_digits``   PaddleSeg list layout, background + 10 digit classes on 192x192 photo canvases: every
                   digit's ink colour is random, so the classes differ by shape alone
- ``seg_faces``    PaddleSeg list layout, background + face: face crops among non-face crops (the same squares,
                   other content) on 192x192 photo canvases
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import cv2
import numpy as np

TRAIN_PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "motorcycle_left", "grass", "brick", "ihc",
                "hubble_deep_field", "retina")
VAL_PHOTOS = ("camera", "coins", "gravel", "moon", "page", "text", "cell", "color", "logo", "motorcycle_right")


def _skimage_data(name: str) -> np.ndarray:
    """One of scikit-image's shipped sample photographs as RGB uint8."""
    import skimage
    from PIL import Image

    folder = Path(skimage.__file__).parent / "data"
    path = next(p for p in folder.iterdir() if p.stem == name)
    return np.asarray(Image.open(path).convert("RGB"))


def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.images / 16.0, d.target


def _lfw() -> np.ndarray:
    import skimage

    return np.load(Path(skimage.__file__).parent / "data" / "lfw_subset.npy")  # 100 faces, then 100 non-faces


def _write(path: Path, image: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), image[..., ::-1] if image.ndim == 3 else image)


def _background(photos: list[np.ndarray], size: int, rng: np.random.Generator) -> np.ndarray:
    photo = photos[rng.integers(len(photos))]
    h, w = photo.shape[:2]
    side = int(rng.integers(min(h, w) // 3, min(h, w)))
    y, x = rng.integers(0, h - side + 1), rng.integers(0, w - side + 1)
    crop = cv2.resize(photo[y:y + side, x:x + side], (size, size), interpolation=cv2.INTER_AREA)
    return np.clip(crop.astype(np.float32) * rng.uniform(0.7, 1.3), 0, 255)


def _place(occupied: list[tuple[int, int, int, int]], side: int, size: int,
           rng: np.random.Generator) -> tuple[int, int] | None:
    for _ in range(50):
        x, y = int(rng.integers(0, size - side + 1)), int(rng.integers(0, size - side + 1))
        if all(x + side <= a or a + c <= x or y + side <= b or b + d <= y for a, b, c, d in occupied):
            occupied.append((x, y, side, side))
            return x, y
    return None


def _ink(canvas: np.ndarray, x: int, y: int, side: int, rng: np.random.Generator) -> np.ndarray:
    """A random colour whose brightness stands at least 80 levels off the local background's."""
    local = canvas[y:y + side, x:x + side].reshape(-1, 3).mean(0)
    for _ in range(20):
        colour = rng.uniform(0, 255, 3)
        if abs(colour.mean() - local.mean()) >= 80:
            return colour
    return 255.0 - local


def _canvases(objects: np.ndarray, labels: np.ndarray, photos: list[np.ndarray], *, count: int, size: int,
              per_image: tuple[int, int], sides: tuple[int, int], rng: np.random.Generator,
              distractors: np.ndarray | None = None, colour: bool = True):
    """Yield (image, [(box, label)], mask) with objects pasted as alpha mattes (ink) or as photo patches."""
    for _ in range(count):
        canvas = _background(photos, size, rng)
        mask = np.zeros((size, size), np.uint8)
        occupied: list[tuple[int, int, int, int]] = []
        boxes = []
        n = int(rng.integers(per_image[0], per_image[1] + 1))
        extra = int(rng.integers(1, 4)) if distractors is not None else 0
        for k in range(n + extra):
            is_object = k < n
            pool = objects if is_object else distractors
            i = int(rng.integers(len(pool)))
            side = int(rng.integers(sides[0], sides[1] + 1))
            spot = _place(occupied, side, size, rng)
            if spot is None:
                continue
            x, y = spot
            patch = cv2.resize(pool[i].astype(np.float32), (side, side), interpolation=cv2.INTER_CUBIC)
            if colour:  # a digit: its grey levels are the ink's opacity
                alpha = np.clip(patch * 1.3, 0, 1)[..., None]
                canvas[y:y + side, x:x + side] = (alpha * _ink(canvas, x, y, side, rng)
                                                  + (1 - alpha) * canvas[y:y + side, x:x + side])
                ink = alpha[..., 0] > 0.3
            else:  # a photograph crop, pasted whole
                canvas[y:y + side, x:x + side] = np.clip(patch * 255, 0, 255)[..., None]
                ink = np.ones((side, side), bool)
            if not is_object:
                continue
            ys, xs = np.nonzero(ink)
            if len(xs) == 0:
                continue
            mask[y:y + side, x:x + side][ink] = int(labels[i]) + 1
            boxes.append(([x + int(xs.min()), y + int(ys.min()), x + int(xs.max()) + 1, y + int(ys.max()) + 1],
                          int(labels[i])))
        yield canvas.astype(np.uint8), boxes, mask


def _coco(root: Path, split: str, samples, classes: list[str]) -> None:
    data = {"images": [], "annotations": [], "categories": [{"id": i, "name": c} for i, c in enumerate(classes)]}
    for index, (image, boxes, _) in enumerate(samples):
        name = f"{index:05d}.jpg"
        _write(root / split / name, image)
        data["images"].append({"id": index, "file_name": name, "height": image.shape[0], "width": image.shape[1]})
        for (x1, y1, x2, y2), label in boxes:
            data["annotations"].append({"id": len(data["annotations"]) + 1, "image_id": index, "category_id": label,
                                        "bbox": [x1, y1, x2 - x1, y2 - y1], "area": (x2 - x1) * (y2 - y1),
                                        "iscrowd": 0})
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    (root / "annotations" / f"instances_{split}.json").write_text(json.dumps(data))


def _imagefolder(root: Path, split: str, images: np.ndarray, labels: np.ndarray, names: list[str],
                 size: int) -> None:
    for index, (image, label) in enumerate(zip(images, labels)):
        grey = cv2.resize((image * 255).astype(np.float32), (size, size), interpolation=cv2.INTER_CUBIC)
        _write(root / split / names[int(label)] / f"{index:04d}.png", np.clip(grey, 0, 255).astype(np.uint8))


def _seg_list(root: Path, split: str, samples, classes: list[str]) -> None:
    lines = []
    for index, (image, _, mask) in enumerate(samples):
        _write(root / "images" / split / f"{index:05d}.jpg", image)
        _write(root / "labels" / split / f"{index:05d}.png", mask)
        lines.append(f"images/{split}/{index:05d}.jpg labels/{split}/{index:05d}.png")
    (root / f"{split}.txt").write_text("\n".join(lines) + "\n")
    (root / "labels.txt").write_text("\n".join(classes) + "\n")


def build(out: str | os.PathLike, seed: int = 0) -> Path:
    """Write every set under ``out`` (see the module docstring); returns ``out``."""
    out = Path(out)
    rng = np.random.default_rng(seed)
    digits, digit_labels = _digits()
    lfw = _lfw()
    faces, nonfaces = lfw[:100], lfw[100:]
    split_photos = {"train": [_skimage_data(n) for n in TRAIN_PHOTOS], "val": [_skimage_data(n) for n in VAL_PHOTOS]}
    digit_split = {"train": slice(0, 1437), "val": slice(1437, None)}
    names = [str(i) for i in range(10)]
    for split, part in digit_split.items():
        _imagefolder(out / "clas_digits", split, digits[part], digit_labels[part], names, 32)
    lfw_split = {"train": (faces[:70], nonfaces[:70]), "val": (faces[70:], nonfaces[70:])}
    for split, (f, n) in lfw_split.items():
        images = np.concatenate([f, n])
        labels = np.array([0] * len(f) + [1] * len(n))
        _imagefolder(out / "clas_lfw", split, images, labels, ["face", "nonface"], 50)
    counts = {"train": 600, "val": 150}
    for split, part in digit_split.items():
        samples = _canvases(digits[part], digit_labels[part], split_photos[split], count=counts[split], size=160,
                            per_image=(2, 5), sides=(22, 44), rng=rng)
        _coco(out / "det_digits", split, samples, names)
    for split, (f, n) in lfw_split.items():
        samples = _canvases(f, np.zeros(len(f), int), split_photos[split], count=counts[split], size=160,
                            per_image=(1, 3), sides=(28, 56), rng=rng, distractors=n, colour=False)
        _coco(out / "det_faces", split, samples, ["face"])
    seg_counts = {"train": 400, "val": 100}
    for split, part in digit_split.items():
        samples = _canvases(digits[part], digit_labels[part], split_photos[split], count=seg_counts[split],
                            size=192, per_image=(2, 5), sides=(40, 72), rng=rng)
        _seg_list(out / "seg_digits", split, samples, ["background"] + [f"digit_{i}" for i in range(10)])
    for split, (f, n) in lfw_split.items():
        samples = _canvases(f, np.zeros(len(f), int), split_photos[split], count=seg_counts[split], size=192,
                            per_image=(1, 3), sides=(36, 72), rng=rng, distractors=n, colour=False)
        _seg_list(out / "seg_faces", split, samples, ["background", "face"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="data/own", help="the folder to write the sets into")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"wrote the sets to {build(args.out, args.seed)}")


if __name__ == "__main__":
    main()
