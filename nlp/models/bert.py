"""BERT (base, large, Chinese) and the compact BERT family (tiny, mini, small, medium), on transformers' ``Bert``.

BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding, https://arxiv.org/abs/1810.04805
(GLUE test averages from its Table 1). The compact models: Well-Read Students Learn Better: On the Importance of
Pre-training Compact Models, https://arxiv.org/abs/1908.08962 (GLUE test scores from google-research/bert's
README). BERT-Base-Chinese's CLUE average is PaddleNLP's dev-set table (``model_zoo/ernie-3.0/README.md``).
"""

from __future__ import annotations

from oarkit.core.registry import PretrainedWeights
from oarkit.nlp.models.builder import architecture, register_transformer

BERT = "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding, https://arxiv.org/abs/1810.04805"
COMPACT = ("Well-Read Students Learn Better: On the Importance of Pre-training Compact Models, "
           "https://arxiv.org/abs/1908.08962")


def bert_config(layers: int, hidden: int, heads: int, *, vocab_size: int = 30522, max_positions: int = 512) -> dict:
    """transformers ``BertConfig`` values of a BERT size (feed-forward 4x hidden, GELU, two sentence types)."""
    return {"vocab_size": vocab_size, "hidden_size": hidden, "num_hidden_layers": layers,
            "num_attention_heads": heads, "intermediate_size": 4 * hidden, "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "max_position_embeddings": max_positions,
            "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0}


def _google(hub_id: str, file_name: str = "model.safetensors") -> PretrainedWeights:
    return PretrainedWeights(hub_id=hub_id, file_name=file_name, format="safetensors" if file_name.endswith(
        ".safetensors") else "pth", license="apache-2.0", source="Google Research")


register_transformer("bert_base_uncased", arch=architecture("Bert"), config=bert_config(12, 768, 12), family="bert",
                     paper=BERT, weights=_google("google-bert/bert-base-uncased"), metrics={"glue_test_avg": 79.6},
                     metrics_source="BERT paper, Table 1 (GLUE test)")
register_transformer("bert_large_uncased", arch=architecture("Bert"), config=bert_config(24, 1024, 16), family="bert",
                     paper=BERT, weights=_google("google-bert/bert-large-uncased"), metrics={"glue_test_avg": 82.1},
                     metrics_source="BERT paper, Table 1 (GLUE test)", tags=("large",))
register_transformer("bert_base_chinese", arch=architecture("Bert"), config=bert_config(12, 768, 12, vocab_size=21128),
                     family="bert", paper=BERT, weights=_google("google-bert/bert-base-chinese"),
                     metrics={"clue_avg": 72.57},
                     metrics_source="PaddleNLP model_zoo/ernie-3.0/README.md (CLUE dev set, average of 10 tasks)")

# (name, layers, hidden, heads, GLUE test score)
_COMPACT = (("tiny", 2, 128, 2, 64.2), ("mini", 4, 256, 4, 65.8), ("small", 4, 512, 8, 71.2),
            ("medium", 8, 512, 8, 73.5))
for _name, _layers, _hidden, _heads, _glue in _COMPACT:
    register_transformer(
        f"bert_{_name}_uncased", arch=architecture("Bert"), config=bert_config(_layers, _hidden, _heads),
        family="bert_compact", paper=COMPACT, metrics={"glue_test_avg": _glue},
        metrics_source="google-research/bert README, compact models (GLUE test)",
        weights=_google(f"google/bert_uncased_L-{_layers}_H-{_hidden}_A-{_heads}", "pytorch_model.bin"))
