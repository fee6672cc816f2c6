"""The recipes that mirror PaddleClas's published ImageNet configs: each composes, names its model, input size and
epochs as PaddleClas does, builds its model and takes one training step on the tiny shapes set (32 px, batch 2)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch

from oarkit.core.config import build_trainer, load_config, packaged_configs
from oarkit.core.registry import model_info

RECIPES = sorted(n for n in packaged_configs() if n.startswith("clas/") and "_imagenet_" in n)
# the ported families (the registry's family names) and the models PaddleClas users train most
FAMILIES = {"pp_lcnet", "pp_lcnetv2", "pp_hgnet", "pp_hgnetv2", "resnet_vd", "mobilenet_v3"}
NAME = re.compile(r"^clas/(?P<model>.+)_imagenet_(?P<size>\d+)_(?P<epochs>\d+)e$")


def test_every_ported_family_has_a_paddleclas_recipe():
    models = [load_config(name).task.model.name for name in RECIPES]
    assert {model_info(m).family for m in models} >= FAMILIES
    assert {"clas/mobilenetv3_small_x1_0", "clas/mobilenetv3_large_x1_0"} <= set(models)


@pytest.mark.parametrize("name", RECIPES)
def test_recipe_builds_its_model_and_trains_one_step(name: str, shapes_root: Path, tmp_path: Path):
    cfg = load_config(name, [f"data.root={shapes_root}", "data.format=imagefolder", "data.image_size=32",
                             "data.batch_size=2", "data.num_workers=0", f"output_dir={tmp_path / 'run'}",
                             "trainer.precision=fp32", "trainer.progress=false", "trainer.tensorboard=false"])
    spelled = NAME.match(name)
    assert spelled, f"{name} must be named <model>_imagenet_<size>_<epochs>e"
    assert cfg.task.model.name == f"clas/{spelled['model']}"
    assert cfg.trainer.max_epochs == int(spelled["epochs"])
    assert load_config(name).data.image_size == int(spelled["size"])
    assert 0 < cfg.task.label_smoothing < 1 and cfg.scheduler.decay == "cosine"
    cfg.task.model.pretrained = False  # the fine-tuning recipes start from released weights: none offline
    trainer = build_trainer(cfg)
    trainer.setup()
    task, model = trainer.task, trainer.train_model
    batch = next(iter(trainer.train_loader))
    assert batch[0].shape[-2:] == (32, 32)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    model.train()
    losses = task.training_step(model, batch)
    assert math.isfinite(losses["loss"].item())
    losses["loss"].backward()
    unused = [n for n, p in trainer.model.named_parameters() if p.requires_grad and p.grad is None]
    assert not unused, f"{name}: parameters outside the training graph: {unused[:5]}"
    trainer.optimizer.step()
    trainer.scheduler.step()
    assert any(not torch.equal(b, p) for b, p in zip(before, trainer.model.parameters()))
