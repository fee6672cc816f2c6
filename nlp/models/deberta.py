"""DeBERTa-v3 (xsmall, small, base): disentangled attention with ELECTRA-style pre-training, on ``DebertaV2``.

DeBERTaV3: Improving DeBERTa using ELECTRA-Style Pre-Training with Gradient-Disentangled Embedding Sharing,
https://arxiv.org/abs/2111.09543. Config values are those of ``microsoft/deberta-v3-*``; the sequence head adds a
context pooler (``pooler``), which the released encoders do not carry and which is therefore part of the head.
Reference scores are from the model cards where they are stated consistently (base only).
"""

from __future__ import annotations

from oarkit.core.registry import PretrainedWeights
from oarkit.nlp.models.builder import architecture, register_transformer

PAPER = ("DeBERTaV3: Improving DeBERTa using ELECTRA-Style Pre-Training with Gradient-Disentangled Embedding "
         "Sharing, https://arxiv.org/abs/2111.09543")

_V3 = {"vocab_size": 128100, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
       "max_position_embeddings": 512, "type_vocab_size": 0, "layer_norm_eps": 1e-7, "relative_attention": True,
       "max_relative_positions": -1, "position_buckets": 256, "norm_rel_ebd": "layer_norm",
       "share_att_key": True, "pos_att_type": ["p2c", "c2p"], "position_biased_input": False, "pad_token_id": 0}

for _size, _layers, _hidden, _heads, _metrics in (
    ("xsmall", 12, 384, 6, {}),
    ("small", 6, 768, 12, {}),
    ("base", 12, 768, 12, {"mnli_m": 90.6, "squad2_f1": 88.4}),
):
    register_transformer(
        f"deberta_v3_{_size}", arch=architecture("DebertaV2", head_modules=("pooler", "classifier", "qa_outputs")),
        config={**_V3, "num_hidden_layers": _layers, "hidden_size": _hidden, "num_attention_heads": _heads,
                "intermediate_size": 4 * _hidden},
        family="deberta_v3", paper=PAPER, metrics=_metrics,
        metrics_source="microsoft/deberta-v3-base model card (dev sets)" if _metrics else "",
        weights=PretrainedWeights(hub_id=f"microsoft/deberta-v3-{_size}", file_name="pytorch_model.bin", format="pth",
                                  license="mit", source="Microsoft"))
