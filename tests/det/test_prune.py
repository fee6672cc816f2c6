"""``prune=fpgm`` on a PP-YOLOE+ run: channels pruned to half the FLOPs (the class and DFL box outputs keep their
width), fine-tuned, the run reloaded by the Detector from its meta.json alone, exported and verified."""

from __future__ import annotations

import numpy as np
import pytest

from oarkit.core.cli import main

pytest.importorskip("torch_pruning")
DEMO = "det/ppyoloe_plus_crn_s_shapes_160x160"
TINY = ["data.batch_size=4", "data.size=[64,64]", "data.multi_scale=[]", "scheduler.warmup_iters=1",
        "trainer.progress=false", "trainer.tensorboard=false"]


def test_a_pruned_detector_trains_reloads_and_exports(det_shapes_root, tmp_path, check_pruned):
    float_run, pruned = tmp_path / "run", tmp_path / "pruned"
    assert main(["train", "-c", DEMO, f"data.root={det_shapes_root}", f"output_dir={float_run}", *TINY,
                 "trainer.max_iters=2", "trainer.eval_every_iters=2"]) == 0
    assert main(["train", "-c", DEMO, f"data.root={det_shapes_root}", f"output_dir={pruned}", *TINY,
                 "trainer.max_iters=1", "trainer.eval_every_iters=1", "prune=fpgm",
                 f"prune.checkpoint={float_run}"]) == 0
    check_pruned(pruned, float_run, data=det_shapes_root)
    from oarkit.det import Detector

    result = Detector(str(pruned))(np.zeros((64, 64, 3), dtype=np.uint8))
    assert result.boxes.shape[-1] == 4
