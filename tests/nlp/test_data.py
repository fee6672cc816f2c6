"""Readers (and their errors naming file and line), features, dynamic padding and length bucketing."""

from __future__ import annotations

import json

import pytest
import torch

from oarkit.core import DataError
from oarkit.nlp.data import (
    LengthBucketedBatches,
    PadCollator,
    TextClassificationData,
    TokenClassificationData,
    read_classification,
    read_conll,
    read_doccano,
    read_squad,
)
from oarkit.nlp.data.features import align_word_labels, char_span_to_tokens, encode_prompts, encode_qa
from oarkit.nlp.data.prompts import prompt_examples
from oarkit.nlp.prompts import detect_lang, relation_prompt
from oarkit.nlp.tokenizer import load_tokenizer


def test_tsv_single_and_pairs(tmp_path) -> None:
    (tmp_path / "a.tsv").write_text("text\tlabel\nhello world\tgreet\n\nbook it\tbook\n")
    examples = read_classification(tmp_path / "a.tsv")
    assert [(e.text, e.label) for e in examples] == [("hello world", "greet"), ("book it", "book")]
    assert examples[1].source.endswith("a.tsv:4")
    (tmp_path / "b.tsv").write_text("text_a\ttext_b\tlabel\nis it raining\tin paris\tyes\n")
    assert read_classification(tmp_path / "b.tsv")[0].text_pair == "in paris"


def test_clue_jsonl(tmp_path) -> None:
    lines = [{"sentence1": "a", "sentence2": "b", "label": "1"}, {"sentence": "c", "label": 0, "label_desc": "x"}]
    (tmp_path / "train.json").write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines))
    examples = read_classification(tmp_path / "train.json")
    assert (examples[0].text, examples[0].text_pair, examples[0].label) == ("a", "b", "1")
    assert (examples[1].text, examples[1].label) == ("c", "0")


@pytest.mark.parametrize(("name", "content", "match"), [
    ("bad.tsv", "text\tlabel\nfine\tx\ntoo\tmany\tfields\n", r"bad.tsv:3: 3 tab-separated fields"),
    ("nolabel.tsv", "text\tlabel\nfine\t\n", r"nolabel.tsv:2: the example has no label"),
    ("header.tsv", "sentence_x\tlabel\na\tb\n", r"header.tsv:1: header .* names no text column"),
    ("bad.jsonl", '{"sentence": "a", "label": 1}\n{"sentence": "b", "label": \n', r"bad.jsonl:2: not valid JSON"),
    ("keys.jsonl", '{"words": "a", "label": 1}\n', r"keys.jsonl:1: no text field"),
])
def test_malformed_classification_lines_are_named(tmp_path, name, content, match) -> None:
    (tmp_path / name).write_text(content)
    with pytest.raises(DataError, match=match):
        read_classification(tmp_path / name)


def test_conll_and_its_errors(tmp_path) -> None:
    (tmp_path / "a.txt").write_text("-DOCSTART- O\n\njohn B-PER\nsmith I-PER\nruns O\n\nparis B-LOC\n")
    sentences = read_conll(tmp_path / "a.txt")
    assert [s.words for s in sentences] == [("john", "smith", "runs"), ("paris",)]
    assert sentences[0].tags == ("B-PER", "I-PER", "O") and sentences[1].source.endswith("a.txt:7")
    (tmp_path / "b.txt").write_text("john B-PER\nsmith PERSON\n")
    with pytest.raises(DataError, match=r"b.txt:2: tag 'PERSON' is not BIO"):
        read_conll(tmp_path / "b.txt")
    (tmp_path / "c.txt").write_text("john B-PER\nsmith\n")
    with pytest.raises(DataError, match=r"c.txt:2: 'smith' has no tag"):
        read_conll(tmp_path / "c.txt")


def test_squad_and_misplaced_answers(squad_root, tmp_path) -> None:
    examples = read_squad(squad_root / "train.json")
    assert len(examples) == 24 and all(e.context[s:s + len(t)] == t for e in examples for t, s in e.answers)
    data = json.loads((squad_root / "dev.json").read_text())
    data["data"][0]["paragraphs"][1]["qas"][0]["answers"][0]["answer_start"] += 1
    (tmp_path / "dev.json").write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"dev.json at data\[0\].paragraphs\[1\].qas\[0\] \(id dev-1\)"):
        read_squad(tmp_path / "dev.json")


