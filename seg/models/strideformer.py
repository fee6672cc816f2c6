"""StrideFormer, PP-MobileSeg's backbone, ported from PaddleSeg's ``paddleseg/models/backbones/strideformer.py``.

"PP-MobileSeg: Explore the Fast and Accurate Semantic Segmentation Model on Mobile Devices", Tang et al., 2023,
https://arxiv.org/abs/2304.05152 (after TopFormer and SeaFormer). Four stages of MobileNetV3 blocks extract local
features; the last two are followed by strided sea-attention transformer blocks; an Aggregated Attention Module
(AAM) fuses the stride 8, 16 and 32 features into one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from timm.layers import DropPath
from torch import nn

from oarkit.core.backbones.layers import SEModule, make_act, make_divisible

#: one MobileNetV3 block: kernel, expanded channels, output channels, squeeze-excite, activation, stride
BlockCfg = tuple[int, int, int, bool, str, int]


class HSigmoid(nn.Module):
    """``relu6(x + 3) / 6``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu6(x + 3) / 6


class ConvBNAct(nn.Module):
    """Convolution (no bias by default), batch norm, optional activation (module names ``conv``, ``bn``, ``act``)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 1, stride: int = 1, padding: int = 0,
                 groups: int = 1, act: type[nn.Module] | None = None, bias: bool = False) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, groups=groups,
                              bias=bias)
        self.act = act() if act is not None else nn.Identity()
        self.bn = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


class Conv2DBN(nn.Module):
    """Convolution without bias and batch norm (``c``, ``bn``), the norm's weight starting at ``bn_weight_init``."""

    def __init__(self, in_channels: int, out_channels: int, ks: int = 1, stride: int = 1, pad: int = 0,
                 dilation: int = 1, groups: int = 1, bn_weight_init: float = 1.0) -> None:
        super().__init__()
        self.c = nn.Conv2d(in_channels, out_channels, ks, stride=stride, padding=pad, dilation=dilation,
                           groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        nn.init.constant_(self.bn.weight, bn_weight_init)
        nn.init.zeros_(self.bn.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.c(x))


class ConvBNLayer(nn.Module):
    """MobileNetV3's convolution unit (``c``, ``bn``, activation)."""

    def __init__(self, in_c: int, out_c: int, filter_size: int, stride: int, padding: int, num_groups: int = 1,
                 if_act: bool = True, act: str | None = None, dilation: int = 1) -> None:
        super().__init__()
        self.c = nn.Conv2d(in_c, out_c, filter_size, stride=stride, padding=padding, groups=num_groups, bias=False,
                           dilation=dilation)
        self.bn = nn.BatchNorm2d(out_c)
        self.if_act = if_act
        self.act = make_act(act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.bn(self.c(x))
        return self.act(x) if self.if_act else x


class ResidualUnit(nn.Module):
    """MobileNetV3's inverted residual: expand 1x1, depthwise kxk, optional SE, project 1x1."""

    def __init__(self, in_c: int, mid_c: int, out_c: int, filter_size: int, stride: int, use_se: bool,
                 act: str | None = None, dilation: int = 1) -> None:
        super().__init__()
        self.if_shortcut = stride == 1 and in_c == out_c
        self.if_se = use_se
        self.expand_conv = ConvBNLayer(in_c, mid_c, 1, 1, 0, if_act=True, act=act)
        self.bottleneck_conv = ConvBNLayer(mid_c, mid_c, filter_size, stride, (filter_size - 1) // 2 * dilation,
                                           num_groups=mid_c, if_act=True, act=act, dilation=dilation)
        if use_se:
            self.mid_se = SEModule(mid_c)  # Paddle's hardsigmoid gate, slope 0.2
        self.linear_conv = ConvBNLayer(mid_c, out_c, 1, 1, 0, if_act=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bottleneck_conv(self.expand_conv(x))
        if self.if_se:
            y = self.mid_se(y)
        y = self.linear_conv(y)
        return x + y if self.if_shortcut else y


class StackedMV3Block(nn.Module):
    """One stage of MobileNetV3 blocks; the first stage starts with the stride-2 stem convolution."""

    def __init__(self, cfgs: Sequence[BlockCfg], stem: bool, inp_channel: int, scale: float = 1.0) -> None:
        super().__init__()
        self.stem = stem
        if stem:
            self.conv = ConvBNLayer(3, make_divisible(inp_channel * scale), 3, 2, 1, if_act=True, act="hardswish")
        self.blocks = nn.ModuleList()
        for k, exp, c, se, act, s in cfgs:
            self.blocks.append(ResidualUnit(make_divisible(inp_channel * scale), make_divisible(scale * exp),
                                            make_divisible(scale * c), k, s, se, act=act))
            inp_channel = make_divisible(scale * c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stem:
            x = self.conv(x)
        for block in self.blocks:
            x = block(x)
        return x


class SqueezeAxialPositionalEmbedding(nn.Module):
    """A learned 1-d positional embedding of ``shape`` positions, linearly resized to the sequence length."""

    def __init__(self, dim: int, shape: int) -> None:
        super().__init__()
        self.pos_embed = nn.Parameter(torch.randn(1, dim, shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + F.interpolate(self.pos_embed, size=x.shape[-1], mode="linear", align_corners=False)


class Sea_Attention(nn.Module):
    """Squeeze-enhanced axial attention (row and column attention plus a detail-enhancing depthwise branch).

    With ``stride_attention`` the input is first downsampled by a stride-2 depthwise convolution and the result
    upsampled back.
    """

    def __init__(self, dim: int, key_dim: int, num_heads: int, attn_ratio: float = 4,
                 activation: type[nn.Module] = nn.ReLU, stride_attention: bool = False) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.scale = key_dim**-0.5
        self.nh_kd = nh_kd = key_dim * num_heads
        self.d = int(attn_ratio * key_dim)
        self.dh = int(attn_ratio * key_dim) * num_heads
        self.to_q = Conv2DBN(dim, nh_kd, 1)
        self.to_k = Conv2DBN(dim, nh_kd, 1)
        self.to_v = Conv2DBN(dim, self.dh, 1)
        self.stride_attention = stride_attention
        if stride_attention:
            self.stride_conv = nn.Sequential(nn.Conv2d(dim, dim, 3, stride=2, padding=1, groups=dim),
                                             nn.BatchNorm2d(dim))
        self.proj = nn.Sequential(activation(), Conv2DBN(self.dh, dim, bn_weight_init=0))
        self.proj_encode_row = nn.Sequential(activation(), Conv2DBN(self.dh, self.dh, bn_weight_init=0))
        self.pos_emb_rowq = SqueezeAxialPositionalEmbedding(nh_kd, 16)
        self.pos_emb_rowk = SqueezeAxialPositionalEmbedding(nh_kd, 16)
        self.proj_encode_column = nn.Sequential(activation(), Conv2DBN(self.dh, self.dh, bn_weight_init=0))
        self.pos_emb_columnq = SqueezeAxialPositionalEmbedding(nh_kd, 16)
        self.pos_emb_columnk = SqueezeAxialPositionalEmbedding(nh_kd, 16)
        self.dwconv = Conv2DBN(2 * self.dh, 2 * self.dh, ks=3, stride=1, pad=1, dilation=1, groups=2 * self.dh)
        self.act = activation()
        self.pwconv = Conv2DBN(2 * self.dh, dim, ks=1)
        self.sigmoid = HSigmoid()

    def _axial(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, pos_q: nn.Module, pos_k: nn.Module,
               length: int) -> torch.Tensor:
        b = q.shape[0]
        q = pos_q(q).reshape(b, self.num_heads, -1, length).transpose(2, 3)  # [B, heads, L, key_dim]
        k = pos_k(k).reshape(b, self.num_heads, -1, length)  # [B, heads, key_dim, L]
        v = v.reshape(b, self.num_heads, -1, length).transpose(2, 3)  # [B, heads, L, d]
        attn = torch.softmax(q @ k * self.scale, dim=-1)
        return (attn @ v).transpose(2, 3)  # [B, heads, d, L]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h_ori, w_ori = x.shape[2:]
        if self.stride_attention:
            x = self.stride_conv(x)
        b, _, h, w = x.shape
        q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)
        qkv = self.pwconv(self.act(self.dwconv(torch.cat([q, k, v], dim=1))))
        row = self._axial(q.mean(-1), k.mean(-1), v.mean(-1), self.pos_emb_rowq, self.pos_emb_rowk, h)
        row = self.proj_encode_row(row.reshape(b, self.dh, h, 1))
        column = self._axial(q.mean(-2), k.mean(-2), v.mean(-2), self.pos_emb_columnq, self.pos_emb_columnk, w)
        column = self.proj_encode_column(column.reshape(b, self.dh, 1, w))
        xx = self.proj(v + (row + column))
        xx = self.sigmoid(xx) * qkv
        if self.stride_attention:
            xx = F.interpolate(xx, size=(h_ori, w_ori), mode="bilinear", align_corners=False)
        return xx


class MLP(nn.Module):
    """1x1 expand, depthwise 3x3, activation, 1x1 project."""

    def __init__(self, in_features: int, hidden_features: int | None = None, out_features: int | None = None,
                 act_layer: type[nn.Module] = nn.ReLU, drop: float = 0.0) -> None:
        super().__init__()
        hidden_features = hidden_features or in_features
        self.fc1 = Conv2DBN(in_features, hidden_features)
        self.dwconv = nn.Conv2d(hidden_features, hidden_features, 3, 1, 1, groups=hidden_features)
        self.act = act_layer()
        self.fc2 = Conv2DBN(hidden_features, out_features or in_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.fc2(self.drop(self.act(self.dwconv(self.fc1(x))))))


class Block(nn.Module):
    """A transformer block: sea attention and MLP, each residual with drop-path."""

    def __init__(self, dim: int, key_dim: int, num_heads: int, mlp_ratio: float = 4.0, attn_ratio: float = 2.0,
                 drop: float = 0.0, drop_path: float = 0.0, act_layer: type[nn.Module] = nn.ReLU,
                 stride_attention: bool = False) -> None:
        super().__init__()
        self.attn = Sea_Attention(dim, key_dim=key_dim, num_heads=num_heads, attn_ratio=attn_ratio,
                                  activation=act_layer, stride_attention=stride_attention)
        self.drop_path = DropPath(drop_path) if drop_path > 0 else nn.Identity()
        self.mlp = MLP(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=drop)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop_path(self.attn(x))
        return x + self.drop_path(self.mlp(x))


class BasicLayer(nn.Module):
    """A stack of :class:`Block` with linearly increasing drop-path rates."""

    def __init__(self, block_num: int, embedding_dim: int, key_dim: int, num_heads: int, mlp_ratio: float,
                 attn_ratio: float, drop_path: Sequence[float], act_layer: type[nn.Module],
                 stride_attention: bool) -> None:
        super().__init__()
        self.transformer_blocks = nn.ModuleList([
            Block(embedding_dim, key_dim, num_heads, mlp_ratio, attn_ratio, drop_path=drop_path[i],
                  act_layer=act_layer, stride_attention=stride_attention) for i in range(block_num)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.transformer_blocks:
            x = block(x)
        return x


def _upsample(x: torch.Tensor, size: torch.Size) -> torch.Tensor:
    return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class InjectionMultiSumallmultiallsum(nn.Module):
    """AAM at stride 16: every feature votes (product of gated embeddings) on the sum of the detail features."""

    def __init__(self, in_channels: Sequence[int], activations: type[nn.Module], out_channels: int = 256) -> None:
        super().__init__()
        self.embedding_list = nn.ModuleList([ConvBNAct(c, out_channels, 1) for c in in_channels])
        self.act_embedding_list = nn.ModuleList([ConvBNAct(c, out_channels, 1) for c in in_channels])
        self.act_list = nn.ModuleList([activations() for _ in in_channels])

    def forward(self, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
        low1 = F.interpolate(inputs[0], scale_factor=0.5, mode="bilinear", align_corners=False)
        low1_act = self.act_list[0](self.act_embedding_list[0](low1))
        low1 = self.embedding_list[0](low1)
        low2 = _upsample(inputs[1], low1.shape[-2:])
        low2_act = self.act_list[1](self.act_embedding_list[1](low2))
        low2 = self.embedding_list[1](low2)
        high_act = _upsample(self.act_list[2](self.act_embedding_list[2](inputs[2])), low2.shape[2:])
        high = _upsample(self.embedding_list[2](inputs[2]), low2.shape[2:])
        return low1_act * low2_act * high_act * (low1 + low2) + high


class InjectionMultiSumallmultiallsumSimpx8(nn.Module):
    """AAM at stride 8 (PP-MobileSeg-Base): the stride-16 and -32 features gate the stride-8 detail."""

    def __init__(self, in_channels: Sequence[int], activations: type[nn.Module], out_channels: int = 256) -> None:
        super().__init__()
        self.embedding_list = nn.ModuleList([ConvBNAct(c, out_channels, 1) for i, c in enumerate(in_channels)
                                             if i != 1])
        self.act_embedding_list = nn.ModuleList([ConvBNAct(c, out_channels, 1) for i, c in enumerate(in_channels)
                                                 if i != 0])
        self.act_list = nn.ModuleList([activations() for i in range(len(in_channels)) if i != 0])

    def forward(self, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
        low1 = self.embedding_list[0](inputs[0])
        low2 = _upsample(inputs[1], low1.shape[-2:])
        low2_act = self.act_list[0](self.act_embedding_list[0](low2))
        high_act = _upsample(self.act_list[1](self.act_embedding_list[1](inputs[2])), low2.shape[2:])
        high = _upsample(self.embedding_list[1](inputs[2]), low2.shape[2:])
        return low2_act * high_act * low1 + high


class StrideFormer(nn.Module):
    """StrideFormer with an AAM injection module.

    Args:
        cfgs: per stage, the MobileNetV3 block configs.
        channels: input channels of each stage (and the last stage's output).
        embed_dims: channels of the features entering each transformer stage.
        key_dims: per-head key dims of each transformer stage.
        depths: blocks of each transformer stage (on the last ``len(depths)`` stages).
        num_heads: attention heads.
        attn_ratios: value expansion of the attention.
        mlp_ratios: hidden expansion of each stage's MLP.
        drop_path_rate: largest drop-path rate.
        act_layer: activation of the attention blocks and the AAM gates.
        inj_type: ``"AAM"`` (stride 16 output) or ``"AAMSx8"`` (stride 8).
        out_channels: channels of the fused output.
        out_feat_chs: channels of the stride 8, 16, 32 features fed to the AAM.
        stride_attention: downsample inside the attention.

    Attributes:
        feat_channels: ``[out_channels]``, the single fused feature.
    """

    def __init__(self, *, cfgs: Sequence[Sequence[BlockCfg]], channels: Sequence[int], embed_dims: Sequence[int],
                 key_dims: Sequence[int] = (16, 24), depths: Sequence[int] = (2, 2), num_heads: int = 8,
                 attn_ratios: float = 2, mlp_ratios: Sequence[float] = (2, 4), drop_path_rate: float = 0.1,
                 act_layer: type[nn.Module] = nn.Sigmoid, inj_type: str = "AAM", out_channels: int = 256,
                 out_feat_chs: Sequence[int] = (64, 128, 192), stride_attention: bool = True) -> None:
        super().__init__()
        self.depths, self.num_stages = tuple(depths), len(cfgs)
        for i, cfg in enumerate(cfgs):
            self.add_module(f"smb{i + 1}", StackedMV3Block(cfg, stem=i == 0, inp_channel=channels[i]))
        for i, depth in enumerate(depths):
            rates = torch.linspace(0, drop_path_rate, depth).tolist()
            self.add_module(f"trans{i + 1}", BasicLayer(depth, embed_dims[i], key_dims[i], num_heads, mlp_ratios[i],
                                                        attn_ratios, rates, act_layer, stride_attention))
        injections = {"AAM": InjectionMultiSumallmultiallsum, "AAMSx8": InjectionMultiSumallmultiallsumSimpx8}
        if inj_type not in injections:
            raise ValueError(f"inj_type={inj_type!r} is not one of {sorted(injections)}")
        self.inj_module = injections[inj_type](out_feat_chs, act_layer, out_channels)
        self.feat_channels = [out_channels]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outputs = []
        for i in range(self.num_stages):
            x = getattr(self, f"smb{i + 1}")(x)
            if i == 1:  # the stride-8 detail feature
                outputs.append(x)
            if len(self.depths) + i >= self.num_stages:
                x = getattr(self, f"trans{i + len(self.depths) - self.num_stages + 1}")(x)
                outputs.append(x)
        return self.inj_module(outputs)


def MobileSeg_Base(**kwargs: Any) -> StrideFormer:
    """StrideFormer-Base (PP-MobileSeg-Base's backbone)."""
    cfgs = [
        [(3, 16, 16, True, "relu", 1), (3, 64, 32, False, "relu", 2), (3, 96, 32, False, "relu", 1)],
        [(5, 128, 64, True, "hardswish", 2), (5, 240, 64, True, "hardswish", 1)],
        [(5, 384, 128, True, "hardswish", 2), (5, 384, 128, True, "hardswish", 1)],
        [(5, 768, 192, True, "hardswish", 2), (5, 768, 192, True, "hardswish", 1)],
    ]
    return StrideFormer(cfgs=cfgs, channels=(16, 32, 64, 128, 192), embed_dims=(128, 192), depths=(3, 3),
                        num_heads=8, act_layer=nn.ReLU6, **kwargs)


def MobileSeg_Tiny(**kwargs: Any) -> StrideFormer:
    """StrideFormer-Tiny (PP-MobileSeg-Tiny's backbone)."""
    cfgs = [
        [(3, 16, 16, True, "relu", 1), (3, 64, 32, False, "relu", 2), (3, 48, 24, False, "relu", 1)],
        [(5, 96, 32, True, "hardswish", 2), (5, 96, 32, True, "hardswish", 1)],
        [(5, 160, 64, True, "hardswish", 2), (5, 160, 64, True, "hardswish", 1)],
        [(3, 384, 128, True, "hardswish", 2), (3, 384, 128, True, "hardswish", 1)],
    ]
    return StrideFormer(cfgs=cfgs, channels=(16, 24, 32, 64, 128), embed_dims=(64, 128), depths=(2, 2),
                        num_heads=4, act_layer=nn.ReLU6, **kwargs)
