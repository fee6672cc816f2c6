"""Sequence necks and the CTC head of PaddleOCR's recognizers: ``ppocr/modeling/necks/rnn.py``
(``Im2Seq``, ``EncoderWithRNN``, ``EncoderWithFC``, ``EncoderWithSVTR``, ``SequenceEncoder``) and
``ppocr/modeling/heads/rec_ctc_head.py`` (``CTCHead``).

The SVTR neck comes from "SVTR: Scene Text Recognition with a Single Visual Model", Du et al., IJCAI 2022,
https://arxiv.org/abs/2205.00159: local convolutions, global self-attention blocks over the width, and a fusion
with the input; PP-OCRv3/v4 use it as the CTC branch's neck. CRNN ("An End-to-End Trainable Neural Network for
Image-based Sequence Recognition", Shi et al., https://arxiv.org/abs/1507.05717) uses a two-layer BiLSTM.

Paddle constants: the SVTR blocks' LayerNorm epsilon is 1e-5 and the final norm's 1e-6; activations are Swish
(``x * sigmoid(x)``, PyTorch's SiLU); Linear weights are stored ``[in, out]`` by Paddle (the mapping transposes
them). Paddle's LSTM keeps the names ``lstm.0.cell_fw.weight_ih`` ...; :data:`LSTM_RENAMES` maps them onto
``nn.LSTM``'s ``weight_ih_l0`` / ``weight_ih_l0_reverse`` (same gate order i, f, g, o). Its state dict also holds each
tensor under that flat name, which is torch's already: the converter takes the two equal copies as one.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

#: Paddle ``nn.LSTM(direction="bidirectional")`` parameter names -> ``torch.nn.LSTM``'s
LSTM_RENAMES = (
    (r"\.lstm\.(\d+)\.cell_fw\.(weight|bias)_(ih|hh)$", r".lstm.\2_\3_l\1"),
    (r"\.lstm\.(\d+)\.cell_bw\.(weight|bias)_(ih|hh)$", r".lstm.\2_\3_l\1_reverse"),
)


def im2seq(x: torch.Tensor) -> torch.Tensor:
    """``[B, C, 1, W] -> [B, W, C]`` (PaddleOCR's ``Im2Seq``); the height must have been pooled to 1."""
    if x.shape[2] != 1:
        raise ValueError(f"a recognizer's feature must have height 1 before the sequence neck, got {tuple(x.shape)}: "
                         "feed text lines of the model's image height (48, or 32 for CRNN)")
    return x.squeeze(2).permute(0, 2, 1)


class EncoderWithRNN(nn.Module):
    """Two-layer bidirectional LSTM over the width (CRNN)."""

    def __init__(self, in_channels: int, hidden_size: int) -> None:
        super().__init__()
        self.out_channels = hidden_size * 2
        self.lstm = nn.LSTM(in_channels, hidden_size, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lstm(x)[0]


class EncoderWithFC(nn.Module):
    """A Linear layer over the channels (``fc``, with bias)."""

    def __init__(self, in_channels: int, hidden_size: int) -> None:
        super().__init__()
        self.out_channels = hidden_size
        self.fc = nn.Linear(in_channels, hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class ConvBNLayer(nn.Module):
    """SVTR's convolution (no bias), BatchNorm (``norm``) and Swish."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple[int, int] | int = 3) -> None:
        super().__init__()
        k = kernel_size if isinstance(kernel_size, tuple) else (kernel_size, kernel_size)
        self.conv = nn.Conv2d(in_channels, out_channels, k, padding=(k[0] // 2, k[1] // 2), bias=False)
        self.norm = nn.BatchNorm2d(out_channels)
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.norm(self.conv(x)))


class Attention(nn.Module):
    """Global multi-head self-attention (``qkv`` with bias, ``proj``); the query is scaled before the product."""

    def __init__(self, dim: int, num_heads: int = 8, qkv_bias: bool = True, attn_drop: float = 0.0,
                 proj_drop: float = 0.0) -> None:
        super().__init__()
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        attn = self.attn_drop(torch.softmax((q * self.scale) @ k.transpose(-2, -1), dim=-1))
        return self.proj_drop(self.proj((attn @ v).transpose(1, 2).reshape(b, n, c)))


class Mlp(nn.Module):
    """``fc2(drop(act(fc1(x))))`` then dropout."""

    def __init__(self, in_features: int, hidden_features: int, act: type[nn.Module] = nn.SiLU,
                 drop: float = 0.0) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act()
        self.fc2 = nn.Linear(hidden_features, in_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class Block(nn.Module):
    """SVTR's pre-norm transformer block (``norm1``, ``mixer``, ``norm2``, ``mlp``)."""

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 2.0, drop: float = 0.1, attn_drop: float = 0.1,
                 epsilon: float = 1e-5) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=epsilon)
        self.mixer = Attention(dim, num_heads, attn_drop=attn_drop, proj_drop=drop)
        self.norm2 = nn.LayerNorm(dim, eps=epsilon)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), drop=drop)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.mixer(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class EncoderWithSVTR(nn.Module):
    """The SVTR neck: reduce (``conv1``, ``conv2``), ``depth`` global blocks, ``norm``, expand (``conv3``), fuse
    with the input (``conv4`` on the concatenation, ``conv1x1``). Returns ``[B, dims, 1, W]``.

    Args:
        in_channels: channels of the backbone feature.
        dims: output channels.
        depth: number of global attention blocks.
        hidden_dims: width of the attention blocks.
        use_guide: detach the input (PaddleOCR's guided training: the CTC branch does not train the backbone
            through this neck; the guidance head does).
        num_heads: attention heads.
        kernel_size: kernel of ``conv1`` and ``conv4``.
    """

    def __init__(self, in_channels: int, dims: int = 64, depth: int = 2, hidden_dims: int = 120,
                 use_guide: bool = False, num_heads: int = 8, kernel_size: tuple[int, int] = (3, 3)) -> None:
        super().__init__()
        self.use_guide = use_guide
        self.conv1 = ConvBNLayer(in_channels, in_channels // 8, kernel_size)
        self.conv2 = ConvBNLayer(in_channels // 8, hidden_dims, 1)
        self.svtr_block = nn.ModuleList([Block(hidden_dims, num_heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(hidden_dims, eps=1e-6)
        self.conv3 = ConvBNLayer(hidden_dims, in_channels, 1)
        self.conv4 = ConvBNLayer(2 * in_channels, in_channels // 8, kernel_size)
        self.conv1x1 = ConvBNLayer(in_channels // 8, dims, 1)
        self.out_channels = dims

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x.detach() if self.use_guide else x
        h = z
        z = self.conv2(self.conv1(z))
        b, c, height, width = z.shape
        z = z.flatten(2).transpose(1, 2)
        for block in self.svtr_block:
            z = block(z)
        z = self.norm(z).reshape(b, height, width, c).permute(0, 3, 1, 2)
        z = torch.cat([h, self.conv3(z)], dim=1)
        return self.conv1x1(self.conv4(z))


class SequenceEncoder(nn.Module):
    """PaddleOCR's ``SequenceEncoder``: ``[B, C, 1, W] -> [B, W, C']`` through ``encoder`` (``rnn``, ``fc``,
    ``svtr``) or a plain reshape (``reshape``).

    Args:
        in_channels: channels of the backbone feature.
        encoder_type: ``reshape``, ``fc``, ``rnn`` or ``svtr``.
        hidden_size: width of the ``rnn`` (per direction) or ``fc`` encoder.
        **svtr: :class:`EncoderWithSVTR` arguments.
    """

    def __init__(self, in_channels: int, encoder_type: str, hidden_size: int = 48, **svtr) -> None:
        super().__init__()
        self.encoder_type = encoder_type
        if encoder_type == "reshape":
            self.encoder = None
            self.out_channels = in_channels
        elif encoder_type == "rnn":
            self.encoder = EncoderWithRNN(in_channels, hidden_size)
        elif encoder_type == "fc":
            self.encoder = EncoderWithFC(in_channels, hidden_size)
        elif encoder_type == "svtr":
            self.encoder = EncoderWithSVTR(in_channels, **svtr)
        else:
            raise ValueError(f"SequenceEncoder encoder_type={encoder_type!r} must be one of reshape, fc, rnn, svtr")
        if self.encoder is not None:
            self.out_channels = self.encoder.out_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.encoder_type == "svtr":
            return im2seq(self.encoder(x))
        x = im2seq(x)
        return x if self.encoder is None else self.encoder(x)


class CTCHead(nn.Module):
    """``fc`` over the channels of each step: logits in training, softmax probabilities in eval mode.

    Args:
        in_channels: channels of the sequence neck.
        out_channels: CTC classes (the dictionary, its optional space, and the blank at 0).
        mid_channels: a hidden Linear layer (``fc1``, ``fc2``) instead of one ``fc`` (PaddleOCR's option).
    """

    def __init__(self, in_channels: int, out_channels: int, mid_channels: int | None = None) -> None:
        super().__init__()
        if mid_channels is None:
            self.fc = nn.Linear(in_channels, out_channels)
        else:
            self.fc1 = nn.Linear(in_channels, mid_channels)
            self.fc2 = nn.Linear(mid_channels, out_channels)
        self.mid_channels = mid_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.fc(x) if self.mid_channels is None else self.fc2(self.fc1(x))
        return logits if self.training else F.softmax(logits, dim=2)
