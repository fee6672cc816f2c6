"""The real all-MiniLM-L6-v2 weights offline: exact loading, the tokenizer round trip, a fine-tuning run by config."""

from __future__ import annotations

import json

import pytest
import torch

from oarkit.core import create_model
from oarkit.core.cli import main
from oarkit.nlp import Taskflow
from oarkit.nlp.tokenizer import load_tokenizer, tokenizer_from_spec, tokenizer_spec

SENTENCES = ["hello there, how are you?", "book a flight to paris tomorrow morning please", "Ünïcode & 数字 test"]


def test_pretrained_dir_gives_bert_model_outputs_exactly(minilm_dir) -> None:
    from transformers import BertModel

    reference = BertModel.from_pretrained(str(minilm_dir)).eval()
    tokens = load_tokenizer(minilm_dir)(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = reference(**tokens).last_hidden_state
        encoder = create_model("nlp/all_minilm_l6_v2", head="encoder", pretrained=str(minilm_dir)).eval()
        assert torch.equal(encoder(**tokens).last_hidden_state, expected)
        # Under a task head the encoder is the same; only the head (here 4 classes) is new.
        classifier = create_model("nlp/all_minilm_l6_v2", pretrained=str(minilm_dir), num_classes=4).eval()
        assert torch.equal(classifier.bert(**tokens).last_hidden_state, expected)
        assert classifier(**tokens).logits.shape == (3, 4)
        tagger = create_model("nlp/all_minilm_l6_v2", head="token_classification", pretrained=str(minilm_dir),
                              num_classes=5).eval()
        assert torch.equal(tagger.bert(**tokens).last_hidden_state, expected)


def test_tokenizer_survives_the_run_directory(minilm_dir) -> None:
    tokenizer = load_tokenizer(minilm_dir)
    rebuilt = tokenizer_from_spec(json.loads(json.dumps(tokenizer_spec(tokenizer))))
    for text in SENTENCES:
        assert rebuilt(text, "a second text")["input_ids"] == tokenizer(text, "a second text")["input_ids"]
    assert rebuilt.pad_token_id == tokenizer.pad_token_id and rebuilt.model_max_length == 512


def test_fine_tune_by_config_then_eval_predict_and_taskflow(minilm_dir, tmp_path, capsys) -> None:
    from oarkit.nlp import prepare_intents

    data = prepare_intents(tmp_path / "intents", per_template=1)
    run = tmp_path / "run"
    args = ["train", "-c", "nlp/minilm_l6_text_cls", f"data.root={data}", f"task.model.pretrained={minilm_dir}",
            f"output_dir={run}", "trainer.max_epochs=1", "data.batch_size=16", "data.max_length=24",
            "trainer.progress=false", "trainer.tensorboard=false"]
    assert main(args) == 0
    meta = json.loads((run / "best" / "meta.json").read_text())
    assert meta["model"]["name"] == "nlp/all_minilm_l6_v2" and meta["labels"][0] == "book_flight"
    assert main(["eval", str(run), "--json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("{"):])["accuracy"] == pytest.approx(meta["metrics"]["accuracy"])
    assert main(["predict", str(run), "wake me up at 6", "play some jazz", "--topk", "2"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    assert [x["text"] for x in lines] == ["wake me up at 6", "play some jazz"] and len(lines[0]["topk"]) == 2
    flow = Taskflow("text_classification", model=run)
    assert flow("set an alarm for 7 am")[0]["label"] in meta["labels"]
