"""ERNIE 1.0, ERNIE 2.0 (English), ERNIE 3.0 (the distilled xbase ... nano family) and ERNIE-M, on transformers'
``Ernie`` and ``XLMRoberta`` classes.

ERNIE: Enhanced Representation through Knowledge Integration, https://arxiv.org/abs/1904.09223 (1.0: BERT-base with
ReLU, two sentence types, 513 positions, an 18k Chinese vocabulary) and ERNIE 2.0: A Continual Pre-training
Framework for Language Understanding, https://arxiv.org/abs/1907.12412 (BERT's English vocabulary, four sentence
types). Their released weights are PaddleNLP files (``ernie/configuration.py`` gives the values and addresses); every
ERNIE here converts from a PaddleNLP model directory with ``oarkit convert paddle`` (:mod:`.ernie_paddle`).

ERNIE 3.0: Large-scale Knowledge Enhanced Pre-training for Language Understanding and Generation,
https://arxiv.org/abs/2107.02137; the small models are distilled with ERNIE-Tiny,
https://arxiv.org/abs/2106.02241. Their fine-tuning architecture is ERNIE 2.0's (BERT with four sentence types
and a task-type embedding), which transformers implements as ``ErnieModel(use_task_id=True)``. Config values are
PaddleNLP's (``paddlenlp/transformers/ernie/configuration.py``); the PyTorch weights are nghuyong's conversions on
the Hugging Face hub; the CLUE averages are PaddleNLP's dev-set table (``model_zoo/ernie-3.0/README.md``).

ERNIE-M: Enhanced Multilingual Representation by Aligning Cross-lingual Semantics with Monolingual Corpora,
https://arxiv.org/abs/2012.15674. transformers 5 dropped its ``ErnieM`` classes; the architecture (word and
position embeddings with positions starting at 2, no sentence types, a post-norm encoder with 4x feed-forward,
XLM-R's 250k vocabulary) is XLM-R's with a single sentence type, so the variants are built on ``XLMRoberta``. The
released weights are PaddlePaddle files, refused until a converter exists.
"""

from __future__ import annotations

from oarkit.core.registry import PretrainedWeights
from oarkit.nlp.models.builder import architecture, register_transformer
from oarkit.nlp.models.ernie_paddle import ERNIE_MAPPING, PADDLENLP_LAYER_NORM_EPS

ERNIE3 = ("ERNIE 3.0: Large-scale Knowledge Enhanced Pre-training for Language Understanding and Generation, "
          "https://arxiv.org/abs/2107.02137")
ERNIE_M = ("ERNIE-M: Enhanced Multilingual Representation by Aligning Cross-lingual Semantics with Monolingual "
           "Corpora, https://arxiv.org/abs/2012.15674")
CLUE_SOURCE = "PaddleNLP model_zoo/ernie-3.0/README.md (CLUE dev set, average of 10 tasks)"
ERNIE1 = "ERNIE: Enhanced Representation through Knowledge Integration, https://arxiv.org/abs/1904.09223"
ERNIE2 = "ERNIE 2.0: A Continual Pre-training Framework for Language Understanding, https://arxiv.org/abs/1907.12412"
_PADDLENLP_URL = "https://bj.bcebos.com/paddlenlp/models/transformers/{}.pdparams"

_ERNIE3_COMMON = {"hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
                  "max_position_embeddings": 2048, "type_vocab_size": 4, "use_task_id": True, "vocab_size": 40000,
                  "initializer_range": 0.02, "layer_norm_eps": PADDLENLP_LAYER_NORM_EPS, "pad_token_id": 0}

# (variant, layers, hidden, heads, feed-forward, task types, CLUE average, tags)
_ERNIE3 = (
    ("nano", 4, 312, 12, 1248, 16, 62.97, ()),
    ("micro", 4, 384, 12, 1536, 16, 64.21, ()),
    ("mini", 6, 384, 12, 1536, 16, 66.90, ()),
    ("medium", 6, 768, 12, 3072, 16, 72.49, ()),
    ("base", 12, 768, 12, 3072, 3, 76.05, ()),
    ("xbase", 20, 1024, 16, 4096, 16, 78.71, ("large",)),
)


