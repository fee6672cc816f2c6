"""From doccano records to UIE prompt examples: entity prompts, relation prompts and sampled negatives.

Following PaddleNLP's ``convert_ext_examples``: every entity type present in a text becomes a positive prompt with
its spans; every relation ``(subject, type, object)`` becomes the prompt ``relation_prompt(subject, type)`` answered
by the objects; entity types and relation types absent from a text are sampled as negative prompts (no spans), up to
``negative_ratio`` negatives per positive, so the pointers also learn to say "nothing".
"""

from __future__ import annotations

import random
from collections import defaultdict

from oarkit.nlp.data.examples import AnnotatedText, PromptExample
from oarkit.nlp.prompts import relation_prompt


def schema_of(records: list[AnnotatedText]) -> tuple[list[str], list[str]]:
    """The entity types and relation types used in ``records``, sorted."""
    entity_types = sorted({e.label for r in records for e in r.entities})
    relation_types = sorted({rel.type for r in records for rel in r.relations})
    return entity_types, relation_types


def prompt_examples(records: list[AnnotatedText], *, lang: str, negative_ratio: float = 1.0, seed: int = 0,
                    entity_types: list[str] | None = None,
                    relation_types: list[str] | None = None) -> list[PromptExample]:
    """The UIE examples of ``records`` (positives, then sampled negatives, per record).

    Args:
        records: doccano records.
        lang: ``zh`` or ``en``: the relation prompt template.
        negative_ratio: negative prompts per positive prompt of a record (0: none).
        seed: the negative sampling seed.
        entity_types, relation_types: the schema negatives are drawn from (default: the records' own).
    """
    rng = random.Random(seed)
    known_entities, known_relations = schema_of(records)
    entity_types = entity_types or known_entities
    relation_types = relation_types or known_relations
    out: list[PromptExample] = []
    for record in records:
        by_id = {e.id: e for e in record.entities}
        positives: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for e in record.entities:
            positives[e.label].append((e.start, e.end))
        subjects = {}
        for rel in record.relations:
            subject, obj = by_id[rel.from_id], by_id[rel.to_id]
            name = record.text[subject.start:subject.end]
            positives[relation_prompt(name, rel.type, lang)].append((obj.start, obj.end))
            subjects.setdefault(name, set()).add(rel.type)
        for prompt, spans in positives.items():
            out.append(PromptExample(prompt, record.text, tuple(sorted(set(spans))), record.source))
        candidates = [t for t in entity_types if t not in positives]
        candidates += [relation_prompt(s, t, lang) for s, types in subjects.items() for t in relation_types
                       if t not in types]
        wanted = min(len(candidates), round(negative_ratio * len(positives)))
        for prompt in rng.sample(candidates, wanted):
            out.append(PromptExample(prompt, record.text, (), record.source))
    return out
