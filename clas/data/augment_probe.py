"""``hflip: auto`` / ``scale: auto`` / ``crop_pct: auto``: augmentations chosen from the training images.

An augmentation helps only when it keeps what the image shows: a mirrored face is still a face, a mirrored 3 is
not a 3; a crop of a third of a photograph still shows the flower, a crop of a third of a digit cuts its strokes
off. The probe asks a classifier that needs no training, the nearest class mean on raw pixels (cosine, two-fold:
the means of one half classify the other half), how much of what it knows about the originals it keeps on their
mirror images and on small crops of them. A transform that keeps less than :data:`KEEP` of that knowledge is
judged to change the label and is left out. Where the probe knows too little to tell (its accuracy barely above
chance, as on most photograph sets), the photographs' defaults stand.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from oarkit.core.data import decode_image
from oarkit.core.data.auto_size import AUTO

logger = logging.getLogger(__name__)

#: a transform is label-preserving when the probe keeps at least this share of its above-chance accuracy
KEEP = 0.75
#: the probe must beat chance by this much for its verdict to count
MIN_ABOVE_CHANCE = 0.15
#: photographs' settings (the probe cannot tell, or the transforms keep the label)
PHOTO_HFLIP, PHOTO_SCALE, PHOTO_CROP_PCT = 0.5, (0.35, 1.0), 0.875
#: settings for images whose object fills the frame (crops cut it) or whose mirror image is another class
FILLED_SCALE, FILLED_CROP_PCT = (0.85, 1.0), 1.0
#: the area of the probe's crops (the low end of the photographs' crop range) and how many it takes per image
PROBE_AREA, PROBE_CROPS = PHOTO_SCALE[0], 4


@dataclass(frozen=True)
class ProbeResult:
    """What the probe measured: accuracy on originals, mirrors and crops, and chance (the largest class)."""

    original: float
    mirrored: float
    cropped: float
    chance: float
    images: int

    @property
    def informative(self) -> bool:
        return self.original - self.chance >= MIN_ABOVE_CHANCE

    def kept(self, accuracy: float) -> float:
        """Share of the above-chance accuracy a transform keeps (1: all of it)."""
        return (accuracy - self.chance) / max(self.original - self.chance, 1e-9)

    @property
    def mirror_keeps_label(self) -> bool:
        return not self.informative or self.kept(self.mirrored) >= KEEP

    @property
    def crop_keeps_label(self) -> bool:
        return not self.informative or self.kept(self.cropped) >= KEEP


def _vector(image: np.ndarray, side: int) -> np.ndarray:
    small = cv2.resize(image, (side, side), interpolation=cv2.INTER_AREA).astype(np.float32).ravel()
    small -= small.mean()
    return small / max(float(np.linalg.norm(small)), 1e-6)


def _crop(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    h, w = image.shape[:2]
    ch, cw = max(1, round(h * PROBE_AREA**0.5)), max(1, round(w * PROBE_AREA**0.5))
    top, left = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
    return image[top:top + ch, left:left + cw]


def _nearest_mean_accuracy(train: np.ndarray, train_labels: np.ndarray, test: np.ndarray, labels: np.ndarray,
                           num_classes: int) -> float:
    means = np.zeros((num_classes, train.shape[1]), np.float32)
    np.add.at(means, train_labels, train)
    means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-6)
    return float((np.argmax(test @ means.T, axis=1) == labels).mean())


def probe(samples: Sequence[tuple[str, int]], *, per_class: int = 150, total: int = 3000, side: int = 24,
          seed: int = 0) -> ProbeResult:
    """Run the probe on at most ``per_class`` training images of each class and ``total`` in all (it decodes
    them before training starts; unreadable ones are skipped)."""
    rng = np.random.default_rng(seed)
    by_class: dict[int, list[str]] = {}
    for path, label in samples:
        by_class.setdefault(int(label), []).append(path)
    per_class = max(2, min(per_class, total // max(len(by_class), 1)))
    picked = [(p, c) for c, paths in by_class.items()
              for p in (paths if len(paths) <= per_class else rng.choice(paths, per_class, replace=False))]
    crops = [f"crop{k}" for k in range(PROBE_CROPS)]
    views: dict[str, list[np.ndarray]] = {"original": [], "mirrored": [], **{k: [] for k in crops}}
    labels = []
    for path, label in picked:
        image = decode_image(path)
        if image is None:
            continue
        views["original"].append(_vector(image, side))
        views["mirrored"].append(_vector(image[:, ::-1], side))
        for k in crops:
            views[k].append(_vector(_crop(image, rng), side))
        labels.append(label)
    y = np.asarray(labels)
    num_classes = int(y.max()) + 1 if len(y) else 1
    fold = rng.permutation(len(y)) % 2 == 0
    stacked = {name: np.stack(v) if v else np.zeros((0, side * side)) for name, v in views.items()}

    def accuracy(view: str) -> float:
        if len(y) < 4 or fold.all() or not fold.any():
            return 0.0
        x = stacked[view]
        a = _nearest_mean_accuracy(stacked["original"][fold], y[fold], x[~fold], y[~fold], num_classes)
        b = _nearest_mean_accuracy(stacked["original"][~fold], y[~fold], x[fold], y[fold], num_classes)
        return (a * (~fold).sum() + b * fold.sum()) / len(y)

    chance = float(np.bincount(y).max() / len(y)) if len(y) else 1.0
    cropped = float(np.mean([accuracy(k) for k in crops]))
    return ProbeResult(accuracy("original"), accuracy("mirrored"), cropped, chance, len(y))


def resolve(samples: Sequence[tuple[str, int]], *, hflip, scale, crop_pct, seed: int = 0) -> tuple:
    """The ``auto`` ones of ``hflip``, ``scale`` and ``crop_pct`` chosen by :func:`probe` (the others as given);
    each choice is logged with the figures behind it."""
    result = probe(samples, seed=seed)
    how = (f"a nearest-class-mean probe on {result.images} training images reads {result.original:.0%} of the "
           f"originals (chance {result.chance:.0%})")
    if not result.informative:
        how += ", too little to judge augmentations by: the photographs' settings"
    if hflip == AUTO:
        hflip = PHOTO_HFLIP if result.mirror_keeps_label else 0.0
        logger.info("data.hflip=auto -> %s: %s, %.0f%% of mirror images", hflip, how, 100 * result.mirrored)
    crop_keeps = result.crop_keeps_label
    if scale == AUTO or crop_pct == AUTO:
        logger.info("data.scale / crop_pct=auto -> %s / %s: %s, %.0f%% of crops of %.0f%% of the image",
                    list(PHOTO_SCALE if crop_keeps else FILLED_SCALE),
                    PHOTO_CROP_PCT if crop_keeps else FILLED_CROP_PCT, how, 100 * result.cropped, 100 * PROBE_AREA)
    if scale == AUTO:
        scale = PHOTO_SCALE if crop_keeps else FILLED_SCALE
    if crop_pct == AUTO:
        crop_pct = PHOTO_CROP_PCT if crop_keeps else FILLED_CROP_PCT
    return hflip, tuple(scale), crop_pct
