"""Every registered classification model builds, runs forward and backward, and has a complete card."""

from __future__ import annotations

import os
import re

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a mistaken hub call fails at once instead of retrying

import pytest
import torch
from torch import nn

from oarkit.core import UnknownNameError, WeightsError, create_model, list_models, model_info
from oarkit.core.hub import load_state_dict
from oarkit.core.registry import ImageInput

NUM_CLASSES = 7
NAMES = list_models("clas/*")
FAMILIES = sorted({model_info(n).family for n in NAMES})


def _fast_sample() -> set[str]:
    """Names outside the "large" tag, plus the first name of each family that has only large ones."""
    fast = {n for n in NAMES if "large" not in model_info(n).tags}
    for family in FAMILIES:
        members = [n for n in NAMES if model_info(n).family == family]
        if not fast.intersection(members):
            fast.add(members[0])
    return fast


FAST = _fast_sample()
PARAMS = [pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in NAMES]


def _head_outputs(model: nn.Module, num_classes: int) -> set[str]:
    """Names of the Linear / Conv layers whose outputs are the classes."""
    return {name for name, m in model.named_modules()
            if (isinstance(m, nn.Linear) and m.out_features == num_classes)
            or (isinstance(m, nn.Conv2d) and m.out_channels == num_classes)}


@pytest.mark.parametrize("name", PARAMS)
def test_forward_backward(name: str) -> None:
    card = model_info(name)
    torch.manual_seed(0)
    model = create_model(name, num_classes=NUM_CLASSES).train()
    out = model(torch.randn(2, *card.test_input_size))
    assert isinstance(out, torch.Tensor) and out.shape == (2, NUM_CLASSES)
    out.float().pow(2).mean().backward()
    grads = [(n, p.grad) for n, p in model.named_parameters() if p.requires_grad]
    assert grads[0][1] is not None, f"the first parameter ({grads[0][0]}) got no gradient"
    bad = [n for n, g in grads if g is not None and not torch.isfinite(g).all()]
    assert not bad, f"non-finite gradients in {bad[:5]}"
    # The card's head names are exactly the layers that output the classes (what pretrained loading resets).
    assert _head_outputs(model, NUM_CLASSES) == set(card.classifier)
    assert all(model.get_submodule(h).weight.grad is not None for h in card.classifier)


def test_registry_size_and_names() -> None:
    assert len(NAMES) >= 100
    assert all(n == n.lower() and " " not in n for n in NAMES)


def test_every_family_is_in_the_fast_sample() -> None:
    assert {model_info(n).family for n in FAST} == set(FAMILIES)
    expected = {"pp_lcnet", "pp_lcnetv2", "pp_hgnet", "pp_hgnetv2", "resnet_vd", "mobilenet_v3", "tv_resnet",
                "tv_vgg", "convnext"}
    assert expected <= set(FAMILIES)


@pytest.mark.parametrize("name", NAMES)
def test_card_is_complete(name: str) -> None:
    card = model_info(name)
    assert card.task == "clas" and card.family and card.classifier
    assert card.weights is not None and card.weights.location
    assert card.weights.license and card.weights.license != "unknown"
    assert card.weights.format in ("safetensors", "pth", "pdparams")
    assert (card.weights.format == "pdparams") == ("paddle-weights" in card.tags)
    assert isinstance(card.input_spec, ImageInput) and card.input_spec.channels == 3
    assert len(card.input_size) == 3 and len(card.mean) == len(card.std) == 3
    assert 0 < card.crop_pct <= 1
    if card.metrics:
        assert card.metrics_source and 0 < card.metrics["imagenet_top1"] < 100


def test_paddleclas_cards() -> None:
    lcnet = model_info("clas/pp_lcnet_x1_0")
    assert lcnet.weights.url.endswith("/PPLCNet_x1_0_pretrained.pdparams") and lcnet.metrics == {"imagenet_top1": 71.32}
    assert lcnet.metrics_source == "PaddleClas model zoo" and "2109.15099" in lcnet.paper
    tiny = model_info("clas/pp_lcnet_x0_25")
    assert tiny.weights.url.endswith("/PPLCNet_x0_25_pretrained.pdparams") and tiny.weights.license == "Apache-2.0"
    assert model_info("clas/pp_hgnetv2_b0").weights.hub_id == "timm/hgnetv2_b0.ssld_stage2_ft_in1k"
    assert model_info("clas/pp_hgnet_base").classifier == ("head.fc",)
    assert model_info("clas/resnet50_vd").metrics["imagenet_top1"] == 79.12
    assert model_info("clas/mobilenetv3_small_x1_25").weights.format == "pdparams"


@pytest.mark.parametrize("name", [n for n in NAMES if model_info(n).metrics_source == "PaddleClas model zoo"])
def test_paddleclas_top1_only_on_cards_that_load_paddleclas_weights(name: str) -> None:
    # PaddleClas's figure belongs to PaddleClas's weights: its release (converted on load, so a mapping must exist)
    # or timm's copy of them, never timm's own training (ra2, lamb ...) of the same architecture.
    card = model_info(name)
    if card.weights.format == "pdparams":
        assert card.paddle_mapping is not None, f"{name} points at a PaddleClas release that nothing converts"
        assert card.weights.source == "PaddleClas" and "/legendary_models/" in card.weights.url
    else:
        assert card.weights.source == "PaddleClas, converted by timm", card.weights
        assert any(t in card.weights.hub_id for t in ("paddle", "ssld")), card.weights.hub_id


