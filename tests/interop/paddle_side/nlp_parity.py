"""Paddle side of the nlp parity tests; runs inside .venv-paddle (paddlepaddle 3.3.1 + paddlenlp 2.8.1).

For each family named on the command line, PaddleNLP itself builds a tiny model (2 layers, hidden 64) of that
family's layout with random weights, perturbs every constant-valued tensor (LayerNorm scales and shifts, zero
biases) and scales the encoder's projections up (so that attention is far from uniform and a swapped or forgotten
tensor shows), and writes with its own ``save_pretrained`` a PaddleNLP model directory ``<family>/model``
(``model_state.pdparams``, ``config.json``, ``vocab.txt``, ``tokenizer_config.json``). It then tokenizes a few fixed
texts with PaddleNLP's ``ErnieTokenizer`` (the second one padded), runs the eval forward and saves the inputs
(``inputs.npz``), the outputs (``outputs.npz``) and what Paddle's layers actually use (``facts.json``: every
LayerNorm's epsilon by name, the activation).

    .venv-paddle/bin/python tests/interop/paddle_side/nlp_parity.py OUT_DIR \\
        ernie_1_0 ernie_2_0_en ernie_3_0 ernie_3_0_qa uie
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path

os.environ.setdefault("PPNLP_HOME", os.path.join(os.environ.get("TMPDIR", "/tmp"), "paddlenlp-home"))
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
from paddle_models import parse_args, perturb  # noqa: E402
from paddlenlp.transformers import (  # noqa: E402
    UIE,
    ErnieConfig,
    ErnieForQuestionAnswering,
    ErnieForSequenceClassification,
    ErnieForTokenClassification,
    ErnieModel,
    ErnieTokenizer,
)

logging.getLogger("paddlenlp").setLevel(logging.ERROR)

TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128}
# Each family's layout as PaddleNLP's pretrained configurations give it (ernie/configuration.py), at the tiny size.
FAMILIES = {
    # ERNIE 1.0: ReLU feed-forward, two sentence types, 513 positions; the bare encoder (hidden states + pooler)
    "ernie_1_0": (ErnieModel, {"hidden_act": "relu", "type_vocab_size": 2, "max_position_embeddings": 513}),
    # ERNIE 2.0 English: GELU, four sentence types; a token classifier
    "ernie_2_0_en": (ErnieForTokenClassification, {"hidden_act": "gelu", "type_vocab_size": 4,
                                                   "max_position_embeddings": 512, "num_classes": 5}),
    # ERNIE 3.0 medium/mini/micro/nano: task-type embeddings (16 task types); a sequence classifier
    "ernie_3_0": (ErnieForSequenceClassification, {"hidden_act": "gelu", "type_vocab_size": 4, "use_task_id": True,
                                                   "task_type_vocab_size": 16, "max_position_embeddings": 2048,
                                                   "num_classes": 3}),
    # ERNIE 3.0 with PaddleNLP's extractive QA head (one Linear to start and end logits)
    "ernie_3_0_qa": (ErnieForQuestionAnswering, {"hidden_act": "gelu", "type_vocab_size": 4, "use_task_id": True,
                                                 "task_type_vocab_size": 16, "max_position_embeddings": 2048}),
    # UIE: ERNIE 3.0 encoder with start / end pointers
    "uie": (UIE, {"hidden_act": "gelu", "type_vocab_size": 4, "use_task_id": True, "task_type_vocab_size": 16,
                  "max_position_embeddings": 2048}),
}
TEXT = "2月8日上午北京冬奥会自由式滑雪女子大跳台决赛中中国选手谷爱凌以188.25分获得金牌"
ENGLISH = "The quick brown fox jumps over the lazy dog in Paris"
PROMPTS = ["时间", "选手"]
SPECIAL = ["[PAD]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"]


def write_vocab(path: Path) -> None:
    """A small WordPiece vocabulary covering the test texts (CJK characters alone, a few English words and
    pieces), in PaddleNLP's ``vocab.txt`` form."""
    chars = sorted({c for c in TEXT + "".join(PROMPTS) if not c.isascii()})
    words = ["the", "quick", "brown", "fox", "jump", "##s", "over", "lazy", "dog", "in", "par", "##is", "2", "8",
             "1", "##8", "##8", ".", "25", "##5", "月", "a", "b", "c"]
    vocab = list(dict.fromkeys(SPECIAL + chars + words))
    path.write_text("\n".join(vocab) + "\n", encoding="utf-8")


