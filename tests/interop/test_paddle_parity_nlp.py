"""Parity with real Paddle: ERNIE 1.0, 2.0, 3.0 and UIE built and saved by paddlenlp 2.8.1 on paddlepaddle 3.3.1
(in .venv-paddle), converted with ``oarkit convert paddle``, must give PaddleNLP's eval output.

The Paddle side (paddle_side/nlp_parity.py) runs once for the module in a subprocess; a missing Paddle
environment fails these tests (``make paddle-env`` builds it), it does not skip them.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from oarkit.core import load_model
from oarkit.core.cli import main as cli_main
from oarkit.core.engine.checkpoint import load_model_dir, read_meta
from oarkit.core.errors import ConfigError
from oarkit.core.interop import apply_mapping, convert_paddle, read_paddlenlp_dir
from oarkit.core.registry import create_model, model_info
from oarkit.nlp.models.ernie_paddle import PADDLENLP_LAYER_NORM_EPS, bind_ernie, ernie_kwargs

# Paddle-side family (paddle_side/nlp_parity.py) -> the oarkit registry name it converts onto
FAMILIES = {
    "ernie_1_0": "nlp/ernie_1_0_base_zh",
    "ernie_2_0_en": "nlp/ernie_2_0_base_en",
    "ernie_3_0": "nlp/ernie_3_0_medium_zh",
    "ernie_3_0_qa": "nlp/ernie_3_0_mini_zh",
    "uie": "nlp/uie_base",
}
TOLERANCE = 1e-5  # max |ours - Paddle's| relative to max |Paddle's|


@pytest.fixture(scope="module")
def paddle_outputs(tmp_path_factory: pytest.TempPathFactory, run_paddle_side: Callable[..., None]) -> Path:
    out = tmp_path_factory.mktemp("paddlenlp")
    run_paddle_side("nlp_parity.py", out, *FAMILIES, env={"PPNLP_HOME": str(out / ".paddlenlp")})
    return out


@pytest.fixture(scope="module")
def converted(paddle_outputs: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every family converted once; ERNIE 3.0 through the command line, the others through the Python function."""
    out = tmp_path_factory.mktemp("converted")
    dirs = {}
    for family, name in FAMILIES.items():
        src, dst = paddle_outputs / family / "model", out / family
        if family == "ernie_3_0":  # `oarkit convert paddle SRC --model NAME --out DIR`, in this process
            assert cli_main(["convert", "paddle", str(src), "--model", name, "--out", str(dst)]) == 0
        else:
            convert_paddle(src, model=name, out=dst)
        dirs[family] = dst
    return dirs


def _inputs(folder: Path) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(v) for k, v in np.load(folder / "inputs.npz").items()}


