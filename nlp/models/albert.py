"""ALBERT v2 (base, large): factorised embeddings and one Transformer layer shared across depth.

ALBERT: A Lite BERT for Self-supervised Learning of Language Representations, https://arxiv.org/abs/1909.11942.
Config values are those of the released ``albert/albert-*-v2`` checkpoints. No reference score is recorded: the
paper's v2 table reports an average over SQuAD, MNLI, SST-2 and RACE, not a GLUE score.
"""

from __future__ import annotations

from oarkit.core.registry import PretrainedWeights
from oarkit.nlp.models.builder import architecture, register_transformer

PAPER = "ALBERT: A Lite BERT for Self-supervised Learning of Language Representations, https://arxiv.org/abs/1909.11942"

for _size, _layers, _hidden, _heads, _tags in (("base", 12, 768, 12, ()), ("large", 24, 1024, 16, ("large",))):
    register_transformer(
        f"albert_{_size}_v2", arch=architecture("Albert"), family="albert", paper=PAPER, tags=_tags,
        config={"vocab_size": 30000, "embedding_size": 128, "hidden_size": _hidden, "num_hidden_layers": _layers,
                "num_attention_heads": _heads, "intermediate_size": 4 * _hidden, "hidden_act": "gelu_new",
                "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "max_position_embeddings": 512,
                "type_vocab_size": 2, "pad_token_id": 0},
        weights=PretrainedWeights(hub_id=f"albert/albert-{_size}-v2", file_name="model.safetensors",
                                  license="apache-2.0", source="Google Research"))
