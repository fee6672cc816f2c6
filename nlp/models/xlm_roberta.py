"""XLM-RoBERTa (base, large): RoBERTa trained on CommonCrawl in 100 languages.

Unsupervised Cross-lingual Representation Learning at Scale, https://arxiv.org/abs/1911.02116. Config values are
those of ``FacebookAI/xlm-roberta-*``; the MLM head (``lm_head``) is dropped under a task head.
"""

from __future__ import annotations

from oarkit.core.registry import PretrainedWeights
from oarkit.nlp.models.builder import architecture, register_transformer

PAPER = "Unsupervised Cross-lingual Representation Learning at Scale, https://arxiv.org/abs/1911.02116"

for _size, _layers, _hidden, _heads, _tags in (("base", 12, 768, 12, ()), ("large", 24, 1024, 16, ("large",))):
    register_transformer(
        f"xlm_roberta_{_size}", arch=architecture("XLMRoberta"), family="xlm_roberta", paper=PAPER, tags=_tags,
        config={"vocab_size": 250002, "hidden_size": _hidden, "num_hidden_layers": _layers,
                "num_attention_heads": _heads, "intermediate_size": 4 * _hidden, "hidden_act": "gelu",
                "max_position_embeddings": 514, "type_vocab_size": 1, "pad_token_id": 1, "layer_norm_eps": 1e-5},
        weights=PretrainedWeights(hub_id=f"FacebookAI/xlm-roberta-{_size}", file_name="model.safetensors",
                                  license="mit", source="Meta AI (fairseq)"))