def _ours(model: nn.Module, family: str, inputs: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """Our outputs under the names the Paddle side saved (UIE's probabilities are the sigmoid of its logits,
    applied by PaddleNLP's forward and by oarkit's post-processing)."""
    with torch.no_grad():
        out = model.eval()(**inputs)
    if family == "ernie_1_0":
        return {"last_hidden_state": out.last_hidden_state.numpy(), "pooler_output": out.pooler_output.numpy()}
    if family == "uie":
        return {"start_logits": out.start_logits.numpy(), "end_logits": out.end_logits.numpy(),
                "start_prob": out.start_logits.sigmoid().numpy(), "end_prob": out.end_logits.sigmoid().numpy()}
    if family == "ernie_3_0_qa":
        return {"start_logits": out.start_logits.numpy(), "end_logits": out.end_logits.numpy()}
    return {"logits": out.logits.numpy()}


def _relative_errors(model: nn.Module, family: str, folder: Path) -> dict[str, float]:
    expected = dict(np.load(folder / "outputs.npz"))
    ours = _ours(model, family, _inputs(folder))
    return {k: float(np.abs(ours[k] - v).max() / np.abs(v).max()) for k, v in expected.items()}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_converted_paddlenlp_dir_gives_paddles_output(paddle_outputs: Path, converted: dict[str, Path], family: str):
    model, meta = load_model(converted[family]), read_meta(converted[family])  # rebuilt by its kit, as saved
    errors = _relative_errors(model, family, paddle_outputs / family)
    print(f"{family}: " + ", ".join(f"{k} relative {v:.3g}" for k, v in errors.items()))
    assert max(errors.values()) <= TOLERANCE, errors
    # rebuilt with the checkpoint's own architecture (2 layers of 64), not the registered variant's
    paddle_config = json.loads((paddle_outputs / family / "model" / "config.json").read_text())
    config = model.config
    assert (config.num_hidden_layers, config.hidden_size, config.hidden_act) == (2, 64, paddle_config["hidden_act"])
    assert model_info(FAMILIES[family]).factory.config["num_hidden_layers"] != 2
    assert meta["converted_from"]["format"] == "paddlenlp" and meta["paddle_config"]["num_hidden_layers"] == 2


def test_layer_norm_epsilon_is_paddlenlps_by_name(paddle_outputs: Path, converted: dict[str, Path]):
    # PaddleNLP builds its LayerNorms with Paddle's default 1e-5 and ErniePretrainedModel._init_weights sets 1e-12 on
    # every one; each of ours is the LayerNorm the mapping sends that Paddle layer's weight to.
    for family in FAMILIES:
        facts = json.loads((paddle_outputs / family / "facts.json").read_text(encoding="utf-8"))
        model, _ = load_model_dir(converted[family])
        mapping = bind_ernie(model)
        modules = dict(model.named_modules())
        for paddle_name, epsilon in facts["layer_norm_epsilon"].items():
            ours = mapping.rename(f"{paddle_name}.weight").removesuffix(".weight")
            assert isinstance(modules[ours], nn.LayerNorm) and modules[ours].eps == epsilon == PADDLENLP_LAYER_NORM_EPS
    # Paddle's nn.LayerNorm default (1e-5) instead: the embeddings' LayerNorm sees a small variance, the output moves
    folder = paddle_outputs / "ernie_3_0"
    src = folder / "model"
    with_paddle_default = convert_paddle(src, model=FAMILIES["ernie_3_0"], out=folder / "eps_1e-5", layer_norm_eps=1e-5)
    assert _relative_errors(load_model_dir(with_paddle_default)[0], "ernie_3_0", folder)["logits"] > 1e-4


def test_activation_is_the_configs_by_name(paddle_outputs: Path, converted: dict[str, Path]):
    # ERNIE 1.0's feed-forward is ReLU; "gelu" names the exact erf GELU in both Paddle and transformers.
    facts = json.loads((paddle_outputs / "ernie_1_0" / "facts.json").read_text(encoding="utf-8"))
    model, _ = load_model_dir(converted["ernie_1_0"])
    assert facts["hidden_act"] == model.config.hidden_act == "relu"
    with_gelu = convert_paddle(paddle_outputs / "ernie_1_0" / "model", model=FAMILIES["ernie_1_0"],
                               out=paddle_outputs / "ernie_1_0" / "gelu", hidden_act="gelu")
    errors = _relative_errors(load_model_dir(with_gelu)[0], "ernie_1_0", paddle_outputs / "ernie_1_0")
    assert errors["last_hidden_state"] > 1e-2
    ernie2, _ = load_model_dir(converted["ernie_2_0_en"])
    assert ernie2.config.hidden_act == "gelu" and ernie2.ernie.encoder.layer[0].intermediate.intermediate_act_fn(
        torch.tensor([1.0])).item() == pytest.approx(0.8413447, abs=1e-6)  # erf GELU, not the tanh approximation


def test_padding_embedding_row_reads_zero_as_in_paddle(paddle_outputs: Path):
    # Paddle's nn.Embedding(padding_idx=0) returns zeros for padding tokens; the token classifier's outputs at the
    # padded positions of the second input need the converted row zeroed.
    folder = paddle_outputs / "ernie_2_0_en"
    state, config = read_paddlenlp_dir(folder / "model")
    kwargs = ernie_kwargs(config)
    model = create_model(FAMILIES["ernie_2_0_en"], num_classes=kwargs.pop("num_classes"), **kwargs)
    mapping = dataclasses.replace(bind_ernie(model), transforms=())
    model.load_state_dict(apply_mapping(state, model, mapping))
    assert _relative_errors(model, "ernie_2_0_en", folder)["logits"] > 1e-3


def test_text_classifier_takes_the_converted_directory(paddle_outputs: Path, converted: dict[str, Path]):
    from oarkit.nlp import TextClassifier

    facts = json.loads((paddle_outputs / "ernie_3_0" / "facts.json").read_text(encoding="utf-8"))
    inputs = np.load(paddle_outputs / "ernie_3_0" / "inputs.npz")
    logits = np.load(paddle_outputs / "ernie_3_0" / "outputs.npz")["logits"]
    classifier = TextClassifier(converted["ernie_3_0"], topk=3)
    text = facts["texts"]["text"]
    # the tokenizer rebuilt from PaddleNLP's vocab.txt gives ErnieTokenizer's ids
    for row, item in enumerate([text, text[:9]]):
        ids = inputs["input_ids"][row][inputs["attention_mask"][row] == 1]
        assert classifier.tokenizer(item)["input_ids"] == ids.tolist()
    results = classifier([text, text[:9]])
    probabilities = torch.from_numpy(logits).softmax(-1).numpy()
    for result, expected in zip(results, probabilities, strict=True):
        assert result.label == f"LABEL_{expected.argmax()}"
        assert result.scores == pytest.approx(sorted(expected.tolist(), reverse=True), abs=1e-5)


def test_token_classifier_and_taskflow_take_converted_directories(paddle_outputs: Path, converted: dict[str, Path]):
    from oarkit.nlp import QuestionAnswerer, Taskflow, TokenClassifier

    facts = json.loads((paddle_outputs / "uie" / "facts.json").read_text(encoding="utf-8"))
    english = np.load(paddle_outputs / "ernie_2_0_en" / "inputs.npz")["input_ids"][0]
    tagger = TokenClassifier(converted["ernie_2_0_en"])
    assert tagger.tokenizer(facts["texts"]["english"])["input_ids"] == english.tolist()
    assert isinstance(tagger(facts["texts"]["english"]).to_dict(), dict)
    uie_inputs = np.load(paddle_outputs / "uie" / "inputs.npz")
    ie = Taskflow("information_extraction", model=converted["uie"], schema=facts["texts"]["prompts"])
    assert ie.predictor.tokenizer(facts["texts"]["prompts"][0], facts["texts"]["text"])["input_ids"] == \
        uie_inputs["input_ids"][0].tolist()
    (result,) = ie(facts["texts"]["text"])
    assert set(result) <= set(facts["texts"]["prompts"])
    answer = QuestionAnswerer(converted["ernie_3_0_qa"])({"question": "选手", "context": facts["texts"]["text"]})
    assert answer.to_dict()["answer"] in facts["texts"]["text"]


def test_mismatched_checkpoints_are_refused(paddle_outputs: Path, tmp_path: Path):
    with pytest.raises(ConfigError, match="PaddleNLP's UIE.*nlp/uie_"):
        convert_paddle(paddle_outputs / "uie" / "model", model="nlp/ernie_3_0_medium_zh", out=tmp_path / "x")
    with pytest.raises(ConfigError, match="ErnieForSequenceClassification.*nlp/ernie_"):
        convert_paddle(paddle_outputs / "ernie_3_0" / "model", model="nlp/uie_base", out=tmp_path / "y")
    other_task = shutil.copytree(paddle_outputs / "ernie_3_0" / "model", tmp_path / "task_id")
    config = json.loads((other_task / "config.json").read_text())
    (other_task / "config.json").write_text(json.dumps({**config, "task_id": 1}))
    with pytest.raises(ConfigError, match="task_id=1"):
        convert_paddle(other_task, model="nlp/ernie_3_0_medium_zh", out=tmp_path / "z")


def test_recipe_fine_tunes_from_the_paddlenlp_directory(paddle_outputs: Path, tmp_path: Path):
    # PaddleNLP's text classification layout (train.txt / dev.txt 'text<TAB>label', label.txt) and its model
    # directory as task.model.pretrained: the recipe's model starts from Paddle's weights (its logits are Paddle's)
    # and its tokenizer is the directory's ErnieTokenizer.
    from oarkit.core.config import build_trainer, load_config

    folder = paddle_outputs / "ernie_3_0"
    facts = json.loads((folder / "facts.json").read_text(encoding="utf-8"))
    data = tmp_path / "data"
    data.mkdir()
    text = facts["texts"]["text"]
    (data / "label.txt").write_text("LABEL_0\nLABEL_1\nLABEL_2\n", encoding="utf-8")
    for split in ("train", "dev"):
        lines = [f"{text[i:i + 12]}\tLABEL_{i % 3}" for i in range(0, 36, 4)]
        (data / f"{split}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = json.loads((folder / "model" / "config.json").read_text())
    size = [f"+task.model.{k}={config[k]}" for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                                      "intermediate_size", "vocab_size")]
    cfg = load_config("nlp/ernie_3_0_medium_zh_text_cls_128_100e",
                      [f"data.root={data}", "data.batch_size=4", f"task.model.pretrained={folder / 'model'}", *size,
                       f"output_dir={tmp_path / 'run'}", "trainer.progress=false", "trainer.tensorboard=false"])
    trainer = build_trainer(cfg)
    trainer.setup()
    model = trainer.model
    assert trainer.task.labels == ["LABEL_0", "LABEL_1", "LABEL_2"]
    assert _relative_errors(model, "ernie_3_0", folder)["logits"] <= TOLERANCE
    assert trainer.task.tokenizer(text[:9])["input_ids"] == np.load(folder / "inputs.npz")["input_ids"][1][:11].tolist()
    model.train()
    losses = trainer.task.training_step(model, next(iter(trainer.train_loader)))
    losses["loss"].backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_the_old_model_config_json_layout_converts(paddle_outputs: Path, tmp_path: Path):
    # PaddleNLP < 2.5 saved model_config.json: the head class and its arguments around the wrapped ErnieModel's.
    folder = paddle_outputs / "ernie_3_0"
    old = shutil.copytree(folder / "model", tmp_path / "old")
    config = json.loads((old / "config.json").read_text())
    (old / "config.json").unlink()
    ernie = {k: v for k, v in config.items() if k not in ("architectures", "id2label", "label2id", "model_type")}
    (old / "model_config.json").write_text(json.dumps({
        "init_args": [{**ernie, "init_class": "ErnieModel"}], "init_class": "ErnieForSequenceClassification",
        "num_classes": 3}))
    model = load_model(convert_paddle(old, model=FAMILIES["ernie_3_0"], out=tmp_path / "converted"))
    assert _relative_errors(model, "ernie_3_0", folder)["logits"] <= TOLERANCE
