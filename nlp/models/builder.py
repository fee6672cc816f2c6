"""One builder for every registered text encoder: a transformers config per variant, the task head at build time.

A variant is a transformers architecture (config class and one model class per head) plus the config values of the
released checkpoint, so ``create_model("nlp/ernie_3_0_medium_zh", head="token_classification", num_classes=9)``
builds offline. ``pretrained="<dir>"`` (a Hugging Face model directory with ``model.safetensors``) loads the weights
through the core hub; :func:`transformer_state_filter` maps a checkpoint's names onto the chosen head's module
(``bert.encoder...`` vs ``encoder...``) and drops what no fine-tuning head uses (MLM heads, an absent pooler).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from oarkit.core.errors import ConfigError, did_you_mean
from oarkit.core.registry import PretrainedWeights, TextInput, register_model

#: the task heads every encoder offers; ``encoder`` is the bare model (hidden states, no head)
HEADS = ("encoder", "sequence_classification", "token_classification", "question_answering")
#: heads whose output size is the number of classes
CLASS_HEADS = ("sequence_classification", "token_classification")
#: checkpoint names that belong to pre-training only, or to optional parts a head may lack
_OPTIONAL = re.compile(r"(^|\.)(cls|lm_head|predictions|generator_\w+|discriminator_predictions|sop_classifier|"
                       r"mask_predictions|pooler)(\.|$)|(^|\.)(position_ids|token_type_ids)$")
#: base-model prefixes of released checkpoints, any of which may sit in front of an encoder's own names
_SOURCE_PREFIXES = ("bert", "ernie", "ernie_m", "roberta", "albert", "electra", "deberta", "encoder", "model")


@dataclass(frozen=True)
class Architecture:
    """A transformers model family: its config class and the model class behind each head.

    Attributes:
        config_class: the ``PretrainedConfig`` subclass.
        classes: head name -> model class (every name in :data:`HEADS`).
        head_modules: module prefixes of the task heads, re-initialised when the classes differ.
    """

    config_class: type
    classes: Mapping[str, type]
    head_modules: tuple[str, ...] = ("classifier", "qa_outputs")

    def config_keys(self) -> set[str]:
        """The keyword arguments the config class accepts (typos are refused, not silently kept)."""
        return {n for n, p in inspect.signature(self.config_class.__init__).parameters.items()
                if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and n != "self"}


def architecture(prefix: str, *, head_modules: tuple[str, ...] = ("classifier", "qa_outputs")) -> Architecture:
    """The :class:`Architecture` of a transformers family from its class-name prefix (``Bert``, ``Ernie``, ...)."""
    import transformers

    names = {"encoder": "Model", "sequence_classification": "ForSequenceClassification",
             "token_classification": "ForTokenClassification", "question_answering": "ForQuestionAnswering"}
    classes = {head: getattr(transformers, f"{prefix}{suffix}") for head, suffix in names.items()}
    return Architecture(getattr(transformers, f"{prefix}Config"), classes, head_modules)


@dataclass
class TransformerFactory:
    """Builds one registered variant with the requested head (what ``create_model`` calls).

    Attributes:
        arch: the transformers family.
        config: the released checkpoint's config values.
    """

    arch: Architecture
    config: dict[str, Any] = field(default_factory=dict)

    def __call__(self, *, num_classes: int = 2, head: str = "sequence_classification",
                 **overrides: Any) -> nn.Module:
        """Build the model.

        Args:
            num_classes: outputs of a classification head (ignored by ``encoder`` and ``question_answering``).
            head: one of :data:`HEADS`.
            **overrides: config values that replace the registered ones (``hidden_size=32`` for tests,
                ``vocab_size`` for a tokenizer trained from scratch, ``classifier_dropout``, ...).
        """
        if head not in HEADS:
            raise ConfigError(f"head={head!r} is not one of {list(HEADS)}.{did_you_mean(head, HEADS)}")
        known = self.arch.config_keys() | set(self.config)
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ConfigError(f"{self.arch.config_class.__name__} has no option {unknown[0]!r}."
                              f"{did_you_mean(unknown[0], known)}")
        values = {**self.config, **overrides}
        if head in CLASS_HEADS:
            values["num_labels"] = int(num_classes)
        return self.arch.classes[head](self.arch.config_class(**values))


def encoder_of(model: nn.Module) -> nn.Module:
    """The bare encoder inside a head model (``model.bert``), or the model itself when it is one."""
    prefix = getattr(model, "base_model_prefix", "")
    return getattr(model, prefix, model) if prefix else model


def transformer_state_filter(state: dict[str, torch.Tensor], model: nn.Module) -> dict[str, torch.Tensor]:
    """Rename a released checkpoint onto ``model`` and drop the parts no fine-tuning head uses.

    Each checkpoint name is tried as is, under the model's base prefix (``embeddings.x`` -> ``bert.embeddings.x``)
    and with a known source prefix removed (``bert.embeddings.x`` -> ``embeddings.x`` for a bare encoder); the
    first that names one of the model's tensors wins. Names that match nothing are dropped only when they belong to
    pre-training heads or optional parts (MLM heads, a pooler the head lacks, position-id buffers); anything else
    is kept, so that loading reports it as unexpected instead of silently ignoring it.
    """
    own = set(model.state_dict())
    prefix = getattr(model, "base_model_prefix", "")
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        key = key.removeprefix("module.")
        candidates = [key, f"{prefix}.{key}" if prefix else key]
        for source in _SOURCE_PREFIXES:
            if key.startswith(source + "."):
                rest = key[len(source) + 1:]
                candidates += [rest, f"{prefix}.{rest}" if prefix else rest]
        target = next((c for c in candidates if c in own), None)
        if target is not None:
            out[target] = value
        elif not _OPTIONAL.search(key):
            out[key] = value
    return out


def position_limit(arch: Architecture, config: Mapping[str, Any]) -> int:
    """The longest token sequence a config's position table embeds (RoBERTa-style models number positions from
    ``pad_token_id + 1``)."""
    positions = int(config.get("max_position_embeddings", 512))
    if "Roberta" in arch.config_class.__name__:
        positions -= int(config.get("pad_token_id", 1)) + 1
    return positions


def register_transformer(name: str, *, arch: Architecture, config: dict[str, Any], family: str, paper: str,
                         weights: PretrainedWeights, metrics: dict[str, float] | None = None,
                         metrics_source: str = "", tags: tuple[str, ...] = (), paddle_mapping: Any = None,
                         pretrained_loader: Callable[..., Any] | None = None) -> Callable[..., nn.Module]:
    """Register ``nlp/<name>``: a config-built transformers encoder with its pretrained entry.

    Args:
        name: the variant (``ernie_3_0_medium_zh``); the registry name is ``nlp/<name>``.
        arch: the transformers family (see :func:`architecture`).
        config: the released checkpoint's config values.
        family: architecture family, for tables and test sampling.
        paper: title and link.
        weights: where the released weights live (hub id, file, licence, source).
        metrics: reference scores of the weights (``{"clue_avg": 72.49}``); empty when none is published.
        metrics_source: where the reference scores come from.
        tags: ``large`` keeps a model out of the fast full-size test sample.
        paddle_mapping: how PaddleNLP checkpoints of the family map onto it (an ``oarkit.core.interop.PaddleMapping``).
        pretrained_loader: where ``pretrained=True`` finds the weights when not only in the cache or on the hub (a
            :class:`~oarkit.nlp.models.packaged.PackagedModelDir`: a package that ships them offline).
    """
    factory = TransformerFactory(arch, dict(config))
    # The default head is a sequence classifier: the card's task is text classification; the same weights serve
    # every text task through ``head=``.
    text = TextInput(max_length=position_limit(arch, config), tokenizer=weights.hub_id)
    register_model(f"nlp/{name}", factory, task="nlp/text_classification", input_spec=text, family=family,
                   weights=weights, num_classes=2,
                   metrics=dict(metrics or {}), metrics_source=metrics_source, paper=paper,
                   classifier=arch.head_modules, tags=("text", *tags), label_names="",
                   state_dict_filter=transformer_state_filter, paddle_mapping=paddle_mapping,
                   pretrained_loader=pretrained_loader)
    return factory
