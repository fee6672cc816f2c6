"""PaddleDetection's RT-DETR-L/X checkpoints onto transformers' RT-DETR (HGNetV2 backbone): a random state dict
with Paddle's names and shapes, written down here from PaddleDetection's PPHGNetV2 / HybridEncoder /
RTDETRTransformer, converts onto the registered model with every tensor placed. Parity with Paddle's outputs is
unproven: no Paddle RT-DETR exists on the package registry (paddledet 2.6.0 predates it)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from oarkit.core import create_model, model_info
from oarkit.core.interop.pretrained import convert_state

#: PPHGNetV2.arch_configs: stem channels; per stage in, mid, out, blocks, downsample, light block, kernel, layers
HGNET = {"L": ((3, 32, 48), [(48, 48, 128, 1, False, False, 3, 6), (128, 96, 512, 1, True, False, 3, 6),
                             (512, 192, 1024, 3, True, True, 5, 6), (1024, 384, 2048, 1, True, True, 5, 6)]),
         "X": ((3, 32, 64), [(64, 64, 128, 1, False, False, 3, 6), (128, 128, 512, 2, True, False, 3, 6),
                             (512, 256, 1024, 5, True, True, 5, 6), (1024, 512, 2048, 2, True, True, 5, 6)])}
#: the configs' HybridEncoder width and feed-forward size (rtdetr_hgnetv2_l/x_6x_coco.yml)
NECK = {"L": (256, 1024), "X": (384, 2048)}


def conv_bn(out: dict, name: str, cin: int, cout: int, k: int, groups: int = 1, conv: str = "conv",
            bn: str = "bn") -> None:
    out[f"{name}.{conv}.weight"] = (cout, cin // groups, k, k)
    out.update({f"{name}.{bn}.{p}": (cout,) for p in ("weight", "bias", "_mean", "_variance")})


def linear(out: dict, name: str, cin: int, cout: int) -> None:
    out[f"{name}.weight"], out[f"{name}.bias"] = (cin, cout), (cout,)  # Paddle stores [in, out]


def attention(out: dict, name: str, dim: int) -> None:
    out[f"{name}.in_proj_weight"], out[f"{name}.in_proj_bias"] = (dim, 3 * dim), (3 * dim,)
    linear(out, f"{name}.out_proj", dim, dim)


def layer_norm(out: dict, name: str, dim: int) -> None:
    out[f"{name}.weight"], out[f"{name}.bias"] = (dim,), (dim,)


def paddle_shapes(arch: str, num_classes: int = 80) -> dict[str, tuple[int, ...]]:
    """Every tensor of PaddleDetection's ``rtdetr_hgnetv2_<arch>`` with its shape."""
    out: dict[str, tuple[int, ...]] = {}
    (c0, c1, c2), stages = HGNET[arch]
    for name, cin, cout, k in (("stem1", c0, c1, 3), ("stem2a", c1, c1 // 2, 2), ("stem2b", c1 // 2, c1, 2),
                               ("stem3", 2 * c1, c1, 3), ("stem4", c1, c2, 1)):
        conv_bn(out, f"backbone.stem.{name}", cin, cout, k)
    for s, (cin, mid, cout, blocks, down, light, k, layers) in enumerate(stages):
        stage = f"backbone.stages.{s}"
        if down:
            conv_bn(out, f"{stage}.downsample", cin, cin, 3, groups=cin)
        for b in range(blocks):
            block, block_in = f"{stage}.blocks.{b}", cin if b == 0 else cout
            for i in range(layers):
                lin = block_in if i == 0 else mid
                if light:
                    conv_bn(out, f"{block}.layers.{i}.conv1", lin, mid, 1)
                    conv_bn(out, f"{block}.layers.{i}.conv2", mid, mid, k, groups=mid)
                else:
                    conv_bn(out, f"{block}.layers.{i}", lin, mid, k)
            conv_bn(out, f"{block}.aggregation_squeeze_conv", block_in + layers * mid, cout // 2, 1)
            conv_bn(out, f"{block}.aggregation_excitation_conv", cout // 2, cout, 1)
    hidden, ffn = NECK[arch]
    for i, cin in enumerate((512, 1024, 2048)):
        conv_bn(out, f"neck.input_proj.{i}", cin, hidden, 1, conv="0", bn="1")
    enc = "neck.encoder.0.layers.0"
    attention(out, f"{enc}.self_attn", hidden)
    linear(out, f"{enc}.linear1", hidden, ffn)
    linear(out, f"{enc}.linear2", ffn, hidden)
    layer_norm(out, f"{enc}.norm1", hidden)
    layer_norm(out, f"{enc}.norm2", hidden)
    for i in range(2):
        conv_bn(out, f"neck.lateral_convs.{i}", hidden, hidden, 1)
        conv_bn(out, f"neck.downsample_convs.{i}", hidden, hidden, 3)
        for block in (f"neck.fpn_blocks.{i}", f"neck.pan_blocks.{i}"):
            conv_bn(out, f"{block}.conv1", 2 * hidden, hidden, 1)
            conv_bn(out, f"{block}.conv2", 2 * hidden, hidden, 1)
            for j in range(3):
                conv_bn(out, f"{block}.bottlenecks.{j}.conv1", hidden, hidden, 3)
                conv_bn(out, f"{block}.bottlenecks.{j}.conv2", hidden, hidden, 1)
    dim, heads, levels, points = 256, 8, 3, 4
    for i in range(levels):
        conv_bn(out, f"transformer.input_proj.{i}", hidden, dim, 1, bn="norm")
    for i in range(6):
        layer = f"transformer.decoder.layers.{i}"
        attention(out, f"{layer}.self_attn", dim)
        linear(out, f"{layer}.cross_attn.sampling_offsets", dim, heads * levels * points * 2)
        linear(out, f"{layer}.cross_attn.attention_weights", dim, heads * levels * points)
        linear(out, f"{layer}.cross_attn.value_proj", dim, dim)
        linear(out, f"{layer}.cross_attn.output_proj", dim, dim)
        linear(out, f"{layer}.linear1", dim, 1024)
        linear(out, f"{layer}.linear2", 1024, dim)
        for norm in ("norm1", "norm2", "norm3"):
            layer_norm(out, f"{layer}.{norm}", dim)
        linear(out, f"transformer.dec_score_head.{i}", dim, num_classes)
        for j, (a, b) in enumerate(((dim, dim), (dim, dim), (dim, 4))):
            linear(out, f"transformer.dec_bbox_head.{i}.layers.{j}", a, b)
    out["transformer.denoising_class_embed.weight"] = (num_classes, dim)
    linear(out, "transformer.query_pos_head.layers.0", 4, 2 * dim)
    linear(out, "transformer.query_pos_head.layers.1", 2 * dim, dim)
    linear(out, "transformer.enc_output.0", dim, dim)
    layer_norm(out, "transformer.enc_output.1", dim)
    linear(out, "transformer.enc_score_head", dim, num_classes)
    for j, (a, b) in enumerate(((dim, dim), (dim, dim), (dim, 4))):
        linear(out, f"transformer.enc_bbox_head.layers.{j}", a, b)
    return out


@pytest.mark.parametrize("arch", ["L", pytest.param("X", marks=pytest.mark.slow)])
def test_paddle_rtdetr_checkpoint_converts_onto_transformers(arch):
    name = f"det/rtdetr_hgnetv2_{arch.lower()}"
    rng = np.random.default_rng(0)
    paddle = {k: rng.standard_normal(shape).astype(np.float32) for k, shape in paddle_shapes(arch).items()}
    model = create_model(name).eval()
    state = convert_state(paddle, model, model_info(name), "a Paddle-named random checkpoint")  # raises on any gap
    model.load_state_dict(state, strict=True)
    dim = 256
    fused = paddle["transformer.decoder.layers.2.self_attn.in_proj_weight"]
    decoder = model.model.model.decoder.layers[2].self_attn
    for i, proj in enumerate((decoder.q_proj, decoder.k_proj, decoder.v_proj)):  # q, k, v in Paddle's order
        torch.testing.assert_close(proj.weight, torch.from_numpy(fused[:, i * dim:(i + 1) * dim].T))
    torch.testing.assert_close(model.model.model.decoder.class_embed[5].weight,
                               torch.from_numpy(paddle["transformer.dec_score_head.5.weight"].T))
    embed = model.model.model.denoising_class_embed.weight
    assert embed.shape[0] == 81 and not embed[80].any()  # Paddle's zero padding row
    torch.testing.assert_close(embed[:80], torch.from_numpy(paddle["transformer.denoising_class_embed.weight"]))
    stem = model.model.model.backbone.model.embedder.stem1.normalization
    torch.testing.assert_close(stem.running_var, torch.from_numpy(paddle["backbone.stem.stem1.bn._variance"]))
    del paddle["neck.lateral_convs.1.bn._mean"]
    with pytest.raises(Exception, match=r"lateral_convs\.1\.norm\.running_mean"):
        convert_state(paddle, model, model_info(name), "a checkpoint missing one tensor")
