"""U-Net, ported from PaddleSeg's ``paddleseg/models/unet.py``.

"U-Net: Convolutional Networks for Biomedical Image Segmentation", Ronneberger et al., MICCAI 2015,
https://arxiv.org/abs/1505.04597. Four max-pool downsamplings of double 3x3 ConvBNReLU, four bilinear (or
transposed-convolution) upsamplings concatenated with the skip connections, and a 3x3 classifier.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from oarkit.core.backbones.layers import ConvBNReLU, init_weights, resize
from oarkit.core.interop import PaddleMapping

from .zoo import register_paddleseg

PAPER = "U-Net: Convolutional Networks for Biomedical Image Segmentation, https://arxiv.org/abs/1505.04597"


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.double_conv = nn.Sequential(ConvBNReLU(3, 64, 3), ConvBNReLU(64, 64, 3))
        self.down_sample_list = nn.ModuleList([
            nn.Sequential(nn.MaxPool2d(kernel_size=2, stride=2), ConvBNReLU(i, o, 3), ConvBNReLU(o, o, 3))
            for i, o in ((64, 128), (128, 256), (256, 512), (512, 512))])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        short_cuts = []
        x = self.double_conv(x)
        for down in self.down_sample_list:
            short_cuts.append(x)
            x = down(x)
        return x, short_cuts


class UpSampling(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, align_corners: bool, use_deconv: bool = False) -> None:
        super().__init__()
        self.align_corners, self.use_deconv = align_corners, use_deconv
        if use_deconv:
            self.deconv = nn.ConvTranspose2d(in_channels, out_channels // 2, kernel_size=2, stride=2, padding=0)
            in_channels += out_channels // 2
        else:
            in_channels *= 2
        self.double_conv = nn.Sequential(ConvBNReLU(in_channels, out_channels, 3),
                                         ConvBNReLU(out_channels, out_channels, 3))

    def forward(self, x: torch.Tensor, short_cut: torch.Tensor) -> torch.Tensor:
        x = self.deconv(x) if self.use_deconv else resize(x, short_cut.shape[2:], align_corners=self.align_corners)
        return self.double_conv(torch.cat([x, short_cut], dim=1))


class Decoder(nn.Module):
    def __init__(self, align_corners: bool, use_deconv: bool = False) -> None:
        super().__init__()
        self.up_sample_list = nn.ModuleList([UpSampling(i, o, align_corners, use_deconv)
                                             for i, o in ((512, 256), (256, 128), (128, 64), (64, 64))])

    def forward(self, x: torch.Tensor, short_cuts: list[torch.Tensor]) -> torch.Tensor:
        for i, up in enumerate(self.up_sample_list):
            x = up(x, short_cuts[-(i + 1)])
        return x


class UNet(nn.Module):
    """U-Net.

    Args:
        num_classes: classes to segment.
        align_corners: bilinear resize convention.
        use_deconv: upsample with transposed convolutions instead of bilinear resizing.
    """

    loss_coefs = (1.0,)

    def __init__(self, *, num_classes: int, align_corners: bool = False, use_deconv: bool = False) -> None:
        super().__init__()
        self.encode = Encoder()
        self.decode = Decoder(align_corners, use_deconv=use_deconv)
        self.cls = nn.Conv2d(64, num_classes, 3, stride=1, padding=1)
        init_weights(self)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x, short_cuts = self.encode(x)
        return [self.cls(self.decode(x, short_cuts))]


def _drop_conv_alias(state: dict[str, Any], model: nn.Module) -> dict[str, Any]:
    """PaddleSeg's U-Net registers its classifier twice (``self.cls = self.conv``): keep ``cls``."""
    return {k: v for k, v in state.items() if not (k.startswith("conv.") and "cls." + k[5:] in state)}


#: PaddleSeg checkpoints keep this module's names (BatchNorm statistics aside); its ``conv`` is ``cls`` again
PADDLE_MAPPING = PaddleMapping(drop=(r"^conv\.",), source="paddleseg.models.UNet")


@register_paddleseg("seg/unet", family="unet", config="unet_cityscapes_1024x512_160k", dataset="cityscapes",
                    miou=65.00, paper=PAPER, classifier=("cls",), state_dict_filter=_drop_conv_alias,
                    paddle_mapping=PADDLE_MAPPING)
def unet(*, num_classes: int = 19, **kwargs: Any) -> UNet:
    """U-Net with bilinear upsampling."""
    return UNet(num_classes=num_classes, **kwargs)
