"""The examples the readers produce: one small record type per data format, each remembering where it came from."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TextExample:
    """A text (or a text pair) with its class label; ``label`` is ``None`` for unlabelled splits."""

    text: str
    text_pair: str | None = None
    label: str | None = None
    source: str = ""  # "file:line", for error messages


@dataclass(frozen=True)
class TaggedSentence:
    """A sentence split into words, with one BIO tag per word (CoNLL)."""

    words: tuple[str, ...]
    tags: tuple[str, ...]
    source: str = ""


@dataclass(frozen=True)
class QAExample:
    """A SQuAD question over a context; ``answers`` are ``(text, character start)`` pairs (none: unanswerable)."""

    id: str
    question: str
    context: str
    answers: tuple[tuple[str, int], ...] = ()
    source: str = ""


@dataclass(frozen=True)
class Entity:
    """A labelled character span ``[start, end)`` of a text (doccano)."""

    id: int | str
    start: int
    end: int
    label: str


@dataclass(frozen=True)
class Relation:
    """A typed relation from one entity to another (doccano), by entity id."""

    from_id: int | str
    to_id: int | str
    type: str


@dataclass(frozen=True)
class AnnotatedText:
    """A doccano record: a text with its entities and relations."""

    text: str
    entities: tuple[Entity, ...] = ()
    relations: tuple[Relation, ...] = ()
    source: str = ""


@dataclass(frozen=True)
class PromptExample:
    """A UIE training example: the spans of ``text`` that answer ``prompt`` (none: a negative example)."""

    prompt: str
    text: str
    spans: tuple[tuple[int, int], ...] = field(default=())  # character [start, end)
    source: str = ""
