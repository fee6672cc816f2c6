"""PaddleNLP's ERNIE checkpoints (ERNIE 1.0, 2.0, 3.0 and UIE) onto transformers' ``Ernie`` classes and oarkit's UIE.

PaddleNLP 2.8.1 (``paddlenlp/transformers/ernie/modeling.py``) builds ERNIE from Paddle's ``nn.TransformerEncoder``
(``encoder.layers.N.self_attn.q_proj``, ``norm1``, ``linear1``, ...), where transformers has BERT's layout
(``encoder.layer.N.attention.self.query``, ...). What else differs, each reproduced here and tested against
PaddleNLP's own eval forward (tests/interop/test_paddle_parity_nlp.py):

- LayerNorm epsilon: every LayerNorm is built with Paddle's default 1e-5, then ``ErniePretrainedModel._init_weights``
  sets ``_epsilon = 1e-12`` on all of them, which is what a model built by PaddleNLP or loaded with
  ``from_pretrained`` runs (``low_cpu_mem_usage=True`` skips that step and leaves 1e-5). No layer reads the config's
  ``layer_norm_eps``. Converted models are built with 1e-12.
- Padding embedding: Paddle's ``nn.Embedding(padding_idx=pad)`` returns zeros for the pad id whatever that row of
  the weight holds; torch's returns the row. The converted word-embedding row of the pad id is zeroed.
- Activation: ``hidden_act`` names the same functions on both sides (``gelu`` is the exact erf form in Paddle's
  ``F.gelu`` and transformers' ``GELUActivation``; ERNIE 1.0 uses ``relu``).
- Task types (ERNIE 3.0, UIE): without ``task_type_ids`` PaddleNLP fills ``config.task_id`` and transformers zeros,
  so a config with another ``task_id`` is refused rather than silently changed.
- Attention mask: PaddleNLP adds -1e4 at padded keys, transformers the dtype's minimum; both give those keys zero
  weight in float32.
- ``config.json`` is written with ``use_diff``: values equal to PaddleNLP's ``ErnieConfig`` defaults (which are not
  transformers') may be absent, so they are filled from :data:`PADDLENLP_ERNIE_DEFAULTS`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from torch import nn

from oarkit.core.errors import ConfigError
from oarkit.core.interop import PaddleMapping

SOURCE = "paddlenlp 2.8.1 paddlenlp/transformers/ernie/modeling.py"
#: PaddleNLP 2.8.1 ``ErnieConfig.__init__`` defaults (``ernie/configuration.py``)
PADDLENLP_ERNIE_DEFAULTS: dict[str, Any] = {
    "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "task_id": 0,
    "intermediate_size": 3072, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 512, "task_type_vocab_size": 3, "type_vocab_size": 16, "initializer_range": 0.02,
    "pad_token_id": 0, "pool_act": "tanh", "fuse": False, "use_task_id": False,
}
#: the epsilon of every LayerNorm in a PaddleNLP ERNIE (set by ``ErniePretrainedModel._init_weights``)
PADDLENLP_LAYER_NORM_EPS = 1e-12
#: the config values that become transformers ``ErnieConfig`` values as they are
_CONFIG_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
                "type_vocab_size", "use_task_id", "task_type_vocab_size", "initializer_range", "pad_token_id")
#: PaddleNLP model class -> (oarkit head, task id)
ARCHITECTURES = {
    "ErnieModel": ("encoder", "nlp/text_classification"),
    "ErnieForPretraining": ("encoder", "nlp/text_classification"),
    "ErnieForMaskedLM": ("encoder", "nlp/text_classification"),
    "ErnieForSequenceClassification": ("sequence_classification", "nlp/text_classification"),
    "ErnieForTokenClassification": ("token_classification", "nlp/token_classification"),
    "ErnieForQuestionAnswering": ("question_answering", "nlp/question_answering"),
    "UIE": ("uie", "nlp/information_extraction"),
}
# Paddle's nn.TransformerEncoderLayer names -> BERT's, inside the encoder
_LAYER_RENAMES = (
    (r"^embeddings\.layer_norm\.", "embeddings.LayerNorm."),
    (r"^encoder\.layers\.(\d+)\.self_attn\.q_proj\.", r"encoder.layer.\1.attention.self.query."),
    (r"^encoder\.layers\.(\d+)\.self_attn\.k_proj\.", r"encoder.layer.\1.attention.self.key."),
    (r"^encoder\.layers\.(\d+)\.self_attn\.v_proj\.", r"encoder.layer.\1.attention.self.value."),
    (r"^encoder\.layers\.(\d+)\.self_attn\.out_proj\.", r"encoder.layer.\1.attention.output.dense."),
    (r"^encoder\.layers\.(\d+)\.norm1\.", r"encoder.layer.\1.attention.output.LayerNorm."),
    (r"^encoder\.layers\.(\d+)\.linear1\.", r"encoder.layer.\1.intermediate.dense."),
    (r"^encoder\.layers\.(\d+)\.linear2\.", r"encoder.layer.\1.output.dense."),
    (r"^encoder\.layers\.(\d+)\.norm2\.", r"encoder.layer.\1.output.LayerNorm."),
)
_ENCODER_NAME = re.compile(r"^(embeddings|encoder\.layers|pooler)\.")


def _encoder_prefix(model: nn.Module) -> str:
    """Where the ``ErnieModel`` sits inside ``model`` (``ernie.``, ``encoder.`` or ``""``)."""
    from transformers import ErnieModel

    for name, module in model.named_modules():
        if isinstance(module, ErnieModel):
            return f"{name}." if name else ""
    raise ConfigError(f"{type(model).__name__} holds no transformers ErnieModel, so PaddleNLP ERNIE weights do not "
                      "map onto it")


def _rename_onto(prefix: str, has_pooler: bool, qa: bool) -> Callable[[str], str | None]:
    """A Paddle name -> target name function for an encoder at ``prefix`` (``qa``: the target's extractive QA head
    is transformers' ``qa_outputs``, PaddleNLP's ``classifier``)."""
    patterns = [(re.compile(p), r) for p, r in _LAYER_RENAMES]

    def rename(name: str) -> str | None:
        if name.startswith("ernie."):  # a head model's encoder
            inner = name[len("ernie."):]
        elif _ENCODER_NAME.match(name):  # a bare ErnieModel
            inner = name
        elif qa and name.startswith("classifier."):
            return "qa_outputs." + name[len("classifier."):]
        else:
            return name  # a head (classifier, linear_start, linear_end): the same names on both sides
        if inner.startswith("pooler.") and not has_pooler:
            return None  # a token classifier, UIE: PaddleNLP's ErnieModel always has a pooler, theirs is unused
        for pattern, replacement in patterns:
            inner = pattern.sub(replacement, inner)
        return prefix + inner

    return rename


def _zero_row(row: int) -> Callable[[np.ndarray], np.ndarray]:
    def zero(weight: np.ndarray) -> np.ndarray:
        weight = np.array(weight, copy=True)
        weight[row] = 0.0
        return weight

    return zero


def bind_ernie(model: nn.Module) -> PaddleMapping:
    """The mapping of one built model: its encoder's prefix, whether it has a pooler, and its pad id."""
    prefix = _encoder_prefix(model)
    own = model.state_dict()
    config = model.config
    return PaddleMapping(
        renames=[_rename_onto(prefix, f"{prefix}pooler.dense.weight" in own, "qa_outputs.weight" in own)],
        drop=(r"^cls\.",),  # pre-training heads (masked LM, next sentence)
        transforms=[(rf"^{re.escape(prefix)}embeddings\.word_embeddings\.weight$",
                     _zero_row(int(config.pad_token_id or 0)))],
        source=SOURCE)