def larger_projections(name: str, value: np.ndarray, rng: np.random.RandomState) -> np.ndarray | None:
    """The encoder's projections get N(0, 0.15) (attention far from uniform); the embeddings keep PaddleNLP's
    N(0, 0.02) initialisation, so that their LayerNorm sees a small variance and its epsilon matters as it does for
    the released weights. The constant tensors (LayerNorm scales and shifts, zero biases) get perturb's values."""
    if value.ndim == 2 and "embeddings" not in name and not np.all(value == value.flat[0]):
        return rng.normal(0.0, 0.15, value.shape)
    return None


def encode(tokenizer: ErnieTokenizer, family: str) -> dict[str, np.ndarray]:
    """Two inputs tokenized by PaddleNLP, padded to one length (the second one is shorter)."""
    if family in ("uie", "ernie_3_0_qa"):
        texts, pairs = PROMPTS, [TEXT, TEXT[:12]]
    elif family == "ernie_2_0_en":
        texts, pairs = [ENGLISH, ENGLISH[:19]], None
    else:
        texts, pairs = [TEXT, TEXT[:9]], (["选手谷爱凌", "金牌"] if family == "ernie_1_0" else None)
    enc = tokenizer(texts, text_pair=pairs, padding=True, return_attention_mask=True, return_token_type_ids=True)
    return {k: np.asarray(enc[k], dtype="int64") for k in ("input_ids", "token_type_ids", "attention_mask")}


def main() -> None:
    args = parse_args(__doc__, FAMILIES)
    paddle.set_device("cpu")
    for family in args.models:
        cls, layout = FAMILIES[family]
        folder = args.out / family
        model_dir = folder / "model"
        model_dir.mkdir(parents=True, exist_ok=True)
        write_vocab(folder / "vocab.txt")
        tokenizer = ErnieTokenizer(str(folder / "vocab.txt"))
        paddle.seed(args.seed)
        rng = np.random.RandomState(args.seed)
        config = ErnieConfig(vocab_size=len(tokenizer.vocab), **TINY, **layout)
        model = cls(config)
        perturb(model, rng, larger_projections)
        model.eval()
        model.save_pretrained(str(model_dir))
        tokenizer.save_pretrained(str(model_dir))
        inputs = encode(tokenizer, family)
        feed = {k: paddle.to_tensor(v) for k, v in inputs.items()}
        with paddle.no_grad():
            out = model(**feed)
            if family == "ernie_1_0":
                outputs = {"last_hidden_state": out[0].numpy(), "pooler_output": out[1].numpy()}
            elif family == "uie":
                hidden = model.ernie(**feed)[0]
                outputs = {"start_prob": out[0].numpy(), "end_prob": out[1].numpy(),
                           "start_logits": model.linear_start(hidden).squeeze(-1).numpy(),
                           "end_logits": model.linear_end(hidden).squeeze(-1).numpy()}
            elif family == "ernie_3_0_qa":
                outputs = {"start_logits": out[0].numpy(), "end_logits": out[1].numpy()}
            else:
                outputs = {"logits": out.numpy()}
        np.savez(folder / "inputs.npz", **inputs)
        np.savez(folder / "outputs.npz", **outputs)
        epsilons = {name: float(layer._epsilon) for name, layer in model.named_sublayers()
                    if isinstance(layer, paddle.nn.LayerNorm)}
        facts = {"layer_norm_epsilon": epsilons, "hidden_act": config.hidden_act,
                 "texts": {"text": TEXT, "english": ENGLISH, "prompts": PROMPTS}}
        (folder / "facts.json").write_text(json.dumps(facts, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"{family}: {', '.join(f'{k} {list(v.shape)}' for k, v in outputs.items())}; files "
              f"{sorted(p.name for p in model_dir.iterdir())}", flush=True)


if __name__ == "__main__":
    main()
