"""``oarkit serve`` on a text kit: a tiny nlp text classifier (BERT, hidden 32, two layers, a WordPiece tokenizer
trained on the intents set; a few seconds) answers JSON texts and text pairs as ``TextClassifier`` does, and
refuses what a text model cannot take."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
from fastapi.testclient import TestClient  # noqa: E402

from oarkit.core.serve import ServeConfig, create_app  # noqa: E402

TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}
TEXTS = ["play some jazz", "wake me up at 7", "translate thank you into french", "order a pizza", "hello sam",
         "what is the weather in paris"]


@pytest.fixture(scope="module")
def text_run(tmp_path_factory) -> Path:
    pytest.importorskip("oarkit.nlp")
    import torch

    from oarkit.core import Trainer, create_model
    from oarkit.nlp import TextClassificationData, TextClassificationTask, prepare_intents, train_wordpiece

    root = prepare_intents(tmp_path_factory.mktemp("intents"), per_template=2)
    corpus = [line.split("\t")[0] for line in (root / "train.tsv").read_text().splitlines()[1:]] + TEXTS
    tokenizer = train_wordpiece([], tmp_path_factory.mktemp("tokenizer"), texts=corpus, vocab_size=300,
                                min_frequency=1)
    task = TextClassificationTask(functools.partial(create_model, "nlp/bert_tiny_uncased", **TINY),
                                  tokenizer=str(tokenizer))
    data = TextClassificationData(root=str(root), batch_size=8, max_length=32)
    out = tmp_path_factory.mktemp("serve") / "intents_run"
    Trainer(task, data, output_dir=out, max_epochs=2, progress=False, tensorboard=False,
            optimizer=lambda groups: torch.optim.AdamW(groups, lr=3e-3)).fit()
    return out


def expected(run: Path, items: list, **options) -> list[dict]:
    from oarkit.nlp import TextClassifier

    return [r.to_dict() for r in TextClassifier(str(run), **options)(items)]


def test_texts_and_pairs_answer_what_the_predictor_answers(text_run):
    with TestClient(create_app(ServeConfig(sources=(str(text_run),)), background_load=False)) as client:
        (entry,) = client.get("/v1/models").json()["models"]
        assert entry["task"] == "nlp/text_classification" and entry["inputs"] == "text" and entry["labels"]
        assert "topk" in entry["params"]
        body = {"inputs": [{"text": t} for t in TEXTS[:3]] + [{"text_a": "is it raining", "text_b": "in paris"}],
                "params": {"topk": 3}}
        answer = client.post("/v1/models/intents_run/predict", json=body)
        assert answer.status_code == 200
        texts, pair = expected(text_run, TEXTS[:3], topk=3), expected(text_run, [("is it raining", "in paris")], topk=3)
        assert answer.json() == {"results": texts + pair}  # the predictor takes texts and pairs in separate calls
        assert answer.json()["results"][3]["text_pair"] == "in paris"
        refusals = [
            ({"files": [("file", ("a.png", b"\x89PNG", "image/png"))]}, "takes texts, not files"),
            ({"json": {"inputs": [{"image": "aGVsbG8="}]}}, "for this text model"),
            ({"json": {"inputs": [{"text": ""}]}}, "inputs[0].text is empty"),
            ({"json": {"inputs": [{"text": 3}]}}, "inputs[0].text must be a string"),
            ({"json": {"inputs": ["play some jazz"]}}, "must be one of"),
            ({"json": {"inputs": [{"text": "x"}], "params": {"topk": 1.5}}}, "params.topk must be a int"),
        ]
        for kwargs, fragment in refusals:
            refused = client.post("/v1/models/intents_run/predict", **kwargs)
            assert refused.status_code == 400 and fragment in refused.json()["error"], (kwargs, refused.text)
        again = client.post("/v1/models/intents_run/predict", json={"inputs": [{"text": TEXTS[4]}]})
        assert again.json()["results"] == expected(text_run, [TEXTS[4]])


def test_concurrent_texts_answer_as_one_at_a_time(text_run):
    app = create_app(ServeConfig(sources=(str(text_run),), max_batch_size=8, max_delay_ms=200),
                     background_load=False)

    async def run() -> list[httpx.Response]:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
                return await asyncio.gather(*(client.post("/v1/models/intents_run/predict",
                                                          json={"inputs": [{"text": t}]}) for t in TEXTS))

    answers = asyncio.run(run())
    alone = [expected(text_run, [t])[0] for t in TEXTS]
    for answer, want in zip(answers, alone):
        (got,) = answer.json()["results"]
        assert [t["label"] for t in got["topk"]] == [t["label"] for t in want["topk"]]
        assert got["score"] == pytest.approx(want["score"], rel=1e-5)
    assert app.state.metrics.batch_size.labels(model="intents_run")._sum.get() == len(TEXTS)