def ernie3_config(layers: int, hidden: int, heads: int, ffn: int, task_types: int) -> dict:
    """The transformers ``ErnieConfig`` values of an ERNIE 3.0 size (also UIE's encoders)."""
    return {**_ERNIE3_COMMON, "num_hidden_layers": layers, "hidden_size": hidden, "num_attention_heads": heads,
            "intermediate_size": ffn, "task_type_vocab_size": task_types}


for _size, _layers, _hidden, _heads, _ffn, _tasks, _clue, _tags in _ERNIE3:
    register_transformer(
        f"ernie_3_0_{_size}_zh", arch=architecture("Ernie"),
        config=ernie3_config(_layers, _hidden, _heads, _ffn, _tasks), family="ernie_3_0", paper=ERNIE3,
        metrics={"clue_avg": _clue}, metrics_source=CLUE_SOURCE, tags=_tags,
        weights=PretrainedWeights(hub_id=f"nghuyong/ernie-3.0-{_size}-zh", file_name="pytorch_model.bin", format="pth",
                                  license="apache-2.0", source="Baidu PaddleNLP, converted to PyTorch by nghuyong"),
        paddle_mapping=ERNIE_MAPPING)

# ERNIE 1.0 and 2.0 as PaddleNLP's ERNIE_PRETRAINED_INIT_CONFIGURATION gives them (PaddleNLP's ErnieModel: no task
# types; every LayerNorm at 1e-12, see ernie_paddle).
_ERNIE_1_2 = (
    ("ernie_1_0_base_zh", ERNIE1, "ernie/ernie_v1_chn_base",
     {"vocab_size": 18000, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
      "intermediate_size": 3072, "hidden_act": "relu", "max_position_embeddings": 513, "type_vocab_size": 2}, ()),
    ("ernie_2_0_base_en", ERNIE2, "ernie_v2_base/ernie_v2_eng_base",
     {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
      "intermediate_size": 3072, "hidden_act": "gelu", "max_position_embeddings": 512, "type_vocab_size": 4}, ()),
    ("ernie_2_0_large_en", ERNIE2, "ernie_v2_large/ernie_v2_eng_large",
     {"vocab_size": 30522, "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
      "intermediate_size": 4096, "hidden_act": "gelu", "max_position_embeddings": 512, "type_vocab_size": 4},
     ("large",)),
)
for _name, _paper, _file, _config, _tags in _ERNIE_1_2:
    register_transformer(
        _name, arch=architecture("Ernie"),
        config={**_config, "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
                "layer_norm_eps": PADDLENLP_LAYER_NORM_EPS, "pad_token_id": 0, "use_task_id": False},
        family=_name.rsplit("_", 2)[0], paper=_paper, tags=(*_tags, "paddle-weights"),
        weights=PretrainedWeights(url=_PADDLENLP_URL.format(_file), format="pdparams", license="apache-2.0",
                                  source="Baidu PaddleNLP"),
        paddle_mapping=ERNIE_MAPPING)

# ERNIE-M on XLM-R: pad id 1 and positions from 2 as in PaddleNLP's ErnieMEmbeddings, one (zero) sentence type.
_ERNIE_M = (("base", 12, 768, 12, ()), ("large", 24, 1024, 16, ("large",)))
for _size, _layers, _hidden, _heads, _tags in _ERNIE_M:
    register_transformer(
        f"ernie_m_{_size}", arch=architecture("XLMRoberta"),
        config={"vocab_size": 250002, "hidden_size": _hidden, "num_hidden_layers": _layers,
                "num_attention_heads": _heads, "intermediate_size": 4 * _hidden, "hidden_act": "gelu",
                "max_position_embeddings": 514, "type_vocab_size": 1, "pad_token_id": 1, "layer_norm_eps": 1e-5},
        family="ernie_m", paper=ERNIE_M, tags=(*_tags, "paddle-weights"),
        weights=PretrainedWeights(url=f"https://paddlenlp.bj.bcebos.com/models/transformers/ernie_m/ernie_m_{_size}.pdparams",
                                  format="pdparams", license="apache-2.0", source="Baidu PaddleNLP"))
