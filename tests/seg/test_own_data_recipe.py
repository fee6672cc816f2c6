"""The seg own-data recipe as a user runs it: only data.root set, the run length and input size follow the data."""

from __future__ import annotations

import logging

from oarkit.core.cli import main

RECIPE = "configs/seg/pp_mobileseg_tiny_own_data.yaml"


def test_the_recipe_needs_data_root(capsys):
    assert main(["train", "-c", RECIPE]) == 2
    assert "data.root is required" in capsys.readouterr().err


def test_the_recipe_fits_its_run_to_the_data_and_writes_best_and_last(shapes_root, tmp_path, caplog):
    # 16 training images at batch 8: 2 steps an epoch, so target_steps=4 is 2 epochs
    run = tmp_path / "run"
    with caplog.at_level(logging.INFO):
        assert main(["train", "-c", RECIPE, f"data.root={shapes_root}", f"output_dir={run}", "data.batch_size=8",
                     "trainer.target_steps=4", "trainer.progress=false", "trainer.tensorboard=false"]) == 0
    assert "data.crop_size=auto: the training images' median shorter side is 64 px, so 128" in caplog.text
    assert "pretrained=auto starts from scratch" in caplog.text  # offline: one line, never a failure
    assert "downloading" not in caplog.text
    rows = (run / "metrics.csv").read_text().splitlines()
    assert len(rows) == 1 + 2  # header and two epochs
    assert (run / "best").is_dir() and (run / "last").is_dir()
    # the recipe trains channels-last; its checkpoint is saved contiguous and predicts as any other
    import numpy as np

    from oarkit.seg import Segmenter

    assert Segmenter(str(run))(np.zeros((48, 64, 3), np.uint8)).label_map.shape == (48, 64)


def test_channels_last_keeps_the_weights_in_that_order(shapes_root):
    import torch

    from oarkit.seg import SegmentationData, SegmentationTask

    data = SegmentationData(root=str(shapes_root), num_classes=4, crop_size=[64, 64], batch_size=2)
    model = SegmentationTask("seg/pp_liteseg_stdc1", channels_last=True).setup(data)
    convs = [m.weight for m in model.modules() if isinstance(m, torch.nn.Conv2d) and m.weight.shape[-1] > 1]
    assert convs and all(w.is_contiguous(memory_format=torch.channels_last) for w in convs)
    plain = SegmentationTask("seg/pp_liteseg_stdc1").setup(data)
    assert next(m.weight for m in plain.modules() if isinstance(m, torch.nn.Conv2d)).is_contiguous()
