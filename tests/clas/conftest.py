"""A tiny image-folder dataset (three colours of shapes) written to disk, so tests exercise the real loader."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

CLASSES = ("circle", "square", "triangle")


def draw(kind: str, rng: np.random.Generator, size: int = 32) -> np.ndarray:
    image = np.full((size, size, 3), rng.integers(0, 60), np.uint8)
    c, r = size // 2 + rng.integers(-3, 4), size // 4 + rng.integers(0, 3)
    color = tuple(int(v) for v in rng.integers(150, 256, 3))
    if kind == "circle":
        cv2.circle(image, (int(c), int(c)), int(r), color, -1)
    elif kind == "square":
        cv2.rectangle(image, (int(c - r), int(c - r)), (int(c + r), int(c + r)), color, -1)
    else:
        pts = np.array([[c, c - r], [c - r, c + r], [c + r, c + r]], np.int32)
        cv2.fillPoly(image, [pts], color)
    return image


def write_imagefolder(root: Path, train: int = 12, val: int = 4, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    for split, n in (("train", train), ("val", val)):
        for kind in CLASSES:
            folder = root / split / kind
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(n):
                cv2.imwrite(str(folder / f"{i:03d}.png"), cv2.cvtColor(draw(kind, rng), cv2.COLOR_RGB2BGR))
    return root


@pytest.fixture(scope="session")
def shapes_root(tmp_path_factory) -> Path:
    return write_imagefolder(tmp_path_factory.mktemp("shapes"))


@pytest.fixture
def tiny_overrides(shapes_root, tmp_path):
    """Overrides that turn the demo recipe into a seconds-long run on the shapes set."""
    return [f"data.root={shapes_root}", f"output_dir={tmp_path / 'run'}", "task.model.name=clas/pp_lcnet_x0_25",
            "trainer.max_epochs=2", "data.batch_size=8", "trainer.progress=false", "trainer.tensorboard=false",
            "trainer.deterministic=true"]
