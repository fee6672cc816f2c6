"""PaddleDetection's RT-DETR checkpoints (``rtdetr_hgnetv2_l/x_6x_coco.pdparams``) onto transformers' RT-DETR.

Paddle's model is ``ppdet.modeling.architectures.DETR`` with a ``PPHGNetV2`` backbone (``backbone.*``), a
``HybridEncoder`` neck (``neck.*``) and an ``RTDETRTransformer`` (``transformer.*``); the names below follow
PaddleDetection's ``backbones/hgnet_v2.py``, ``transformers/hybrid_encoder.py`` and
``transformers/rtdetr_transformer.py`` (release 2.7). transformers' ``RTDetrForObjectDetection`` with an
``HGNetV2Config`` backbone has the same modules under other names:

- backbone ``ConvBNAct`` ``conv`` / ``bn`` -> ``convolution`` / ``normalization``; ``stem`` -> ``embedder``;
  ``HG_Block.aggregation_squeeze_conv`` / ``aggregation_excitation_conv`` -> ``aggregation.0`` / ``.1``;
- neck ``input_proj`` -> ``encoder_input_proj``; the AIFI layer ``neck.encoder.i`` -> ``encoder.aifi.i``; the
  CCFM's ``BaseConv`` / RepVGG ``bn`` -> ``norm``;
- Paddle's ``MultiHeadAttention`` keeps q, k and v in one ``in_proj_weight`` [E, 3E] (``[in, out]``, q first):
  split into ``q_proj`` / ``k_proj`` / ``v_proj``; ``out_proj`` -> ``o_proj``; ``linear1/2`` -> ``mlp.fc1/2``;
  ``norm1/2/3`` -> ``self_attn_layer_norm`` / ``encoder_attn_layer_norm`` / ``final_layer_norm``;
  ``cross_attn`` -> ``encoder_attn``;
- ``transformer.input_proj.i.conv/norm`` -> ``decoder_input_proj.i.0/1``; ``dec_score_head`` /
  ``dec_bbox_head`` / ``query_pos_head`` -> ``decoder.class_embed`` / ``decoder.bbox_embed`` /
  ``decoder.query_pos_head``; ``denoising_class_embed`` gains the zero padding row Paddle appends at run time.

No Paddle RT-DETR exists on the package registry (paddledet 2.6.0 predates it), so this mapping is checked against
Paddle's names and shapes only (every tensor placed, q/k/v slices and layouts), not against Paddle's outputs.
"""

from __future__ import annotations

import re

import numpy as np

from oarkit.core.interop.mapping import PaddleMapping

PREFIX = "model.model."  # the kit's wrapper holds RTDetrForObjectDetection as .model, which holds RTDetrModel
_DECODER_NORMS = {"norm1": "self_attn_layer_norm", "norm2": "encoder_attn_layer_norm", "norm3": "final_layer_norm"}
_ENCODER_NORMS = {"norm1": "self_attn_layer_norm", "norm2": "final_layer_norm"}


def split_in_proj(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Paddle's fused ``self_attn.in_proj_weight`` [E, 3E] / ``in_proj_bias`` [3E] as ``q_proj`` / ``k_proj`` /
    ``v_proj`` weights [E, E] (still ``[in, out]``: the mapping transposes Linear weights) and biases [E]."""
    out: dict[str, np.ndarray] = {}
    for name, value in state.items():
        match = re.fullmatch(r"(.*\.self_attn\.)in_proj_(weight|bias)", name)
        if match is None:
            out[name] = value
            continue
        parts = np.split(np.asarray(value), 3, axis=-1)
        for proj, part in zip(("q_proj", "k_proj", "v_proj"), parts):
            out[f"{match[1]}{proj}.{match[2]}"] = part
    return out


def _layer(rest: str, norms: dict[str, str]) -> str:
    """Names inside one transformer layer (attention, feed-forward, norms)."""
    rest = re.sub(r"^self_attn\.out_proj\.", "self_attn.o_proj.", rest)
    rest = re.sub(r"^linear([12])\.", lambda m: f"mlp.fc{m[1]}.", rest)
    rest = re.sub(r"^cross_attn\.", "encoder_attn.", rest)
    return re.sub(r"^(norm\d)\.", lambda m: f"{norms.get(m[1], m[1])}.", rest)


def _backbone(rest: str) -> str:
    rest = re.sub(r"^stem\.", "embedder.", rest)
    rest = re.sub(r"^stages\.", "encoder.stages.", rest)
    rest = rest.replace(".aggregation_squeeze_conv.", ".aggregation.0.")
    rest = rest.replace(".aggregation_excitation_conv.", ".aggregation.1.")
    return f"{PREFIX}backbone.model." + rest.replace(".conv.", ".convolution.").replace(".bn.", ".normalization.")


def _neck(rest: str) -> str:
    if rest.startswith("input_proj."):
        return f"{PREFIX}encoder_{rest}"
    if match := re.fullmatch(r"encoder\.(\d+)\.layers\.(\d+)\.(.*)", rest):
        return f"{PREFIX}encoder.aifi.{match[1]}.layers.{match[2]}.{_layer(match[3], _ENCODER_NORMS)}"
    return f"{PREFIX}encoder.{rest.replace('.bn.', '.norm.')}"


def _transformer(rest: str) -> str:
    if match := re.fullmatch(r"input_proj\.(\d+)\.(conv|norm)\.(.*)", rest):
        return f"{PREFIX}decoder_input_proj.{match[1]}.{0 if match[2] == 'conv' else 1}.{match[3]}"
    if match := re.fullmatch(r"decoder\.layers\.(\d+)\.(.*)", rest):
        return f"{PREFIX}decoder.layers.{match[1]}.{_layer(match[2], _DECODER_NORMS)}"
    rest = re.sub(r"^dec_score_head\.", "decoder.class_embed.", rest)
    rest = re.sub(r"^dec_bbox_head\.", "decoder.bbox_embed.", rest)
    rest = re.sub(r"^query_pos_head\.", "decoder.query_pos_head.", rest)
    rest = re.sub(r"^tgt_embed\.", "weight_embedding.", rest)
    return PREFIX + rest


def paddle_rtdetr_name(name: str) -> str:
    """The transformers name of a PaddleDetection RT-DETR tensor (BatchNorm statistics already renamed); a name of
    another model comes back unchanged, and the conversion reports it as left over."""
    part, _, rest = name.partition(".")
    convert = {"backbone": _backbone, "neck": _neck, "transformer": _transformer}.get(part)
    return convert(rest) if convert is not None else name


def _pad_denoising_embedding(weight: np.ndarray) -> np.ndarray:
    """Paddle's ``denoising_class_embed`` [C, D] with the zero row it appends for the padding label: [C + 1, D]."""
    return np.concatenate([weight, np.zeros((1, weight.shape[1]), weight.dtype)])


PADDLE_MAPPING = PaddleMapping(
    renames=(paddle_rtdetr_name,), hook=split_in_proj,
    transforms=((r"denoising_class_embed\.weight$", _pad_denoising_embedding),),
    source="ppdet.modeling.architectures.DETR (PPHGNetV2, HybridEncoder, RTDETRTransformer), PaddleDetection 2.7")
