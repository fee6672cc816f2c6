"""The recipes that mirror PaddleSeg's published configs: each composes, builds its model as the recipe says
(widths included) with its losses, coefficients, optimizer and schedule, and takes one training step on the tiny
shapes set, whose outputs match the recipe's loss coefficients one for one."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from oarkit.core.config import build_trainer, load_config, packaged_configs

# Every seg recipe named after a PaddleSeg dataset (the shapes demo has tests of its own)
RECIPES = sorted(n for n in packaged_configs() if n.startswith("seg/") and ("_cityscapes_" in n or "_ade20k_" in n))
# What a PaddleSeg user looks for in the recipe of each ported family
FAMILIES = ("bisenetv1_resnet18_vd_cityscapes_1024x512_160k", "bisenetv2_cityscapes_1024x1024_160k",
            "deeplabv3_resnet50_vd_os8_cityscapes_1024x512_80k", "deeplabv3p_resnet50_vd_os8_cityscapes_1024x512_80k",
            "fcn_hrnet_w18_cityscapes_1024x512_80k", "ocrnet_hrnet_w18_cityscapes_1024x512_160k",
            "pp_liteseg_stdc1_cityscapes_1024x512_160k", "pp_mobileseg_tiny_ade20k_512x512_80k",
            "pspnet_resnet50_vd_os8_cityscapes_1024x512_80k", "unet_cityscapes_1024x512_160k")


def test_every_ported_family_has_a_paddleseg_recipe():
    assert {f"seg/{name}" for name in FAMILIES} <= set(RECIPES)


@pytest.mark.parametrize("name", RECIPES)
def test_recipe_builds_its_model_and_trains_one_step(name: str, shapes_root: Path, tmp_path: Path):
    cfg = load_config(name, [f"data.root={shapes_root}", "data.format=list", "data.crop_size=[64,64]",
                             "data.batch_size=2", "data.num_workers=0", f"output_dir={tmp_path / 'run'}",
                             "trainer.precision=fp32", "trainer.progress=false", "trainer.tensorboard=false"])
    iters = name.rsplit("_", 1)[1]
    assert cfg.trainer.max_iters == int(iters.rstrip("k")) * 1000, f"{name} must run the {iters} it is named after"
    assert cfg.task.model.name.split("/")[1] in name.split("/")[1]
    trainer = build_trainer(cfg)
    trainer.setup()
    task, model = trainer.task, trainer.train_model
    batch = next(iter(trainer.train_loader))
    before = [p.detach().clone() for p in trainer.model.parameters()]
    model.train()
    losses = task.training_step(model, batch)  # raises when loss_coefs do not match the model's training outputs
    assert math.isfinite(losses["loss"].item())
    losses["loss"].backward()
    unused = [n for n, p in trainer.model.named_parameters() if p.requires_grad and p.grad is None]
    assert not unused, f"{name}: parameters outside the training graph: {unused[:5]}"
    trainer.optimizer.step()
    trainer.scheduler.step()
    assert any(not torch.equal(b, p) for b, p in zip(before, trainer.model.parameters()))
