"""UIE: universal information extraction as prompt-conditioned span pointing over an ERNIE encoder.

Unified Structure Generation for Universal Information Extraction, https://arxiv.org/abs/2203.12277; this is
PaddleNLP's extractive variant (``paddlenlp/taskflow/information_extraction.py``, ``model_zoo/uie``): the input is
``[CLS] prompt [SEP] text [SEP]``, and two position-wise linear pointers score every token as the start and the end
of an answer to the prompt. Entities, relations and events are all prompts (``时间``, ``谷爱凌的奖牌``);
decoding and the schema walk live in :mod:`oarkit.nlp.extraction`. Encoders are ERNIE 3.0's sizes (``uie_base``
... ``uie_nano``) and ERNIE 2.0 English (``uie_base_en``); the released weights are PaddlePaddle files, and a
PaddleNLP UIE directory converts with ``oarkit convert paddle`` (:mod:`.ernie_paddle`).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from transformers.modeling_outputs import QuestionAnsweringModelOutput

from oarkit.core.errors import ConfigError, did_you_mean
from oarkit.core.registry import PretrainedWeights, TextInput, register_model
from oarkit.nlp.models.builder import transformer_state_filter
from oarkit.nlp.models.ernie import ernie3_config
from oarkit.nlp.models.ernie_paddle import PADDLENLP_LAYER_NORM_EPS, uie_mapping

PAPER = "Unified Structure Generation for Universal Information Extraction, https://arxiv.org/abs/2203.12277"
_URL = "https://bj.bcebos.com/paddlenlp/taskflow/information_extraction/{}/model_state.pdparams"


class UIE(nn.Module):
    """An encoder with start and end pointers; ``forward`` returns their logits per token.

    Args:
        encoder: a transformers encoder (``ErnieModel``) returning ``last_hidden_state``.
    """

    #: where the encoder sits, so pretrained encoder checkpoints map onto ``encoder.*``
    base_model_prefix = "encoder"

    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder
        hidden = int(encoder.config.hidden_size)
        self.linear_start = nn.Linear(hidden, 1)
        self.linear_end = nn.Linear(hidden, 1)

    @property
    def config(self) -> Any:
        return self.encoder.config

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> QuestionAnsweringModelOutput:
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state
        return QuestionAnsweringModelOutput(start_logits=self.linear_start(hidden).squeeze(-1),
                                            end_logits=self.linear_end(hidden).squeeze(-1))


@dataclass
class UIEFactory:
    """Builds a UIE variant from its encoder config (``num_classes`` is accepted and unused: prompts are the labels)."""

    config: dict[str, Any] = field(default_factory=dict)

    def __call__(self, *, num_classes: int = 1, **overrides: Any) -> UIE:
        from transformers import ErnieConfig, ErnieModel

        known = set(self.config) | set(inspect.signature(ErnieConfig.__init__).parameters) - {"self", "kwargs"}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ConfigError(f"UIE has no encoder option {unknown[0]!r}.{did_you_mean(unknown[0], known)}")
        return UIE(ErnieModel(ErnieConfig(**{**self.config, **overrides}), add_pooling_layer=False))


_ERNIE2_EN = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
              "intermediate_size": 3072, "hidden_act": "gelu", "max_position_embeddings": 512, "type_vocab_size": 4,
              "use_task_id": False, "pad_token_id": 0, "layer_norm_eps": PADDLENLP_LAYER_NORM_EPS}

# (variant, encoder config, weights folder)
_UIE = (
    ("nano", ernie3_config(4, 312, 12, 1248, 16), "uie_nano_v1.1"),
    ("micro", ernie3_config(4, 384, 12, 1536, 16), "uie_micro_v1.1"),
    ("mini", ernie3_config(6, 384, 12, 1536, 16), "uie_mini_v1.1"),
    ("medium", ernie3_config(6, 768, 12, 3072, 16), "uie_medium_v1.1"),
    ("base", ernie3_config(12, 768, 12, 3072, 3), "uie_base_v1.1"),
    ("base_en", _ERNIE2_EN, "uie_base_en_v1.2"),
)

for _name, _config, _folder in _UIE:
    register_model(
        f"nlp/uie_{_name}", UIEFactory(dict(_config)), task="nlp/information_extraction", family="uie", paper=PAPER,
        input_spec=TextInput(max_length=_config["max_position_embeddings"]),
        num_classes=1, classifier=("linear_start", "linear_end"), tags=("text", "paddle-weights"),
        weights=PretrainedWeights(url=_URL.format(_folder), format="pdparams", license="apache-2.0",
                                  source="Baidu PaddleNLP Taskflow"),
        state_dict_filter=transformer_state_filter, paddle_mapping=uie_mapping("en" if _name.endswith("_en") else "zh"))
