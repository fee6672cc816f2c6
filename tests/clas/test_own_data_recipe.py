"""The clas own-data recipe as a user runs it: only data.root set, the run length and input size follow the data."""

from __future__ import annotations

import logging

from oarkit.core.cli import main

RECIPE = "configs/clas/pp_lcnet_x1_0_own_data.yaml"


def test_the_recipe_needs_data_root(capsys):
    assert main(["train", "-c", RECIPE]) == 2
    assert "data.root is required" in capsys.readouterr().err


def test_the_recipe_fits_its_run_to_the_data_and_writes_best_and_last(shapes_root, tmp_path, caplog):
    # 36 training images (12 per class) at batch 8: 5 steps an epoch, so target_steps=10 is 2 epochs
    run = tmp_path / "run"
    with caplog.at_level(logging.INFO):
        assert main(["train", "-c", RECIPE, f"data.root={shapes_root}", f"output_dir={run}", "data.batch_size=8",
                     "trainer.target_steps=10", "trainer.progress=false", "trainer.tensorboard=false",
                     "task.model.name=clas/pp_lcnet_x0_25"]) == 0
    messages = caplog.text
    assert "image_size=auto: the training images' median shorter side is 32 px, so 32" in messages
    assert "pretrained=auto starts from scratch" in messages  # offline: one line, never a failure
    assert "downloading" not in messages
    rows = (run / "metrics.csv").read_text().splitlines()
    assert len(rows) == 1 + 2  # header and two epochs
    assert (run / "best").is_dir() and (run / "last").is_dir()
