"""``prune=l1`` on a PP-LiteSeg run: channels pruned to half the FLOPs, fine-tuned, the run reloaded by the
Segmenter from its meta.json alone, exported and verified."""

from __future__ import annotations

import numpy as np
import pytest

from oarkit.core.cli import main

pytest.importorskip("torch_pruning")
DEMO = "seg/pp_liteseg_stdc1_shapes_256x256"


def test_a_pruned_segmenter_trains_reloads_and_exports(shapes_root, tiny_overrides, tmp_path, check_pruned):
    float_run, pruned = tmp_path / "run", tmp_path / "pruned"
    assert main(["train", "-c", DEMO, *tiny_overrides]) == 0
    assert main(["train", "-c", DEMO, *tiny_overrides, f"output_dir={pruned}", "trainer.max_iters=2",
                 "prune=l1", f"prune.checkpoint={float_run}"]) == 0
    check_pruned(pruned, float_run, data=shapes_root)
    from oarkit.seg import Segmenter

    mask = Segmenter(str(pruned))(np.zeros((64, 64, 3), dtype=np.uint8)).label_map
    assert mask.shape == (64, 64)