def test_doccano_layouts_and_errors(doccano_root, tmp_path) -> None:
    records = read_doccano(doccano_root / "train.jsonl")
    assert len(records) == 30 and {e.label for e in records[0].entities} == {"person", "company", "city"}
    (tmp_path / "seq.jsonl").write_text(json.dumps({"text": "ada in rome", "label": [[0, 3, "person"]]}) + "\n")
    assert read_doccano(tmp_path / "seq.jsonl")[0].entities[0].label == "person"
    bad = {"text": "ab", "entities": [{"id": 1, "start_offset": 0, "end_offset": 9, "label": "x"}]}
    (tmp_path / "bad.jsonl").write_text("\n" + json.dumps(bad) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl:2: entity 1 \[0, 9\) lies outside"):
        read_doccano(tmp_path / "bad.jsonl")
    dangling = {"text": "ab", "entities": [], "relations": [{"from_id": 1, "to_id": 2, "type": "r"}]}
    (tmp_path / "dangling.jsonl").write_text(json.dumps(dangling) + "\n")
    with pytest.raises(DataError, match=r"dangling.jsonl:1: relation 'r' links entity ids 1 -> 2"):
        read_doccano(tmp_path / "dangling.jsonl")


def test_prompts_positives_relations_and_negatives(doccano_root) -> None:
    records = read_doccano(doccano_root / "train.jsonl")[:3]
    examples = prompt_examples(records, lang="en", negative_ratio=1.0, seed=0)
    first = records[0]
    company = next(e for e in first.entities if e.label == "company")
    person = next(e for e in first.entities if e.label == "person")
    prompt = relation_prompt(first.text[company.start:company.end], "founder", "en")
    founder = next(e for e in examples if e.prompt == prompt and e.text == first.text)
    assert founder.spans == ((person.start, person.end),) and prompt.startswith("founder of ")
    assert relation_prompt("苹果", "创始人", "zh") == "苹果的创始人"
    assert detect_lang(["谷爱凌获得金牌"]) == "zh" and detect_lang(["ada"]) == "en"


def test_unknown_dev_label_is_named(tmp_path, tiny_tokenizer) -> None:
    (tmp_path / "train.tsv").write_text("text\tlabel\na\tx\nb\ty\n")
    (tmp_path / "dev.tsv").write_text("text\tlabel\nc\tz\n")
    data = TextClassificationData(root=str(tmp_path))
    with pytest.raises(DataError, match=r"dev.tsv:2: label 'z' is not among the 2 training labels"):
        data.examples("dev")
    with pytest.raises(DataError, match=r"dataset folder .*missing does not exist"):
        _ = TextClassificationData(root=str(tmp_path / "missing")).labels


def test_token_labels_align_to_first_subwords(ner_root, tiny_tokenizer) -> None:
    assert align_word_labels([None, 0, 0, 1, None], [3, 4]) == [-100, 3, -100, 4, -100]
    data = TokenClassificationData(root=str(ner_root), max_length=32)
    data.configure(tokenizer=load_tokenizer(tiny_tokenizer))
    assert data.labels == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    feature = data.encode(data.examples("train")[:1], train=True)[0]
    firsts = [lab for lab, w, prev in zip(feature["labels"], feature["word_ids"], [None, *feature["word_ids"]],
                                          strict=False) if w is not None and w != prev]
    assert [data.labels[i] for i in firsts] == feature["word_tags"]


def test_char_spans_map_to_tokens(tiny_tokenizer) -> None:
    tok = load_tokenizer(tiny_tokenizer)
    enc = tok("who", "acme was founded by ada lovelace", return_offsets_mapping=True)
    span = char_span_to_tokens(enc["offset_mapping"], enc.sequence_ids(0), 20, 32)
    assert span is not None
    assert tok.decode(enc["input_ids"][span[0]:span[1] + 1]).replace(" ", "") == "adalovelace"
    assert char_span_to_tokens(enc["offset_mapping"], enc.sequence_ids(0), 200, 205) is None


def test_long_qa_contexts_become_windows(tiny_tokenizer) -> None:
    from oarkit.nlp.data.examples import QAExample

    tok = load_tokenizer(tiny_tokenizer)
    context = "paris is nice. " * 30 + "acme was founded by ada lovelace."
    begin = context.index("ada lovelace")
    sample = encode_qa(tok, [QAExample("q", "who founded acme?", context, (("ada lovelace", begin),))], 48, 16)[0]
    assert len(sample["windows"]) > 3
    hits = [w for w in sample["windows"] if w["start_positions"] > 0]
    assert hits and all(w["offsets"][w["start_positions"]][0] == begin for w in hits)
    assert all(w["start_positions"] == w["end_positions"] == 0 for w in sample["windows"] if w not in hits)


def test_uie_targets_and_text_mask(tiny_tokenizer) -> None:
    from oarkit.nlp.data.examples import PromptExample

    tok = load_tokenizer(tiny_tokenizer)
    text = "ada lovelace founded acme in paris."
    feature = encode_prompts(tok, [PromptExample("person", text, ((0, 12),))], 64)[0]
    (start, end), = feature["spans"]
    assert feature["start_targets"][start] == feature["end_targets"][end] == 1.0 and sum(feature["start_targets"]) == 1
    assert feature["text_mask"][start] == 1 and feature["text_mask"][1] == 0  # the prompt is not pointable


def test_dynamic_padding() -> None:
    collate = PadCollator(pad_token_id=7)
    batch = collate([{"input_ids": [1, 2, 3], "labels": 1, "length": 3, "note": "a"},
                     {"input_ids": [4], "labels": 0, "length": 1, "note": "b"}])
    assert batch["input_ids"].tolist() == [[1, 2, 3], [4, 7, 7]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["labels"].tolist() == [1, 0] and batch["note"] == ["a", "b"] and "length" not in batch
    tokens = collate([{"input_ids": [1, 2], "labels": [3, -100]}, {"input_ids": [1], "labels": [4]}])
    assert tokens["labels"].tolist() == [[3, -100], [4, -100]]
    assert PadCollator(0, pad_to_multiple_of=8)([{"input_ids": [1, 2, 3]}])["input_ids"].shape == (1, 8)


def test_length_bucketing_covers_every_feature_once_per_epoch() -> None:
    lengths = [((i * 37) % 50) + 1 for i in range(203)]
    features = [{"input_ids": [0] * n, "length": n, "i": i} for i, n in enumerate(lengths)]
    batches = LengthBucketedBatches(features, batch_size=8, shuffle=True, seed=3, pool_batches=5)
    n_batches = len(batches)
    orders = []
    for epoch in (0, 1):
        batches.set_epoch(epoch)
        assert len(batches) == n_batches == 26  # ceil(203 / 8): the epoch length never changes
        seen = [f["i"] for b in range(len(batches)) for f in batches[b]]
        assert sorted(seen) == list(range(203))
        orders.append(seen)
        spreads = [max(f["length"] for f in batches[b]) - min(f["length"] for f in batches[b]) for b in range(26)]
        assert sum(spreads) / len(spreads) < 15  # pools of 40 over 50 lengths; ~40 for random batches
    assert orders[0] != orders[1]
    collated = PadCollator(0)([batches[0]])  # a bucket arrives as a one-item loader batch
    assert collated["input_ids"].shape[0] == 8
    fixed = LengthBucketedBatches(features, batch_size=8, shuffle=False)
    flat = [f["length"] for b in range(len(fixed)) for f in fixed[b]]
    assert flat == sorted(flat)


def test_data_module_loader_settings(intents_root, tiny_tokenizer) -> None:
    data = TextClassificationData(root=str(intents_root), batch_size=4)
    assert (data.batch_size, data.examples_per_batch) == (1, 4)  # bucketed: the loader sees whole batches
    data.configure(tokenizer=load_tokenizer(tiny_tokenizer))
    item = data.train_dataset()[0]
    assert isinstance(item, list) and len(item) == 4
    plain = TextClassificationData(root=str(intents_root), batch_size=4, bucket=False)
    plain.configure(tokenizer=load_tokenizer(tiny_tokenizer))
    assert plain.batch_size == 4 and isinstance(plain.train_dataset()[0], dict)
    assert data.labels[0] == "book_flight" and len(data.labels) == 8  # labels.txt order
    assert isinstance(PadCollator(0)([item])["input_ids"], torch.Tensor)