def test_torchvision_cards() -> None:
    card = model_info("clas/tv_resnet50")
    assert card.weights.url.endswith("resnet50-11ad3fa6.pth")
    assert card.metrics["imagenet_top1"] == pytest.approx(80.858)
    assert card.crop_pct == pytest.approx(224 / 232) and card.classifier == ("fc",)
    assert len(list_models("clas/tv_*")) == 80
    assert "large" in model_info("clas/tv_vgg16").tags and "large" not in model_info("clas/tv_resnet18").tags
    assert "CC-BY-NC" in model_info("clas/tv_vit_h_14").weights.license


def test_paddle_weights_are_refused_clearly() -> None:
    with pytest.raises(WeightsError, match="not cached at .*pdparams"):
        create_model("clas/pp_lcnet_x0_25", pretrained=True)


def test_densenet_legacy_keys_are_renamed() -> None:
    card = model_info("clas/tv_densenet121")
    model = create_model("clas/tv_densenet121", num_classes=NUM_CLASSES)
    state = create_model("clas/tv_densenet121").state_dict()
    # torchvision's 2017 release: "norm.1" for "norm1" and no BatchNorm step counters.
    legacy = {re.sub(r"\.(norm|relu|conv)([12])\.", r".\1.\2.", k): v for k, v in state.items()
              if not k.endswith("num_batches_tracked")}
    assert "features.denseblock1.denselayer1.norm.1.weight" in legacy
    renamed = card.state_dict_filter(legacy, model)
    assert "features.denseblock1.denselayer1.norm1.weight" in renamed
    assert load_state_dict(model, renamed, head=card.classifier) == ["classifier.weight", "classifier.bias"]


def test_inception_aux_weights_load_without_aux_heads() -> None:
    card = model_info("clas/tv_googlenet")
    released = create_model("clas/tv_googlenet", aux_logits=True).state_dict()  # the release carries aux1/aux2
    model = create_model("clas/tv_googlenet", num_classes=NUM_CLASSES)
    reset = load_state_dict(model, card.state_dict_filter(released, model), head=card.classifier)
    assert reset == ["fc.weight", "fc.bias"]


def test_vit_legacy_mlp_keys_are_renamed() -> None:
    card, model = model_info("clas/tv_vit_b_32"), create_model("clas/tv_vit_b_32")
    state = model.state_dict()
    legacy = {k.replace("mlp.0.", "mlp.linear_1.").replace("mlp.3.", "mlp.linear_2."): v for k, v in state.items()}
    assert legacy.keys() != state.keys() and card.state_dict_filter(legacy, model).keys() == state.keys()


def test_mnasnet_checkpoints_load(tmp_path) -> None:
    from safetensors.torch import save_file

    # A checkpoint without torch's version metadata (safetensors) used to make torchvision's MNASNet refuse it.
    trained = create_model("clas/tv_mnasnet1_0")
    save_file(trained.state_dict(), str(tmp_path / "model.safetensors"))
    loaded = create_model("clas/tv_mnasnet1_0", pretrained=tmp_path, num_classes=NUM_CLASSES)
    assert torch.equal(loaded.layers[0].weight, trained.layers[0].weight)
    # Version-1 checkpoints (torchvision's mnasnet0_5 release) have a fixed 32-channel stem.
    card, v1 = model_info("clas/tv_mnasnet0_5"), create_model("clas/tv_mnasnet0_5")
    with pytest.warns(UserWarning, match="new version of MNASNet"):
        card.state_dict_filter({"layers.0.weight": torch.zeros(32, 3, 3, 3)}, v1)
    released = v1.state_dict()
    fresh = create_model("clas/tv_mnasnet0_5")
    with pytest.warns(UserWarning, match="new version of MNASNet"):
        load_state_dict(fresh, card.state_dict_filter(released, fresh), head=card.classifier)
    assert torch.equal(fresh.layers[0].weight, released["layers.0.weight"]) and fresh.layers[0].out_channels == 32


def test_timm_namespace() -> None:
    model = create_model("timm/convnext_atto", num_classes=3)
    assert model(torch.randn(1, 3, 32, 32)).shape == (1, 3)
    assert "timm/convnext_atto" in list_models("timm/convnext*")
    assert "timm/convnext_atto" not in list_models("*")  # catalogues are listed only when named
    card = model_info("timm/convnext_atto")
    assert card.weights.hub_id == "timm/convnext_atto.d2_in1k" and card.classifier == ("head.fc",)
    assert model_info("timm/lcnet_050.ra2_in1k").weights.hub_id == "timm/lcnet_050.ra2_in1k"
    assert "timm/lcnet_050.ra2_in1k" in list_models("timm/lcnet_050.*")
    with pytest.raises(UnknownNameError, match="timm/convnext_atto"):
        model_info("timm/convnext_attoo")


def test_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(UnknownNameError, match="'clas/pp_lcnet_x1_0'"):
        create_model("clas/pp_lcnet_x1_00")
    with pytest.raises(UnknownNameError, match="clas/resnet50_vd"):
        model_info("clas/resnet50vd")
