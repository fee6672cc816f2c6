"""The OCR own-data recipes as a user runs them: only data.root set; the run length and det crop follow the data."""

from __future__ import annotations

import logging

import pytest

from oarkit.core.cli import main

DET = "configs/ocr/ppocrv4_det_mobile_own_data.yaml"
REC = "configs/ocr/ppocrv4_rec_mobile_own_data.yaml"
FAST = ["trainer.progress=false", "trainer.tensorboard=false", "task.model.pretrained=false"]


@pytest.mark.parametrize("recipe", [DET, REC])
def test_the_recipe_needs_data_root(recipe, capsys):
    assert main(["train", "-c", recipe]) == 2
    assert "data.root is required" in capsys.readouterr().err


def test_the_det_recipe_fits_crop_and_run_to_the_data(det_root, tmp_path, caplog):
    # 4 training pages of 160x160 at batch 2: 2 steps an epoch, so target_steps=4 is 2 epochs (one evaluation)
    run = tmp_path / "run"
    with caplog.at_level(logging.INFO):
        assert main(["train", "-c", DET, f"data.root={det_root}", f"output_dir={run}", "data.batch_size=2",
                     "data.num_workers=0", "trainer.target_steps=4", *FAST]) == 0
    assert "data.crop_size=auto: the training images' median shorter side is 160 px, so 160" in caplog.text
    assert "trainer.target_steps=4: 2 optimizer steps per epoch, so 2 epochs" in caplog.text
    header, *rows = (run / "metrics.csv").read_text().splitlines()
    assert "val_hmean" in header.split(",") and rows
    assert (run / "best" / "model.safetensors").is_file() and (run / "last" / "model.safetensors").is_file()


def test_the_rec_recipe_fits_its_run_to_the_data(rec_root, tmp_path, caplog):
    # 8 training lines at batch 4: 2 steps an epoch, so target_steps=4 is 2 epochs
    run = tmp_path / "run"
    with caplog.at_level(logging.INFO):
        assert main(["train", "-c", REC, f"data.root={rec_root}", f"output_dir={run}", "data.batch_size=4",
                     "data.num_workers=0", "data.multi_scale_widths=[]", "data.width=160", "trainer.target_steps=4",
                     *FAST]) == 0
    assert "trainer.target_steps=4: 2 optimizer steps per epoch, so 2 epochs" in caplog.text
    header, *rows = (run / "metrics.csv").read_text().splitlines()
    assert "val_acc" in header.split(",") and len(rows) == 2
    assert (run / "best" / "model.safetensors").is_file() and (run / "last" / "model.safetensors").is_file()
