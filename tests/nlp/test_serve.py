"""``oarkit serve`` on the nlp tasks beyond text classification (tests/core/test_serve_nlp.py has that): token
classification, extractive QA and UIE with a per-request ``schema`` answer what their predictors answer in
process, and a request that does not fit the task is a 400 naming the forms it takes."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from oarkit.core.serve import ServeConfig, create_app  # noqa: E402


def _served(run, name: str) -> TestClient:
    return TestClient(create_app(ServeConfig(sources=(str(run.output_dir),), name=name), background_load=False))


def test_token_classification_answers_what_its_predictor_answers(ner_run):
    from oarkit.nlp import TokenClassifier

    texts = ["meet john smith in paris today", "mary jones flew to tokyo"]
    want = [r.to_dict() for r in TokenClassifier(str(ner_run.output_dir))(texts)]
    with _served(ner_run, "ner") as client:
        (entry,) = client.get("/v1/models").json()["models"]
        answer = client.post("/v1/models/ner/predict", json={"inputs": [{"text": t} for t in texts]})
    assert entry["task"] == "nlp/token_classification" and entry["inputs"] == "text"
    assert answer.status_code == 200, answer.text
    assert answer.json()["results"] == want


def test_question_answering_answers_what_its_predictor_answers(qa_run):
    from oarkit.nlp import QuestionAnswerer

    pairs = [{"question": "who founded acme?",
              "context": "acme is a company based in oslo. it was founded by ada lovelace many years ago."}]
    want = [r.to_dict() for r in QuestionAnswerer(str(qa_run.output_dir))(pairs)]
    with _served(qa_run, "qa") as client:
        answer = client.post("/v1/models/qa/predict", json={"inputs": pairs})
        refused = client.post("/v1/models/qa/predict", json={"inputs": [{"question": "who?"}]})
    assert answer.status_code == 200, answer.text
    assert answer.json()["results"] == want and want[0]["answer"] is not None
    assert refused.status_code == 400 and '{"question": "...", "context": "..."}' in refused.json()["error"]


def test_uie_takes_its_schema_per_request(uie_run):
    from oarkit.nlp import InformationExtractor

    text = "grace hopper founded hooli in rome."
    with _served(uie_run, "uie") as client:
        (entry,) = client.get("/v1/models").json()["models"]
        assert "schema" in entry["params"]
        for schema in (["person"], ["person", "city", {"company": ["founder"]}]):
            want = [r.to_dict() for r in InformationExtractor(str(uie_run.output_dir), schema=schema)([text])]
            answer = client.post("/v1/models/uie/predict", json={"inputs": [{"text": text}],
                                                                 "params": {"schema": schema}})
            assert answer.status_code == 200, answer.text
            assert answer.json()["results"] == want
        bad = client.post("/v1/models/uie/predict", json={"inputs": [{"text": text}], "params": {"schema": [3]}})
    assert bad.status_code == 400 and "schema" in bad.json()["error"]


def test_a_text_classifier_onnx_export_answers_what_its_predictor_answers(text_run, tmp_path):
    pytest.importorskip("onnxruntime")
    from oarkit.core.cli import main
    from oarkit.nlp import TextClassifier

    assert main(["export", str(text_run.output_dir), "--format", "onnx", "--output-dir", str(tmp_path)]) == 0
    export = tmp_path / "onnx"
    items = [{"text": "play some jazz"}, {"text_a": "is it raining", "text_b": "in paris"}]
    want = [r.to_dict() for r in TextClassifier(str(export), topk=2)(["play some jazz", ("is it raining", "in paris")])]
    with TestClient(create_app(ServeConfig(sources=(str(export),), name="intents"), background_load=False)) as client:
        (entry,) = client.get("/v1/models").json()["models"]
        answer = client.post("/v1/models/intents/predict", json={"inputs": items, "params": {"topk": 2}})
    assert entry["format"] == "onnx" and entry["task"] == "nlp/text_classification"
    assert answer.status_code == 200, answer.text
    got = answer.json()["results"]
    assert [(r["text"], r.get("text_pair"), [t["label"] for t in r["topk"]]) for r in got] == \
        [(r["text"], r.get("text_pair"), [t["label"] for t in r["topk"]]) for r in want]
    assert all(g["topk"][0]["score"] == pytest.approx(w["topk"][0]["score"], abs=1e-5) for g, w in zip(got, want))
