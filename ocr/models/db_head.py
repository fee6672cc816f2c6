"""DB heads: PaddleOCR's ``ppocr/modeling/heads/det_db_head.py`` (``DBHead``, ``PFHeadLocal``).

"Real-time Scene Text Detection with Differentiable Binarization", Liao et al., AAAI 2020,
https://arxiv.org/abs/1911.08947. Two identical branches on the neck's stride-4 map, ``binarize`` (the shrink
probability map) and ``thresh`` (the adaptive threshold map), each a 3x3 convolution, BN-ReLU, two stride-2
transposed convolutions back to the input size and a sigmoid. Training adds the approximate binary map
``1 / (1 + exp(-k (P - T)))``. Inference needs ``binarize`` only: Paddle's exported inference models drop the
``thresh`` branch, so a model loaded from one keeps ``thresh`` at its initialisation (fine-tuning trains it).

``PFHeadLocal`` (PP-OCRv4 server) refines the shrink map with a local module on the upsampled features and
returns the mean of both maps at inference.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.backbones.layers import ConvBNAct


class Head(nn.Module):
    """One DB branch: ``conv1`` (3x3, no bias), ``conv_bn1`` (BN + ReLU), ``conv2`` (2x2 transposed, stride 2),
    ``conv_bn2``, ``conv3`` (2x2 transposed to one channel), sigmoid."""

    def __init__(self, in_channels: int, kernel_list: tuple[int, int, int] = (3, 2, 2)) -> None:
        super().__init__()
        mid = in_channels // 4
        self.conv1 = nn.Conv2d(in_channels, mid, kernel_list[0], padding=kernel_list[0] // 2, bias=False)
        self.conv_bn1 = nn.BatchNorm2d(mid)
        self.conv2 = nn.ConvTranspose2d(mid, mid, kernel_list[1], stride=2)
        self.conv_bn2 = nn.BatchNorm2d(mid)
        self.conv3 = nn.ConvTranspose2d(mid, 1, kernel_list[2], stride=2)

    def forward(self, x: torch.Tensor, return_features: bool = False) -> torch.Tensor | tuple[torch.Tensor, ...]:
        x = F.relu(self.conv_bn1(self.conv1(x)))
        f = F.relu(self.conv_bn2(self.conv2(x)))
        y = torch.sigmoid(self.conv3(f))
        return (y, f) if return_features else y


class DBHead(nn.Module):
    """The DB head: eval returns the shrink probability map ``[B, 1, H, W]``; training returns
    ``{"maps": [B, 3, H, W]}`` (shrink, threshold, approximate binary).

    Args:
        in_channels: channels of the neck's output.
        k: the amplification factor of the differentiable binarization.
    """

    def __init__(self, in_channels: int, k: float = 50) -> None:
        super().__init__()
        self.k = k
        self.binarize = Head(in_channels)
        self.thresh = Head(in_channels)

    def step_function(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.reciprocal(1 + torch.exp(-self.k * (x - y)))

    def forward(self, x: torch.Tensor) -> torch.Tensor | dict[str, torch.Tensor]:
        shrink = self.binarize(x)
        if not self.training:
            return shrink
        threshold = self.thresh(x)
        return {"maps": torch.cat([shrink, threshold, self.step_function(shrink, threshold)], dim=1)}


class LocalModule(nn.Module):
    """``last_1(last_3(cat(init_map, features)))``: a 3x3 ConvBN-ReLU and a 1x1 convolution to one channel."""

    def __init__(self, in_c: int, mid_c: int) -> None:
        super().__init__()
        self.last_3 = ConvBNAct(in_c + 1, mid_c, 3, act="relu")
        self.last_1 = nn.Conv2d(mid_c, 1, 1)

    def forward(self, x: torch.Tensor, init_map: torch.Tensor) -> torch.Tensor:
        return self.last_1(self.last_3(torch.cat([init_map, x], dim=1)))


class PFHeadLocal(DBHead):
    """PP-OCRv4 server's DB head: the shrink map refined by a :class:`LocalModule` (``cbn_layer``) on the
    binarize branch's upsampled features. Eval returns ``(shrink + refined) / 2``; training puts the refined
    map first in ``maps``.

    Args:
        in_channels: channels of the neck's output.
        k: the amplification factor of the differentiable binarization.
        mode: ``"large"`` (local module width ``in_channels // 4``) or ``"small"`` (``in_channels // 8``).
    """

    def __init__(self, in_channels: int, k: float = 50, mode: str = "small") -> None:
        super().__init__(in_channels, k)
        if mode not in ("large", "small"):
            raise ValueError(f"PFHeadLocal mode={mode!r} must be 'large' or 'small'")
        self.mode = mode
        self.cbn_layer = LocalModule(in_channels // 4, in_channels // (4 if mode == "large" else 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor | dict[str, torch.Tensor]:
        shrink, f = self.binarize(x, return_features=True)
        refined = torch.sigmoid(self.cbn_layer(F.interpolate(f, scale_factor=2, mode="nearest"), shrink))
        if not self.training:
            return 0.5 * (shrink + refined)
        threshold = self.thresh(x)
        return {"maps": torch.cat([refined, threshold, self.step_function(shrink, threshold)], dim=1)}
