"""A tiny synthetic shapes set on disk (the demo's generator, 64x64), so the tests exercise the real loader."""

from __future__ import annotations

import os

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from oarkit.seg import prepare_shapes  # noqa: E402

DEMO = "seg/pp_liteseg_stdc1_shapes_256x256"


@pytest.fixture(scope="session")
def shapes_root(tmp_path_factory) -> Path:
    return prepare_shapes(tmp_path_factory.mktemp("shapes"), num_train=16, num_val=6, size=64)


@pytest.fixture
def tiny_overrides(shapes_root, tmp_path):
    """Overrides that turn the demo recipe into a seconds-long run on the tiny shapes set."""
    return [f"data.root={shapes_root}", f"output_dir={tmp_path / 'run'}", "trainer.max_iters=4",
            "data.batch_size=4", "data.crop_size=[64,64]", "data.val_resize=null", "trainer.progress=false",
            "trainer.tensorboard=false", "trainer.precision=fp32"]
