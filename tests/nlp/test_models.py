"""Every registered nlp model builds with every head, runs forward and backward, and has a complete card."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from oarkit.core import ConfigError, WeightsError, create_model, list_models, model_info
from oarkit.core.registry import TextInput
from oarkit.nlp.models import HEADS, UIE, encoder_of, transformer_state_filter

from .conftest import TINY

NAMES = list_models("nlp/*")
ENCODERS = [n for n in NAMES if model_info(n).task == "nlp/text_classification"]
UIES = [n for n in NAMES if model_info(n).task == "nlp/information_extraction"]


def _tiny(name: str) -> dict:
    kwargs = {**TINY, "vocab_size": 120}
    if "albert" in name or "electra" in name:
        kwargs["embedding_size"] = 16
    return kwargs


def _inputs(batch: int = 2, length: int = 9) -> dict[str, torch.Tensor]:
    ids = torch.randint(5, 120, (batch, length), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[1, 6:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def test_registry_names_and_families() -> None:
    assert len(NAMES) >= 20 and len(ENCODERS) >= 20
    families = {model_info(n).family for n in NAMES}
    assert {"ernie_3_0", "ernie_m", "bert", "bert_compact", "chinese_roberta", "albert", "electra", "deberta_v3",
            "xlm_roberta", "minilm", "uie"} <= families
    for size in ("xbase", "base", "medium", "mini", "micro", "nano"):
        assert f"nlp/ernie_3_0_{size}_zh" in NAMES


@pytest.mark.parametrize("name", NAMES)
def test_card_is_complete(name: str) -> None:
    card = model_info(name)
    assert card.family and card.paper.startswith(tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")) and "https://" in card.paper
    assert card.weights is not None and card.weights.location
    assert card.weights.license not in ("", "unknown") and card.weights.source
    assert card.weights.format in ("safetensors", "pth", "pdparams")
    assert (card.weights.format == "pdparams") == ("paddle-weights" in card.tags)
    assert all(isinstance(v, float) and 0 < v <= 100 for v in card.metrics.values())
    assert isinstance(card.input_spec, TextInput) and card.input_spec.max_length >= 512
    assert bool(card.metrics) == bool(card.metrics_source)
    assert card.state_dict_filter is transformer_state_filter


@pytest.mark.parametrize("name", ENCODERS)
def test_every_head_runs_forward_and_backward(name: str) -> None:
    torch.manual_seed(0)
    shapes = {"encoder": (2, 9, 32), "sequence_classification": (2, 5), "token_classification": (2, 9, 5)}
    for head in HEADS:
        model = create_model(name, head=head, num_classes=5, **_tiny(name)).train()
        out = model(**_inputs())
        if head == "question_answering":
            loss = out.start_logits.sum() + out.end_logits.sum()
            assert out.start_logits.shape == out.end_logits.shape == (2, 9)
        else:
            tensor = out.last_hidden_state if head == "encoder" else out.logits
            assert tensor.shape == shapes[head], head
            loss = tensor.pow(2).mean()
        loss.backward()
        grads = [p.grad for p in model.parameters() if p.requires_grad]
        assert all(g is None or torch.isfinite(g).all() for g in grads)
        assert encoder_of(model).get_input_embeddings().weight.grad is not None
        if head != "encoder":  # the card's head prefixes cover everything outside the encoder
            prefix = model.base_model_prefix + "."
            heads = {n.split(".")[0] for n, _ in model.named_parameters() if not n.startswith(prefix)}
            assert heads and heads <= set(model_info(name).classifier), head


@pytest.mark.parametrize("name", UIES)
def test_uie_pointers(name: str) -> None:
    model = create_model(name, **{**TINY, "vocab_size": 120})
    assert isinstance(model, UIE)
    out = model(**_inputs())
    assert out.start_logits.shape == out.end_logits.shape == (2, 9)
    (out.start_logits.sum() + out.end_logits.sum()).backward()
    assert model.linear_start.weight.grad is not None


@pytest.mark.parametrize("name", [n for n in NAMES if "large" not in model_info(n).tags and "xbase" not in n])
@pytest.mark.slow
def test_full_size_configs_build(name: str) -> None:
    model = create_model(name, **({"head": "sequence_classification"} if name in ENCODERS else {}))
    assert sum(p.numel() for p in model.parameters()) > 1e6


def test_real_configs_match_their_released_sizes() -> None:
    def size(name: str) -> tuple[int, int, int]:
        config = model_info(name).factory.config
        return config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"]

    assert size("nlp/ernie_3_0_xbase_zh") == (20, 1024, 16)
    assert size("nlp/ernie_3_0_nano_zh") == (4, 312, 12)
    assert size("nlp/bert_tiny_uncased") == (2, 128, 2)
    assert size("nlp/all_minilm_l6_v2") == (6, 384, 12)
    assert model_info("nlp/ernie_3_0_medium_zh").metrics["clue_avg"] == 72.49


def test_bad_head_and_bad_option_are_named() -> None:
    with pytest.raises(ConfigError, match="token_classification"):
        create_model("nlp/bert_tiny_uncased", head="token_clasification")
    with pytest.raises(ConfigError, match="hidden_size"):
        create_model("nlp/bert_tiny_uncased", hiden_size=32)


def test_state_filter_maps_prefixes_and_drops_pretraining_heads() -> None:
    source = create_model("nlp/bert_tiny_uncased", head="encoder", **TINY, vocab_size=120)
    bare = source.state_dict()
    checkpoint = {f"bert.{k}": v for k, v in bare.items()}
    checkpoint["cls.predictions.bias"] = torch.zeros(120)
    checkpoint["bert.embeddings.position_ids"] = torch.arange(512)[None]
    tagger = create_model("nlp/bert_tiny_uncased", head="token_classification", num_classes=3, **TINY, vocab_size=120)
    mapped = transformer_state_filter(checkpoint, tagger)
    assert "cls.predictions.bias" not in mapped and "bert.embeddings.position_ids" not in mapped
    assert not any(k.startswith("bert.pooler") for k in mapped)  # the tagger has no pooler
    assert set(mapped) == {k for k in tagger.state_dict() if not k.startswith("classifier")}
    # A bare encoder takes prefixed names, and a foreign tensor is kept so that loading reports it.
    assert set(transformer_state_filter(checkpoint, source)) == set(bare)
    assert "mystery.weight" in transformer_state_filter({"mystery.weight": torch.zeros(1)}, source)


def test_pretrained_file_that_does_not_fit_is_refused(tmp_path) -> None:
    from safetensors.torch import save_file

    other = create_model("nlp/bert_tiny_uncased", head="encoder", **{**TINY, "hidden_size": 16}, vocab_size=120)
    save_file({k: v.contiguous() for k, v in other.state_dict().items()}, str(tmp_path / "model.safetensors"))
    with pytest.raises(WeightsError, match="shape mismatch"):
        create_model("nlp/bert_tiny_uncased", pretrained=str(tmp_path), **TINY, vocab_size=120)


def test_paddle_weights_are_refused_with_a_clear_message() -> None:
    with pytest.raises(WeightsError, match="pdparams"):
        create_model("nlp/uie_nano", pretrained=True)


def test_uie_is_an_nn_module_with_an_encoder() -> None:
    model = create_model("nlp/uie_nano", **TINY, vocab_size=120)
    assert isinstance(model, nn.Module) and model.config.hidden_size == 32
    assert encoder_of(model) is model.encoder
