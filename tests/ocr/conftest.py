"""Tiny rendered OCR sets on disk (the kit's own renderer), so the tests exercise the real loaders."""

from __future__ import annotations

from pathlib import Path

import pytest

from oarkit.ocr.render import write_det_set, write_rec_set


@pytest.fixture(scope="session")
def det_root(tmp_path_factory) -> Path:
    """4 training and 2 validation pages of 160x160 with 3 English lines each."""
    return write_det_set(tmp_path_factory.mktemp("ocr_det"), train=4, val=2, size=(160, 160), lines=3, seed=3)


@pytest.fixture(scope="session")
def rec_root(tmp_path_factory) -> Path:
    """8 training and 4 validation English lines."""
    return write_rec_set(tmp_path_factory.mktemp("ocr_rec"), train=8, val=4, language="en", seed=5)


@pytest.fixture
def quick(tmp_path) -> list[str]:
    """Overrides that turn a recipe into a one-step run on a tiny set."""
    return [f"output_dir={tmp_path / 'run'}", "trainer.max_iters=1", "trainer.max_epochs=null",
            "trainer.progress=false", "trainer.tensorboard=false", "trainer.precision=fp32", "data.num_workers=0",
            "task.model.pretrained=false", "scheduler.warmup_epochs=0"]
