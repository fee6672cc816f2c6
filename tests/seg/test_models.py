"""Every registered segmentation model builds, runs forward and backward, and has a complete card."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from oarkit.core import WeightsError, create_model, list_models, model_info  # noqa: E402
from oarkit.core.backbones.layers import Conv2d  # noqa: E402
from oarkit.core.backbones.resnet_vd import ResNet_vd  # noqa: E402
from oarkit.core.hub import load_state_dict  # noqa: E402
from oarkit.core.registry import ImageInput  # noqa: E402

NUM_CLASSES = 7
NAMES = list_models("seg/*")
FAMILIES = sorted({model_info(n).family for n in NAMES})


#: where a family's first name is not its quickest member
QUICKEST = {"pp_mobileseg": "seg/pp_mobileseg_tiny"}


def _fast_sample() -> set[str]:
    """One name per family: the first outside the "large" tag (or the one in ``QUICKEST``)."""
    fast = set(QUICKEST.values())
    for family in FAMILIES:
        if family in QUICKEST:
            continue
        members = [n for n in NAMES if model_info(n).family == family]
        small = [n for n in members if "large" not in model_info(n).tags] or members
        fast.add(small[0])
    return fast


FAST = _fast_sample()
PARAMS = [pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in NAMES]


def _head_outputs(model: nn.Module, num_classes: int) -> set[str]:
    """Names of the convolutions whose outputs are the classes."""
    return {name for name, m in model.named_modules() if isinstance(m, nn.Conv2d) and m.out_channels == num_classes}


@pytest.mark.parametrize("name", PARAMS)
def test_forward_backward(name: str) -> None:
    card = model_info(name)
    torch.manual_seed(0)
    model = create_model(name, num_classes=NUM_CLASSES).train()
    x = torch.randn(2, *card.test_input_size)
    outputs = model(x)
    assert isinstance(outputs, list) and all(o.shape == (2, NUM_CLASSES, *x.shape[2:]) for o in outputs)
    sum(o.float().pow(2).mean() for o in outputs).backward()
    grads = [(n, p.grad) for n, p in model.named_parameters() if p.requires_grad]
    missing = [n for n, g in grads if g is None]
    assert not missing, f"parameters without a gradient in training (DDP needs every one): {missing[:5]}"
    assert all(torch.isfinite(g).all() for _, g in grads)
    model.eval()
    with torch.no_grad():
        (logits,) = model(x[:1])
    assert logits.shape == (1, NUM_CLASSES, *x.shape[2:])
    # The card's heads are exactly the layers that output the classes (what pretrained loading re-initialises).
    assert _head_outputs(model, NUM_CLASSES) == set(card.classifier)
    assert len(getattr(model, "loss_coefs", (1.0,))) == len(outputs)


def test_registry_size_and_names() -> None:
    assert len(NAMES) >= 30
    assert all(n == n.lower() and " " not in n for n in NAMES)
    expected = {"pp_liteseg", "pp_mobileseg", "bisenetv1", "bisenetv2", "deeplabv3", "deeplabv3p", "fcn", "ocrnet",
                "pspnet", "unet", "segformer", "upernet", "tv_fcn", "tv_deeplabv3", "tv_lraspp"}
    assert expected <= set(FAMILIES)
    assert {f"seg/segformer_b{i}" for i in range(6)} <= set(NAMES)
    assert {f"seg/deeplabv3p_resnet{d}_vd_os{s}" for d in (50, 101) for s in (8, 16)} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_card_is_complete(name: str) -> None:
    card = model_info(name)
    assert card.task == "seg" and card.family and card.classifier and card.paper
    assert card.weights is not None and card.weights.location and card.weights.license not in ("", "unknown")
    assert (card.weights.format == "pdparams") == ("paddle-weights" in card.tags)
    (metric, value), = card.metrics.items()
    assert metric.endswith("_miou") and 10 < value < 100 and card.metrics_source
    assert card.label_names in ("cityscapes", "ade20k", "voc") and card.num_classes in (19, 150, 21)
    assert isinstance(card.input_spec, ImageInput) and card.input_spec.crop_pct == 1.0


def test_paddleseg_cards() -> None:
    card = model_info("seg/pp_liteseg_stdc1")
    assert card.weights.url == ("https://bj.bcebos.com/paddleseg/dygraph/cityscapes/"
                                "pp_liteseg_stdc1_cityscapes_1024x512_scale0.5_160k/model.pdparams")
    assert card.metrics == {"cityscapes_miou": 73.10} and card.mean == (0.5, 0.5, 0.5)
    assert model_info("seg/pp_mobileseg_base").metrics == {"ade20k_miou": 41.57}
    assert model_info("seg/ocrnet_hrnet_w48").metrics == {"cityscapes_miou": 82.15}
    assert "os8-weights" in model_info("seg/deeplabv3_resnet50_vd_os16").tags
    assert model_info("seg/segformer_b0").weights.hub_id == "nvidia/segformer-b0-finetuned-ade-512-512"
    assert model_info("seg/tv_deeplabv3_resnet50").metrics["coco_voc_miou"] == pytest.approx(66.4)


def test_paddle_weights_are_refused_clearly() -> None:
    with pytest.raises(WeightsError, match="pdparams"):
        create_model("seg/pp_liteseg_stdc1", pretrained=True)


def test_pp_liteseg_t_and_b_settings() -> None:
    t, b = create_model("seg/pp_liteseg_stdc1"), create_model("seg/pp_liteseg_stdc2")
    assert [h.conv_out.in_channels for h in t.seg_heads] == [32, 64, 64]
    assert [a.conv_out._conv.out_channels for a in t.ppseg_head.arm_list] == [32, 64, 128]
    assert [a.conv_out._conv.out_channels for a in b.ppseg_head.arm_list] == [64, 96, 128]
    assert len(t.backbone.features) == 2 + 6 and len(b.backbone.features) == 2 + 12
    # PaddleSeg's parameter names, so converted checkpoints load by name
    names = set(t.state_dict())
    assert {"ppseg_head.arm_list.0.conv_xy_atten.0._conv.weight", "ppseg_head.arm_list.0._scale",
            "backbone.features.2.conv_list.0.conv.weight", "ppseg_head.cm.stages.0.1._batch_norm.running_mean",
            "seg_heads.0.conv_out.weight"} <= names


def test_paddleseg_checkpoint_aliases_are_filtered() -> None:
    model = create_model("seg/pp_liteseg_stdc1", num_classes=NUM_CLASSES)
    card = model_info("seg/pp_liteseg_stdc1")
    released = {k: v.clone() for k, v in model.state_dict().items()}
    released["backbone.x2.0.0.conv.weight"] = released["backbone.features.0.conv.weight"]
    released["backbone.conv_last.conv.weight"] = torch.zeros(1024, 1024, 1, 1)
    assert load_state_dict(model, card.state_dict_filter(released, model)) == []
    unet, unet_card = create_model("seg/unet"), model_info("seg/unet")
    state = dict(unet.state_dict())
    state.update({"conv.weight": state["cls.weight"], "conv.bias": state["cls.bias"]})
    assert "conv.weight" not in unet_card.state_dict_filter(state, unet)


def test_head_is_reset_for_other_class_counts(tmp_path) -> None:
    from safetensors.torch import save_file

    trained = create_model("seg/bisenetv2")
    save_file(trained.state_dict(), str(tmp_path / "model.safetensors"))
    model = create_model("seg/bisenetv2", pretrained=str(tmp_path / "model.safetensors"), num_classes=3)
    assert model.head.conv_1x1.out_channels == 3
    assert torch.equal(model.db.convs[0]._conv.weight, trained.db.convs[0]._conv.weight)


@pytest.mark.parametrize("size", [7, 8, 31, 32])
def test_paddle_same_padding(size: int) -> None:
    """Paddle's padding="same": output ceil(in / stride); for a stride-2 3x3 on even input, one row at the bottom."""
    conv = Conv2d(1, 1, 3, stride=2, padding="same", bias=False)
    nn.init.ones_(conv.weight)
    x = torch.ones(1, 1, size, size)
    out = conv(x)
    assert out.shape[-1] == -(-size // 2)
    if size % 2 == 0:  # pad (0, 1): the first output sees a full window, the last one a window cut at the bottom
        assert out[0, 0, 0, 0] == 9 and out[0, 0, -1, -1] == 4
    else:  # pad (1, 1), like PyTorch's padding=1
        assert out[0, 0, 0, 0] == 4
    assert Conv2d(2, 2, 3, padding="same").padding == (1, 1)


@pytest.mark.parametrize("output_stride", [8, 16, 32])
def test_resnet_vd_output_stride(output_stride: int) -> None:
    backbone = ResNet_vd(layers=18, output_stride=output_stride).eval()
    with torch.no_grad():
        feats = backbone(torch.randn(1, 3, 64, 64))
    assert [f.shape[1] for f in feats] == backbone.feat_channels == [64, 128, 256, 512]
    assert feats[-1].shape[-1] == 64 // output_stride
    assert {"bb_3_1.conv1._conv.weight", "conv1_1._batch_norm.weight"} <= set(backbone.state_dict())
