"""Readers of the text formats: TSV and CLUE JSONL classification, CoNLL BIO, SQuAD JSON, doccano JSONL.

Each reader returns the examples of one file and raises :class:`~oarkit.core.errors.DataError` naming the file, the
line (or the JSON path) and the expected layout on the first malformed record.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from oarkit.core.errors import DataError
from oarkit.nlp.data.examples import AnnotatedText, Entity, QAExample, Relation, TaggedSentence, TextExample

TSV_LAYOUT = "a header 'text<TAB>label' (or 'text_a<TAB>text_b<TAB>label' for pairs), then one example per line"
JSONL_LAYOUT = ('one JSON object per line, e.g. {"sentence": "...", "label": "..."} or '
                '{"sentence1": "...", "sentence2": "...", "label": "..."}')
CONLL_LAYOUT = "one 'word TAG' per line (tag last, BIO: O, B-TYPE, I-TYPE), a blank line between sentences"
DOCCANO_LAYOUT = ('one JSON object per line: {"text": "...", "entities": [{"id", "start_offset", "end_offset", '
                  '"label"}], "relations": [{"from_id", "to_id", "type"}]} or {"text": "...", "label": '
                  "[[start, end, label], ...]}")
#: CLUE's field names for the first text, the second text and the label
TEXT_KEYS = ("text", "sentence", "text_a", "sentence1", "premise", "query", "content")
PAIR_KEYS = ("text_b", "sentence2", "hypothesis", "title")
_TAG = re.compile(r"^(O|[BI]-\S+)$")


def _need_file(path: Path, what: str) -> None:
    if not path.is_file():
        raise DataError(f"{what} {path} does not exist")


def read_classification(path: str | Path, *, require_label: bool = True) -> list[TextExample]:
    """Classification examples from a TSV (``.tsv``/``.txt``; a ``.txt`` file may have no header, as PaddleNLP's) or a
    CLUE-style JSONL (``.json``/``.jsonl``) file.

    Args:
        path: the file.
        require_label: refuse examples without a label (training and dev splits).
    """
    path = Path(path)
    _need_file(path, "classification file")
    examples = _read_jsonl_classification(path) if path.suffix in (".json", ".jsonl") else _read_tsv(path)
    if not examples:
        raise DataError(f"{path} holds no examples; expected {TSV_LAYOUT if path.suffix != '.jsonl' else JSONL_LAYOUT}")
    if require_label:
        missing = next((e for e in examples if e.label is None), None)
        if missing is not None:
            raise DataError(f"{missing.source}: the example has no label; every line of a training or dev split "
                            "needs one")
    return examples


def _read_tsv(path: Path) -> list[TextExample]:
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows:
        return []
    header = [h.strip().lower() for h in rows[0]]
    text_col = next((header.index(k) for k in ("text", "text_a", "sentence", "sentence1") if k in header), None)
    pair_col = next((header.index(k) for k in ("text_b", "sentence2") if k in header), None)
    label_col = header.index("label") if "label" in header else None
    first = 1
    if text_col is None and path.suffix == ".txt" and len(rows[0]) in (2, 3):
        # PaddleNLP's text classification files (train.txt / dev.txt beside label.txt): no header,
        # 'text<TAB>label' or 'text_a<TAB>text_b<TAB>label' lines
        header = ["text", "label"] if len(rows[0]) == 2 else ["text_a", "text_b", "label"]
        text_col, pair_col, label_col, first = 0, (1 if len(header) == 3 else None), len(header) - 1, 0
    if text_col is None:
        raise DataError(f"{path}:1: header {rows[0]} names no text column; expected {TSV_LAYOUT}")
    examples = []
    for number, row in enumerate(rows[first:], start=first + 1):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise DataError(f"{path}:{number}: {len(row)} tab-separated fields for a header of {len(header)} "
                            f"({', '.join(header)}); expected {TSV_LAYOUT}. A tab inside a text must be removed.")
        label = row[label_col].strip() if label_col is not None else None
        examples.append(TextExample(text=row[text_col], text_pair=row[pair_col] if pair_col is not None else None,
                                    label=label or None, source=f"{path}:{number}"))
    return examples


def _json_line(path: Path, number: int, line: str, layout: str) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{number}: not valid JSON ({err.msg} at column {err.colno}); expected {layout}") from err
    if not isinstance(record, dict):
        raise DataError(f"{path}:{number}: a JSON {type(record).__name__}, not an object; expected {layout}")
    return record


def _read_jsonl_classification(path: Path) -> list[TextExample]:
    examples = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            record = _json_line(path, number, line, JSONL_LAYOUT)
            text_key = next((k for k in TEXT_KEYS if k in record), None)
            if text_key is None or not isinstance(record[text_key], str):
                raise DataError(f"{path}:{number}: no text field (one of {', '.join(TEXT_KEYS)}) in {sorted(record)}; "
                                f"expected {JSONL_LAYOUT}")
            pair_key = next((k for k in PAIR_KEYS if k in record), None)
            label = record.get("label", record.get("label_desc"))
            examples.append(TextExample(text=record[text_key], text_pair=record[pair_key] if pair_key else None,
                                        label=None if label is None else str(label), source=f"{path}:{number}"))
    return examples


def read_conll(path: str | Path) -> list[TaggedSentence]:
    """Sentences of a CoNLL file: ``word ... TAG`` per line (tag last), blank lines between sentences."""
    path = Path(path)
    _need_file(path, "CoNLL file")
    sentences: list[TaggedSentence] = []
    words: list[str] = []
    tags: list[str] = []
    start = 1

    def flush() -> None:
        if words:
            sentences.append(TaggedSentence(tuple(words), tuple(tags), source=f"{path}:{start}"))
            words.clear()
            tags.clear()

    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            parts = line.split()
            if not parts or parts[0] == "-DOCSTART-":
                flush()
                start = number + 1
                continue
            if len(parts) < 2:
                raise DataError(f"{path}:{number}: {line.strip()!r} has no tag; expected {CONLL_LAYOUT}")
            if not _TAG.match(parts[-1]):
                raise DataError(f"{path}:{number}: tag {parts[-1]!r} is not BIO (O, B-TYPE or I-TYPE); "
                                f"expected {CONLL_LAYOUT}")
            if not words:
                start = number
            words.append(parts[0])
            tags.append(parts[-1])
    flush()
    if not sentences:
        raise DataError(f"{path} holds no sentences; expected {CONLL_LAYOUT}")
    return sentences


def read_squad(path: str | Path) -> list[QAExample]:
    """Questions of a SQuAD v1/v2 JSON file; each answer must match its context at ``answer_start``."""
    path = Path(path)
    _need_file(path, "SQuAD file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{err.lineno}: not valid JSON ({err.msg})") from err
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise DataError(f'{path}: expected SQuAD\'s layout {{"data": [{{"paragraphs": [{{"context", "qas"}}]}}]}}')
    examples = []
    for a, article in enumerate(data["data"]):
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            context = paragraph.get("context")
            where = f"{path} at data[{a}].paragraphs[{p}]"
            if not isinstance(context, str):
                raise DataError(f"{where}: the paragraph has no 'context' string")
            for q, qa in enumerate(paragraph.get("qas", [])):
                qid = str(qa.get("id", f"{a}-{p}-{q}"))
                if not isinstance(qa.get("question"), str):
                    raise DataError(f"{where}.qas[{q}] (id {qid}): no 'question' string")
                answers = []
                for answer in [] if qa.get("is_impossible") else qa.get("answers", []):
                    text, begin = answer.get("text"), answer.get("answer_start")
                    if not isinstance(text, str) or not isinstance(begin, int) or \
                            context[begin:begin + len(text)] != text:
                        raise DataError(f"{where}.qas[{q}] (id {qid}): answer {text!r} does not occur at "
                                        f"answer_start={begin} of its context")
                    answers.append((text, begin))
                examples.append(QAExample(id=qid, question=qa["question"], context=context, answers=tuple(answers),
                                          source=f"{where}.qas[{q}]"))
    if not examples:
        raise DataError(f"{path} holds no questions")
    return examples


def read_doccano(path: str | Path) -> list[AnnotatedText]:
    """Records of a doccano JSONL export (relation-extraction or sequence-labelling layout)."""
    path = Path(path)
    _need_file(path, "doccano file")
    records = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            record = _json_line(path, number, line, DOCCANO_LAYOUT)
            records.append(_doccano_record(record, f"{path}:{number}"))
    if not records:
        raise DataError(f"{path} holds no records; expected {DOCCANO_LAYOUT}")
    return records


def _doccano_record(record: dict[str, Any], where: str) -> AnnotatedText:
    text = record.get("text", record.get("data"))
    if not isinstance(text, str):
        raise DataError(f"{where}: no 'text' string; expected {DOCCANO_LAYOUT}")
    entities = []
    try:
        if "entities" in record:
            for e in record["entities"]:
                entities.append(Entity(e["id"], int(e["start_offset"]), int(e["end_offset"]), str(e["label"])))
        else:
            for i, (begin, end, label) in enumerate(record.get("label", [])):
                entities.append(Entity(i, int(begin), int(end), str(label)))
        relations = [Relation(r["from_id"], r["to_id"], str(r["type"])) for r in record.get("relations", [])]
    except (KeyError, TypeError, ValueError) as err:
        raise DataError(f"{where}: malformed entity or relation ({type(err).__name__}: {err}); "
                        f"expected {DOCCANO_LAYOUT}") from err
    ids = {e.id for e in entities}
    for e in entities:
        if not 0 <= e.start < e.end <= len(text):
            raise DataError(f"{where}: entity {e.id} [{e.start}, {e.end}) lies outside the text of {len(text)} "
                            "characters")
    for r in relations:
        if r.from_id not in ids or r.to_id not in ids:
            raise DataError(f"{where}: relation {r.type!r} links entity ids {r.from_id} -> {r.to_id}, "
                            f"but the record's entities are {sorted(map(str, ids))}")
    return AnnotatedText(text=text, entities=tuple(entities), relations=tuple(relations), source=where)


def read_label_list(path: str | Path) -> list[str]:
    """Label names, one per line, index order (PaddleNLP's ``label.txt``)."""
    path = Path(path)
    _need_file(path, "label file")
    names = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if len(set(names)) != len(names):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise DataError(f"{path} lists labels more than once: {dupes}")
    if not names:
        raise DataError(f"{path} is empty; expected one label name per line")
    return names
