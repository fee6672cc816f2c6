"""Every det recipe composes, builds its task and data, and runs one training step on the tiny synthetic set."""

from __future__ import annotations

import pytest
import torch

from oarkit.core.config import instantiate, load_config, packaged_configs
from oarkit.core.engine.evaluation import build_loader

DET_CONFIGS = [name for name in packaged_configs() if name.startswith("det/")]
#: recipes of models too large for one step in make test on two cores (25-45 s each): make test-slow runs them
LARGE = ("ppyoloe_plus_crn_m", "ppyoloe_plus_crn_l", "ppyoloe_plus_crn_x", "picodet_l", "rtdetr")


def test_the_recipes_are_there():
    names = {n.split("/", 1)[1] for n in DET_CONFIGS}
    assert {"ppyoloe_plus_crn_s_80e_coco", "picodet_s_320_coco_lcnet", "ppyoloe_plus_crn_s_shapes_160x160"} <= names


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n.split("/")[1].startswith(LARGE) else n
                                  for n in DET_CONFIGS])
def test_every_det_recipe_runs_one_training_step(name, det_shapes_root, tmp_path):
    # RT-DETR's encoder picks 300 queries among its anchors: 160x160 has 525, 64x64 too few
    size = 160 if "rtdetr" in name else 64
    cfg = load_config(name, [f"data.root={det_shapes_root}", f"output_dir={tmp_path}", f"data.size=[{size},{size}]",
                             "data.multi_scale=[]", "data.batch_size=2", "data.num_workers=0"])
    task, data = instantiate(cfg.task), instantiate(cfg.data)
    model = task.setup(data)
    assert task.labels == ["circle", "square", "triangle", "cross"]
    images, targets = next(iter(build_loader(data.train_dataset(), data, task, train=True, batch_size=2)))
    model.train()
    losses = task.training_step(model, (images, targets))
    losses["loss"].backward()
    assert torch.isfinite(losses["loss"])
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
