"""The recipes that mirror PaddleNLP's published fine-tuning commands (ERNIE 3.0 text classification, UIE): each
composes, spells its model, input length and epochs in its name, builds its model and takes one training step on
the tiny generated sets with a tiny width (fine-tuning from a real PaddleNLP directory is tested beside the Paddle
parity, tests/interop/test_paddle_parity_nlp.py)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from oarkit.core.config import build_trainer, load_config, packaged_configs

RECIPES = {
    "nlp/ernie_3_0_medium_zh_text_cls_128_100e": ("intents_root", 3.0e-5, "constant"),
    "nlp/uie_base_finetune_512_20e": ("doccano_root", 1.0e-5, "linear"),
}
NAME = re.compile(r"^nlp/(?P<model>.+?)_(text_cls|finetune)_(?P<length>\d+)_(?P<epochs>\d+)e$")
TINY = ["+task.model.hidden_size=32", "+task.model.num_hidden_layers=2", "+task.model.num_attention_heads=2",
        "+task.model.intermediate_size=64"]


def test_the_paddlenlp_recipes_are_packaged():
    assert set(RECIPES) <= set(packaged_configs())


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipe_builds_its_model_and_trains_one_step(name: str, request: pytest.FixtureRequest, tiny_tokenizer: Path,
                                                      tmp_path: Path):
    data_fixture, lr, decay = RECIPES[name]
    root = request.getfixturevalue(data_fixture)
    spelled = NAME.match(name)
    assert spelled, f"{name} must be named <model>_<task>_<max length>_<epochs>e"
    recipe = load_config(name)
    assert recipe.task.model.name == f"nlp/{spelled['model']}"
    assert recipe.data.max_length == int(spelled["length"]) and recipe.trainer.max_epochs == int(spelled["epochs"])
    assert recipe.optimizer.lr == lr and recipe.scheduler.decay == decay
    cfg = load_config(name, [f"data.root={root}", "data.batch_size=2", "data.max_length=32",
                             f"+task.tokenizer={tiny_tokenizer}", "task.model.pretrained=false", *TINY,
                             f"output_dir={tmp_path / 'run'}", "trainer.precision=fp32", "trainer.progress=false",
                             "trainer.tensorboard=false"])
    trainer = build_trainer(cfg)
    trainer.setup()
    task, model = trainer.task, trainer.train_model
    assert model.config.num_hidden_layers == 2 and model.config.layer_norm_eps == 1e-12  # PaddleNLP's epsilon
    batch = next(iter(trainer.train_loader))
    before = [p.detach().clone() for p in trainer.model.parameters()]
    model.train()
    losses = task.training_step(model, batch)
    assert math.isfinite(losses["loss"].item())
    losses["loss"].backward()
    trainer.optimizer.step()
    trainer.scheduler.step()
    assert any(not torch.equal(b, p) for b, p in zip(before, trainer.model.parameters(), strict=True))


def test_paddlenlp_text_classification_files_read_without_a_header(tmp_path: Path):
    from oarkit.nlp import TextClassificationData

    (tmp_path / "label.txt").write_text("负面\n正面\n", encoding="utf-8")
    (tmp_path / "train.txt").write_text("这家店很好\t正面\n太差了\t负面\n", encoding="utf-8")
    (tmp_path / "dev.txt").write_text("还不错\t正面\n", encoding="utf-8")
    data = TextClassificationData(root=str(tmp_path))
    examples = data.read(data.split_file("train"), train=True)
    assert data.labels == ["负面", "正面"]
    assert [(e.text, e.label) for e in examples] == [("这家店很好", "正面"), ("太差了", "负面")]


def test_a_model_directory_gives_its_recorded_tokenizer(text_run: Any):
    from oarkit.nlp.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(Path(text_run.output_dir) / "best")  # no tokenizer files: the one meta.json records
    assert tokenizer("wake me up at 7")["input_ids"] == text_run.task.tokenizer("wake me up at 7")["input_ids"]
