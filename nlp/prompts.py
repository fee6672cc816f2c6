"""UIE prompts: how an entity type, a relation of a subject, or an event argument is asked.

PaddleNLP's convention, shared by training data and the schema walk at prediction time: an entity type is its own
prompt (``时间``, ``person``); a relation of a found subject is ``<subject>的<relation>`` in Chinese and
``<relation> of <subject>`` in English.
"""

from __future__ import annotations

import re

LANGS = ("zh", "en")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def has_cjk(text: str) -> bool:
    """Whether ``text`` contains a CJK ideograph."""
    return bool(_CJK.search(text))


def detect_lang(texts: list[str] | tuple[str, ...]) -> str:
    """``zh`` when any text contains CJK ideographs, else ``en``."""
    return "zh" if any(has_cjk(t) for t in texts) else "en"


def relation_prompt(subject: str, relation: str, lang: str) -> str:
    """The prompt that asks for the ``relation`` of ``subject``."""
    return f"{subject}的{relation}" if lang == "zh" else f"{relation} of {subject}"