def architecture_of(config: dict[str, Any]) -> str:
    """The PaddleNLP model class a config was saved from (``architectures`` or the old ``init_class``)."""
    names = config.get("architectures") or [config.get("init_class") or "ErnieModel"]
    name = str(names[0])
    if name not in ARCHITECTURES:
        raise ConfigError(f"PaddleNLP class {name!r} is not one oarkit converts; known: {', '.join(ARCHITECTURES)}")
    return name


def _num_classes(config: dict[str, Any]) -> int | None:
    for key in ("num_classes", "num_labels"):
        if config.get(key) is not None:
            return int(config[key])
    return len(config["id2label"]) if config.get("id2label") else None


def ernie_kwargs(config: dict[str, Any], *, uie: bool = False) -> dict[str, Any]:
    """Registry keyword arguments (transformers ``ErnieConfig`` values, head, classes) of a PaddleNLP ERNIE config.

    Args:
        config: ``config.json`` / ``model_config.json`` values (flattened).
        uie: the target is a UIE model (no ``head``, no classes).

    Raises:
        ConfigError: a value transformers' Ernie cannot reproduce, or a UIE checkpoint for an ERNIE model (or the
            other way round).
    """
    values = {**PADDLENLP_ERNIE_DEFAULTS, **{k: v for k, v in config.items() if v is not None}}
    for key, supported in (("task_id", 0), ("pool_act", "tanh"), ("fuse", False)):
        if values[key] != supported:
            raise ConfigError(f"PaddleNLP config {key}={values[key]!r}: only {key}={supported!r} converts onto "
                              "transformers' Ernie")
    kwargs = {k: values[k] for k in _CONFIG_KEYS}
    kwargs["layer_norm_eps"] = PADDLENLP_LAYER_NORM_EPS
    arch = architecture_of(config)
    if uie != (arch == "UIE"):
        want = "a UIE model (nlp/uie_*)" if arch == "UIE" else "an ERNIE model (nlp/ernie_*)"
        raise ConfigError(f"this checkpoint is PaddleNLP's {arch}: convert it with --model naming {want}")
    if not uie:
        kwargs["head"] = ARCHITECTURES[arch][0]
        classes = _num_classes(config)
        if classes is not None and kwargs["head"] != "encoder":
            kwargs["num_classes"] = classes
    return kwargs


