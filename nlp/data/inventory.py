"""What the dataset doctor (:mod:`oarkit.core.data.doctor`) examines of text splits: each example's text and the
classes it holds (a label, the entity types of its tags or annotations), empty texts and unknown labels."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from oarkit.core.data.doctor import DataInventory, Finding, InventorySample

from .readers import read_classification, read_conll, read_doccano, read_squad

if TYPE_CHECKING:
    from .module import TextDataModule


def _split_path(data: TextDataModule, split: str) -> Path | None:
    """The split's file; ``None`` for a validation split that is not there (a missing training split raises)."""
    if split != "train" and not data.has_split(split):
        return None
    return data.split_file(split)


def _empty(items: list[tuple[str, str]], split: str) -> list[Finding]:
    """A warning for the ``(source, text)`` pairs whose text is blank."""
    blank = [source for source, text in items if not text.strip()]
    if not blank:
        return []
    return [Finding("warning", "nlp/empty_text", f"{len(blank)} example(s) have an empty text: the model learns "
                    "the label from nothing", "write the text, or remove the lines", blank, len(blank), split)]


def _unknown(bad: list[tuple[str, str]], known: list[str], split: str) -> list[Finding]:
    if not bad:
        return []
    names = sorted({label for _, label in bad})
    return [Finding("error", "nlp/unknown_label", f"{len(bad)} example(s) have labels that are not among the "
                    f"{len(known)} training labels: {names[:10]}", "fix the labels, or add them to the label file "
                    "(data.label_file)", [source for source, _ in bad], len(bad), split)]


def classification_inventory(data: TextDataModule, split: str) -> DataInventory | None:
    """Texts (or pairs) with their label id."""
    path = _split_path(data, split)
    if path is None:
        return None
    examples = read_classification(path, require_label=True)
    labels = list(data.labels)
    index = {name: i for i, name in enumerate(labels)}
    samples = [InventorySample(text=" ".join(t for t in (e.text, e.text_pair) if t),
                               labels=(index[e.label],) if e.label in index else ()) for e in examples]
    findings = _empty([(e.source, e.text) for e in examples], split)
    findings += _unknown([(e.source, str(e.label)) for e in examples if e.label not in index], labels, split)
    return DataInventory(split, samples, labels, findings, source=str(path))


def token_inventory(data: TextDataModule, split: str) -> DataInventory | None:
    """Sentences with the entity types their BIO tags mark (``O`` is no class)."""
    path = _split_path(data, split)
    if path is None:
        return None
    sentences = read_conll(path)
    tags = list(data.labels)
    types = sorted({t[2:] for t in tags if t != "O"})
    index = {name: i for i, name in enumerate(types)}
    samples = [InventorySample(text=" ".join(s.words), labels=tuple(sorted({index[t[2:]] for t in s.tags
                                                                           if t[2:] in index})))
               for s in sentences]
    known = set(tags)
    findings = _empty([(s.source, " ".join(s.words)) for s in sentences], split)
    findings += _unknown([(s.source, t) for s in sentences for t in s.tags if t not in known], tags, split)
    return DataInventory(split, samples, types, findings, source=str(path))


def qa_inventory(data: TextDataModule, split: str) -> DataInventory | None:
    """Questions over their contexts (no classes)."""
    path = _split_path(data, split)
    if path is None:
        return None
    examples = read_squad(path)
    samples = [InventorySample(text=f"{e.question} {e.context}") for e in examples]
    findings = _empty([(e.source, e.question) for e in examples] + [(e.source, e.context) for e in examples], split)
    return DataInventory(split, samples, findings=findings, source=str(path))


def extraction_inventory(data: TextDataModule, split: str) -> DataInventory | None:
    """doccano texts with the entity and relation types they hold."""
    path = _split_path(data, split)
    if path is None:
        return None
    records = read_doccano(path)
    labels = list(data.labels)
    index = {name: i for i, name in enumerate(labels)}
    samples = []
    for r in records:
        held = {e.label for e in r.entities} | {x.type for x in r.relations}
        samples.append(InventorySample(text=r.text, labels=tuple(sorted(index[h] for h in held if h in index))))
    findings = _empty([(r.source, r.text) for r in records], split)
    return DataInventory(split, samples, labels, findings, source=str(path))
