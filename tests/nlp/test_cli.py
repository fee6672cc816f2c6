"""The command line for text: train-tokenizer, prepare-data intents, and a recipe trained from scratch."""

from __future__ import annotations

import json

from oarkit.core.cli import main
from oarkit.nlp.tokenizer import load_tokenizer

RECIPE = "nlp/minilm_l6_text_cls"


def test_train_tokenizer_verb(intents_root, tmp_path, capsys) -> None:
    out = tmp_path / "tok"
    assert main(["train-tokenizer", str(intents_root / "train.tsv"), "--out", str(out), "--vocab-size", "300",
                 "--min-frequency", "1"]) == 0
    assert "task.tokenizer=" in capsys.readouterr().out
    tokenizer = load_tokenizer(out)
    assert 50 < len(tokenizer) <= 300 and (out / "vocab.txt").exists()
    assert tokenizer("Book a FLIGHT")["input_ids"] == tokenizer("book a flight")["input_ids"]  # uncased
    assert main(["train-tokenizer", str(tmp_path / "missing.txt"), "--out", str(out)]) == 2
    assert "missing.txt does not exist" in capsys.readouterr().err


def test_prepare_intents(tmp_path, capsys) -> None:
    assert main(["prepare-data", "intents", "--out", str(tmp_path / "intents")]) == 0
    train = (tmp_path / "intents" / "train.tsv").read_text().splitlines()
    dev = (tmp_path / "intents" / "dev.tsv").read_text().splitlines()
    assert train[0] == dev[0] == "text\tlabel" and len(train) > 300 and len(dev) > 150
    assert not set(train[1:]) & set(dev[1:])  # held-out slot values and templates


def test_recipe_from_scratch_train_eval_predict(intents_root, tiny_tokenizer, tmp_path, capsys) -> None:
    run = tmp_path / "run"
    overrides = [f"data.root={intents_root}", f"output_dir={run}", "task.model.name=nlp/bert_tiny_uncased",
                 f"+task.tokenizer={tiny_tokenizer}", "+task.model.hidden_size=32", "+task.model.num_hidden_layers=2",
                 "+task.model.num_attention_heads=2", "+task.model.intermediate_size=64", "trainer.max_epochs=1",
                 "trainer.precision=fp32", "data.batch_size=8", "trainer.progress=false", "trainer.tensorboard=false"]
    assert main(["train", "-c", RECIPE, *overrides]) == 0
    assert main(["eval", str(run), "--json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("{"):])["num_samples"] > 0
    assert main(["predict", str(run), "hello sam", "--save-dir", str(tmp_path / "pred")]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["text"] == "hello sam" and line["plot"].endswith(".json")
    assert main(["summary", str(run)]) == 0
    assert "best accuracy" in capsys.readouterr().out


def test_bad_text_inputs_get_clear_messages(intents_root, tmp_path, capsys) -> None:
    assert main(["train", "-c", RECIPE, f"data.root={intents_root}", "task.model.name=nlp/bert_tiny_uncase"]) == 2
    assert "nlp/bert_tiny_uncased" in capsys.readouterr().err
    assert main(["train", "-c", RECIPE, f"data.root={intents_root}", f"output_dir={tmp_path / 'r'}"]) == 2
    err = capsys.readouterr().err
    assert "task.model.pretrained=DIR" in err and "Traceback" not in err
