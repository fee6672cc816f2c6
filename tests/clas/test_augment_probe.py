"""``hflip`` / ``scale`` / ``crop_pct: auto``: flips and crops chosen from what the training images show."""

from __future__ import annotations

import logging
from pathlib import Path

import cv2
import numpy as np
import pytest

from oarkit.clas import ClassificationData
from oarkit.clas.data import augment_probe
from oarkit.core.errors import ConfigError


def _arrow(direction: str, rng: np.random.Generator, size: int = 32) -> np.ndarray:
    """A filled arrow across the whole image: a mirrored left arrow is a right arrow, a corner crop misses it."""
    image = np.full((size, size, 3), int(rng.integers(0, 40)), np.uint8)
    tip, tail = (2, size - 3) if direction == "left" else (size - 3, 2)
    mid = size // 2 + int(rng.integers(-2, 3))
    head = tip + (10 if direction == "left" else -10)
    colour = tuple(int(v) for v in rng.integers(160, 256, 3))
    cv2.fillPoly(image, [np.array([[tip, mid], [head, mid - 12], [head, mid + 12]], np.int32)], colour)
    cv2.rectangle(image, (min(head, tail), mid - 3), (max(head, tail), mid + 3), colour, -1)
    return image


def _colour(name: str, rng: np.random.Generator, size: int = 32) -> np.ndarray:
    """An evenly coloured textured image: a mirror or a crop of a red image is red."""
    base = {"red": (200, 40, 40), "green": (40, 200, 40), "blue": (40, 40, 200)}[name]
    noise = rng.integers(-40, 41, (size, size, 3))
    return np.clip(np.asarray(base) + noise, 0, 255).astype(np.uint8)


def _write(root: Path, classes: dict[str, object], n: int = 40, seed: int = 0) -> list[tuple[str, int]]:
    rng = np.random.default_rng(seed)
    samples = []
    for split in ("train", "val"):
        for index, (name, draw) in enumerate(classes.items()):
            folder = root / split / name
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(n if split == "train" else 4):
                path = folder / f"{i:03d}.png"
                cv2.imwrite(str(path), cv2.cvtColor(draw(rng), cv2.COLOR_RGB2BGR))
                if split == "train":
                    samples.append((str(path), index))
    return samples


@pytest.fixture(scope="module")
def arrows(tmp_path_factory):
    root = tmp_path_factory.mktemp("arrows")
    return root, _write(root, {"left": lambda r: _arrow("left", r), "right": lambda r: _arrow("right", r)})


@pytest.fixture(scope="module")
def colours(tmp_path_factory):
    root = tmp_path_factory.mktemp("colours")
    return root, _write(root, {c: (lambda r, c=c: _colour(c, r)) for c in ("red", "green", "blue")})


def test_a_mirror_that_swaps_the_classes_turns_flips_off(arrows, caplog):
    _, samples = arrows
    result = augment_probe.probe(samples)
    assert result.original > 0.95 and result.mirrored < 0.1  # every mirrored arrow reads as the other class
    with caplog.at_level(logging.INFO):
        hflip, scale, crop_pct = augment_probe.resolve(samples, hflip="auto", scale="auto", crop_pct="auto")
    assert hflip == 0.0
    assert (scale, crop_pct) == (augment_probe.FILLED_SCALE, augment_probe.FILLED_CROP_PCT)
    assert "data.hflip=auto -> 0.0" in caplog.text and "mirror images" in caplog.text


def test_classes_that_mirrors_and_crops_keep_get_the_photographs_settings(colours):
    _, samples = colours
    result = augment_probe.probe(samples)
    assert result.informative and result.kept(result.mirrored) > 0.95 and result.kept(result.cropped) > 0.95
    assert augment_probe.resolve(samples, hflip="auto", scale="auto", crop_pct="auto") == (
        augment_probe.PHOTO_HFLIP, augment_probe.PHOTO_SCALE, augment_probe.PHOTO_CROP_PCT)


def test_a_probe_that_knows_too_little_leaves_the_photographs_settings(tmp_path):
    rng = np.random.default_rng(1)
    noise = {f"c{k}": (lambda r: r.integers(0, 256, (32, 32, 3)).astype(np.uint8)) for k in range(4)}
    samples = _write(tmp_path, noise, n=30)
    result = augment_probe.probe(samples, seed=int(rng.integers(100)))
    assert not result.informative
    assert augment_probe.resolve(samples, hflip="auto", scale="auto", crop_pct="auto") == (
        augment_probe.PHOTO_HFLIP, augment_probe.PHOTO_SCALE, augment_probe.PHOTO_CROP_PCT)


def test_numbers_given_are_kept_and_only_the_auto_ones_are_chosen(arrows):
    _, samples = arrows
    assert augment_probe.resolve(samples, hflip=0.3, scale="auto", crop_pct=0.9) == (
        0.3, augment_probe.FILLED_SCALE, 0.9)


def test_the_data_module_builds_its_training_transform_from_the_probe(arrows):
    root, _ = arrows
    data = ClassificationData(root=str(root), image_size=32, hflip="auto", scale="auto", crop_pct="auto")
    data.train_dataset()
    assert data.hflip == 0.0 and data.scale == augment_probe.FILLED_SCALE
    assert data.preprocess_spec()["resize_short"] == 32  # crop_pct 1.0: no border cut off at evaluation


def test_a_word_other_than_auto_is_refused_by_name(arrows):
    root, _ = arrows
    with pytest.raises(ConfigError, match="data.hflip='yes' must be a number, auto or left out"):
        ClassificationData(root=str(root), hflip="yes")
