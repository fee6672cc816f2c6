"""``prune=l1`` on a PP-OCRv4 mobile text detector run: channels pruned to half the FLOPs (the DB maps keep their
single channel), fine-tuned, reloaded from its meta.json alone, exported and verified."""

from __future__ import annotations

import pytest

from oarkit.core.cli import main

pytest.importorskip("torch_pruning")
RECIPE = "ocr/ppocrv4_det_mobile_ch_640"


def test_a_pruned_text_detector_trains_reloads_and_exports(det_root, quick, tmp_path, check_pruned):
    tiny = [f"data.root={det_root}", "data.crop_size=[128,128]", "data.batch_size=2", "data.limit_side_len=160"]
    float_run, pruned = tmp_path / "run", tmp_path / "pruned"
    assert main(["train", "-c", RECIPE, *quick, *tiny]) == 0
    assert main(["train", "-c", RECIPE, *quick, *tiny, f"output_dir={pruned}", "prune=l1",
                 f"prune.checkpoint={float_run}"]) == 0
    check_pruned(pruned, float_run, data=det_root)
