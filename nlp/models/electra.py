"""ELECTRA discriminators (small, base): encoders pre-trained by replaced-token detection.

ELECTRA: Pre-training Text Encoders as Discriminators Rather Than Generators, https://arxiv.org/abs/2003.10555.
Config values are those of ``google/electra-*-discriminator``; their pre-training head
(``discriminator_predictions``) is dropped when the weights are loaded under a task head.
"""

from __future__ import annotations

from oarkit.core.registry import PretrainedWeights
from oarkit.nlp.models.builder import architecture, register_transformer

PAPER = "ELECTRA: Pre-training Text Encoders as Discriminators Rather Than Generators, https://arxiv.org/abs/2003.10555"

for _size, _embed, _hidden, _heads, _ffn in (("small", 128, 256, 4, 1024), ("base", 768, 768, 12, 3072)):
    register_transformer(
        f"electra_{_size}", arch=architecture("Electra"), family="electra", paper=PAPER,
        config={"vocab_size": 30522, "embedding_size": _embed, "hidden_size": _hidden, "num_hidden_layers": 12,
                "num_attention_heads": _heads, "intermediate_size": _ffn, "hidden_act": "gelu",
                "max_position_embeddings": 512, "type_vocab_size": 2, "pad_token_id": 0},
        weights=PretrainedWeights(hub_id=f"google/electra-{_size}-discriminator", file_name="pytorch_model.bin",
                                  format="pth", license="apache-2.0", source="Google Research"))