def _labels(config: dict[str, Any], classes: int | None) -> list[str]:
    id2label = config.get("id2label") or {}
    labels = [id2label.get(str(i), id2label.get(i)) for i in range(classes or 0)]
    return [str(x) for x in labels] if labels and all(x is not None for x in labels) else []


def ernie_source_meta(src: Path, config: dict[str, Any], *, prompt_lang: str | None = None) -> dict[str, Any]:
    """meta.json entries of a PaddleNLP ERNIE / UIE directory: task id, labels, tokenizer and max length."""
    from oarkit.nlp.tokenizer import paddlenlp_tokenizer, tokenizer_spec

    arch = architecture_of(config) if config else "ErnieModel"
    task = ARCHITECTURES[arch][1]
    head = ARCHITECTURES[arch][0]
    classes = _num_classes(config) if head in ("sequence_classification", "token_classification") else None
    max_length = min(512, int(config.get("max_position_embeddings") or 512))
    meta: dict[str, Any] = {"task": task, "nlp_task": task.split("/", 1)[1], "labels": _labels(config, classes),
                            "preprocessing": {"max_length": max_length}}
    folder = src if src.is_dir() else src.parent
    if (folder / "vocab.txt").is_file():  # PaddleNLP's tokenizer.save_pretrained beside the weights
        meta["preprocessing"]["tokenizer"] = tokenizer_spec(paddlenlp_tokenizer(folder, max_length=max_length))
    if prompt_lang is not None:
        meta["prompt_lang"] = prompt_lang
    return meta


#: ERNIE 1.0 / 2.0 / 3.0 in PaddleNLP's ``ErnieModel`` / ``ErnieFor...`` layouts onto the registered ERNIE models
ERNIE_MAPPING = PaddleMapping(bind=bind_ernie, model_kwargs=ernie_kwargs, source_meta=ernie_source_meta,
                              source=SOURCE)


def uie_mapping(prompt_lang: str) -> PaddleMapping:
    """PaddleNLP's ``UIE`` (``ernie.*``, ``linear_start``, ``linear_end``) onto oarkit's UIE."""
    return PaddleMapping(bind=bind_ernie, model_kwargs=functools.partial(ernie_kwargs, uie=True),
                         source_meta=functools.partial(ernie_source_meta, prompt_lang=prompt_lang), source=SOURCE)
