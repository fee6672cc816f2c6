"""Predictors and Taskflow: every input kind, long inputs, plain-dict results, the UIE schema walk."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn
from transformers.modeling_outputs import QuestionAnsweringModelOutput

from oarkit.core import ConfigError, UnknownNameError
from oarkit.nlp import (
    InformationExtractor,
    Predictor,
    QuestionAnswerer,
    Taskflow,
    TextClassifier,
    TokenClassifier,
)
from oarkit.nlp.predictor import split_words
from oarkit.nlp.tokenizer import load_tokenizer


def test_text_classifier_inputs(text_run, tmp_path) -> None:
    clf = TextClassifier(text_run.output_dir, topk=3, batch_size=2)
    single = clf("play some jazz")
    assert single.label in clf.labels and len(single.scores) == 3 and single.scores == sorted(single.scores)[::-1]
    texts = ["play some jazz", "wake me up at 7", "translate thank you into french", "order a pizza", "hello sam"]
    batched = clf(texts)
    assert [r.label for r in batched] == [TextClassifier(text_run.output_dir)(t).label for t in texts]
    (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n\n")
    from pathlib import Path

    assert [r.text for r in clf(Path(tmp_path / "texts.txt"))] == texts  # a Path is one text per line
    pair = clf(("is it raining", "in paris"))
    assert pair.to_dict()["text_pair"] == "in paris"
    mixed = clf(["play some jazz", ("is it raining", "in paris"), "order a pizza"])  # texts and pairs in one list
    alone = [single, pair, clf("order a pizza")]
    assert [(r.text, r.text_pair, r.labels) for r in mixed] == [(r.text, r.text_pair, r.labels) for r in alone]
    assert all(r.scores == pytest.approx(a.scores, abs=1e-6) for r, a in zip(mixed, alone))  # padding: float order
    long = clf("book a flight " * 200)  # truncated to max_length, not an error
    assert long.label in clf.labels
    json.dumps([r.to_dict() for r in batched])
    assert clf.predict is not None and single.save(tmp_path / "r.png").suffix == ".json"


def test_token_classifier_offsets_and_windows(ner_run) -> None:
    tagger = TokenClassifier(ner_run.output_dir)
    text = "meet ada lovelace in paris today"
    result = tagger(text)
    assert all(text[e.start:e.end] == e.text for e in result.entities)
    assert all(e.label in ("PER", "LOC") and 0 < e.score <= 1 for e in result.entities)
    words = [w for w, _, _ in split_words(text)]
    assert tagger([words])[0].to_dict()["text"] == text  # a pre-split word list
    # A text far beyond max_length is tagged window by window: every word gets a tag, offsets stay exact.
    long_text = " ".join([text] * 40)
    windows = TokenClassifier(ner_run.output_dir, max_length=16, stride=4)
    tagged = windows.tag_words([[w for w, _, _ in split_words(long_text)]])[0]
    assert len(tagged) == len(split_words(long_text))
    assert all(long_text[e.start:e.end] == e.text for e in windows(long_text).entities)
    # A short text needs no window, so windowing cannot change its tags.
    assert windows(text).to_dict() == TokenClassifier(ner_run.output_dir, max_length=64)(text).to_dict()


def test_split_words() -> None:
    words = [w for w, _, _ in split_words("Hi, Ada! 北京大学 ok")]
    assert words == ["Hi", ",", "Ada", "!", "北", "京", "大", "学", "ok"]


def test_question_answerer(qa_run) -> None:
    qa = QuestionAnswerer(qa_run.output_dir)
    context = "acme is a company based in rome. it was founded by ada lovelace many years ago."
    answer = qa({"question": "who founded acme?", "context": context})
    assert context[answer.start:answer.end] == answer.answer
    many = qa([{"question": "who founded acme?", "context": context * 5}] * 3)
    assert len(many) == 3 and all(a.to_dict()["question"] == "who founded acme?" for a in many)


class KeywordPointer(nn.Module):
    """A real pointer module for the schema walk: for each prompt it points at the words a table gives."""

    def __init__(self, tokenizer, table: dict[str, list[str]]) -> None:
        super().__init__()
        self.tokenizer, self.table = tokenizer, table
        self.config = type("Config", (), {"hidden_size": 4})()
        self.prompts: list[str] = []

    def forward(self, input_ids, attention_mask=None, token_type_ids=None) -> QuestionAnsweringModelOutput:
        start = torch.full(input_ids.shape, -9.0)
        end = torch.full(input_ids.shape, -9.0)
        for row, ids in enumerate(input_ids.tolist()):
            sep = ids.index(self.tokenizer.sep_token_id)
            prompt = self.tokenizer.decode(ids[1:sep]).replace(" ##", "")
            self.prompts.append(prompt)
            text_ids = ids[sep + 1:]
            for answer in self.table.get(prompt, []):
                target = self.tokenizer(answer, add_special_tokens=False)["input_ids"]
                for i in range(len(text_ids) - len(target) + 1):
                    if text_ids[i:i + len(target)] == target:
                        start[row, sep + 1 + i] = 9.0
                        end[row, sep + len(target) + i] = 9.0
        return QuestionAnsweringModelOutput(start_logits=start, end_logits=end)


def test_schema_walk_with_relations(tiny_tokenizer) -> None:
    tok = load_tokenizer(tiny_tokenizer)
    table = {"person": ["ada lovelace"], "company": ["acme"], "founder of acme": ["ada lovelace"],
             "city of acme": ["paris"]}
    pointer = KeywordPointer(tok, table)
    ie = InformationExtractor(pointer, tokenizer=tok, schema=["person", {"company": ["founder", "city"]}],
                              prompt_lang="en")
    text = "ada lovelace founded acme in paris."
    result = ie(text).to_dict()
    person = {"text": "ada lovelace", "start": 0, "end": 12, "probability": pytest.approx(1.0, abs=1e-3)}
    assert result["person"] == [person]
    company = result["company"][0]
    assert (company["text"], company["start"]) == ("acme", 21)
    assert company["relations"]["founder"][0]["text"] == "ada lovelace"
    assert company["relations"]["city"][0]["text"] == "paris"
    assert "founder of acme" in pointer.prompts and "founder of ada lovelace" not in pointer.prompts
    # A text many windows long: spans are found in every window and mapped back to exact offsets.
    long_text = "the weather is fine. " * 30 + text
    windowed = InformationExtractor(pointer, tokenizer=tok, schema="company", max_length=24, stride=4)
    found = windowed(long_text).to_dict()["company"]
    assert [(s["text"], long_text[s["start"]:s["end"]]) for s in found] == [("acme", "acme")]


def test_taskflow_tasks(text_run, ner_run, uie_run, qa_run) -> None:
    classes = Taskflow("text_classification", model=text_run.output_dir)(["play some jazz", "hello sam"])
    assert isinstance(classes, list) and {"text", "label", "score"} <= set(classes[0])
    entities = Taskflow("ner", model=ner_run.output_dir)("call ada lovelace now")
    assert entities[0]["text"] == "call ada lovelace now" and isinstance(entities[0]["entities"], list)
    ie = Taskflow("information_extraction", model=uie_run.output_dir, schema=["person", {"company": ["founder"]}])
    out = ie(["ada lovelace founded acme in paris.", "grace hopper founded hooli in oslo."])
    assert len(out) == 2 and all(isinstance(x, dict) for x in out)
    ie.set_schema(["city"])
    assert set(ie("x")[0]) <= {"city"}
    answers = Taskflow("question_answering", model=qa_run.output_dir)({"question": "who?", "context": "ada did"})
    assert set(answers[0]) == {"question", "answer", "start", "end", "score"}
    json.dumps([classes, entities, out, answers])


def test_taskflow_refuses_mismatches(text_run) -> None:
    with pytest.raises(UnknownNameError, match="'ner'"):
        Taskflow("nre", model=text_run.output_dir)
    with pytest.raises(ConfigError, match=r"trained for 'text_classification'.*Taskflow\('text_classification'\)"):
        Taskflow("ner", model=text_run.output_dir)
    with pytest.raises(ConfigError, match="needs model="):
        Taskflow("text_classification")
    with pytest.raises(ConfigError, match="schema= is for information_extraction"):
        Taskflow("text_classification", model=text_run.output_dir, schema=["x"])


def test_kit_predictor_follows_the_run(text_run, ner_run, uie_run) -> None:
    assert isinstance(Predictor(text_run.output_dir, topk=2), TextClassifier)
    assert isinstance(Predictor(ner_run.output_dir, topk=2), TokenClassifier)
    extractor = Predictor(uie_run.output_dir, topk=5)
    assert isinstance(extractor, InformationExtractor) and [n.name for n in extractor.schema] == [
        "city", "company", "person"]


def test_module_sources_need_a_tokenizer(text_run, tiny_tokenizer) -> None:
    with pytest.raises(ConfigError, match="tokenizer"):
        TextClassifier(text_run.eval_model)
    clf = TextClassifier(text_run.eval_model, tokenizer=str(tiny_tokenizer), labels=text_run.task.labels)
    assert clf("hello sam").label in text_run.task.labels


def test_text_classifier_on_an_onnx_export_matches_the_run(text_run, tmp_path) -> None:
    """An export folder is a predictor source like a run directory: same tokenizer, labels and results."""
    from oarkit.core.cli import main
    from oarkit.core.export import export
    from oarkit.nlp import export_source

    report = export(export_source(text_run.output_dir), "onnx", output_dir=tmp_path, verify=False)
    assert report.ok, report.table()
    texts = ["play some jazz", "wake me up at 7", "translate thank you into french"]
    eager, deployed = TextClassifier(text_run.output_dir, topk=2), Predictor(tmp_path / "onnx", topk=2)
    assert isinstance(deployed, TextClassifier) and deployed.labels == eager.labels
    for a, b in zip(eager(texts), deployed(texts), strict=True):
        assert a.labels == b.labels
        assert a.scores == pytest.approx(b.scores, abs=1e-4)
    assert main(["predict", str(tmp_path / "onnx"), "play some jazz"]) == 0
