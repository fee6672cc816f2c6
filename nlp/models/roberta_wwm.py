"""Chinese RoBERTa-wwm-ext (base and large): BERT's architecture trained RoBERTa-style with whole-word masking.

Pre-Training with Whole Word Masking for Chinese BERT, https://arxiv.org/abs/1906.08101; weights by HFL
(``hfl/chinese-roberta-wwm-ext``). The checkpoints are ``BertModel`` checkpoints, so the variants use transformers'
``Bert`` classes. CLUE averages: PaddleNLP's dev-set table (``model_zoo/ernie-3.0/README.md``).
"""

from __future__ import annotations

from oarkit.core.registry import PretrainedWeights
from oarkit.nlp.models.bert import bert_config
from oarkit.nlp.models.builder import architecture, register_transformer

PAPER = "Pre-Training with Whole Word Masking for Chinese BERT, https://arxiv.org/abs/1906.08101"
SOURCE = "PaddleNLP model_zoo/ernie-3.0/README.md (CLUE dev set, average of 10 tasks)"

for _name, _hub, _size, _clue, _tags in (
    ("chinese_roberta_wwm_ext", "hfl/chinese-roberta-wwm-ext", (12, 768, 12), 74.11, ()),
    ("chinese_roberta_wwm_ext_large", "hfl/chinese-roberta-wwm-ext-large", (24, 1024, 16), 76.61, ("large",)),
):
    register_transformer(
        _name, arch=architecture("Bert"), config=bert_config(*_size, vocab_size=21128), family="chinese_roberta",
        paper=PAPER, metrics={"clue_avg": _clue}, metrics_source=SOURCE, tags=_tags,
        weights=PretrainedWeights(hub_id=_hub, file_name="pytorch_model.bin", format="pth", license="apache-2.0",
                                  source="HFL (Joint Laboratory of HIT and iFLYTEK Research)"))
