"""The SAR guidance head of PP-OCRv3's recognizers: PaddleOCR ``ppocr/modeling/heads/rec_sar_head.py``
``SARHead`` (``SAREncoder`` + ``ParallelSARDecoder``), used in training only.

"Show, Attend and Read: A Simple and Strong Baseline for Irregular Text Recognition", Li et al., AAAI 2019,
https://arxiv.org/abs/1811.00751. An LSTM encodes the column-max-pooled features into a holistic feature; an LSTM
decoder, teacher-forced with the label, attends over the 2D feature map at each step. PP-OCRv3 trains it beside
the CTC branch so that the backbone learns from a sequence loss; inference uses CTC alone.

Module paths are Paddle's (``encoder.rnn_encoder``, ``encoder.linear``, ``decoder.conv1x1_1``,
``decoder.conv3x3_1``, ``decoder.conv1x1_2``, ``decoder.rnn_decoder``, ``decoder.embedding``,
``decoder.prediction``); Paddle's LSTM parameters are ``rnn_*.<layer>.cell.weight_ih`` (map with
:data:`LSTM_RENAMES`). Classes follow PaddleOCR's SARLabelEncode: characters, ``<UKN>``, ``<BOS/EOS>`` (the start
index ``out_channels - 2``) and ``<PAD>`` (``out_channels - 1``, never predicted).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

#: Paddle ``nn.LSTM(direction="forward")`` names -> ``torch.nn.LSTM``'s
LSTM_RENAMES = ((r"\.(rnn_encoder|rnn_decoder)\.(\d+)\.cell\.(weight|bias)_(ih|hh)$", r".\1.\3_\4_l\2"),)


class SAREncoder(nn.Module):
    """Column max-pool, two-layer LSTM over the width, the valid last step, ``linear``."""

    def __init__(self, d_model: int, d_enc: int = 512, enc_drop_rnn: float = 0.1) -> None:
        super().__init__()
        self.rnn_encoder = nn.LSTM(d_model, d_enc, num_layers=2, dropout=enc_drop_rnn, batch_first=True)
        self.linear = nn.Linear(d_enc, d_enc)

    def forward(self, feat: torch.Tensor, valid_ratios: torch.Tensor) -> torch.Tensor:
        feat_v = F.max_pool2d(feat, kernel_size=(feat.shape[2], 1)).squeeze(2).transpose(1, 2)
        holistic = self.rnn_encoder(feat_v)[0]
        steps = holistic.shape[1]
        last = (torch.ceil(valid_ratios * steps).long().clamp(max=steps) - 1).clamp(min=0)
        return self.linear(holistic[torch.arange(holistic.shape[0], device=feat.device), last])


class ParallelSARDecoder(nn.Module):
    """Teacher-forced LSTM decoder with 2D attention; predicts ``out_channels - 1`` classes per step."""

    def __init__(self, out_channels: int, d_model: int, d_enc: int = 512, d_k: int = 512,
                 pred_dropout: float = 0.1) -> None:
        super().__init__()
        self.num_classes = out_channels
        self.padding_idx = out_channels - 1
        self.conv1x1_1 = nn.Linear(d_enc, d_k)
        self.conv3x3_1 = nn.Conv2d(d_model, d_k, 3, padding=1)
        self.conv1x1_2 = nn.Linear(d_k, 1)
        self.rnn_decoder = nn.LSTM(d_enc, d_enc, num_layers=2, batch_first=True)
        self.embedding = nn.Embedding(out_channels, d_enc, padding_idx=self.padding_idx)
        self.pred_dropout = nn.Dropout(pred_dropout)
        self.prediction = nn.Linear(d_enc + d_model + d_enc, out_channels - 1)

    def forward(self, feat: torch.Tensor, holistic: torch.Tensor, label: torch.Tensor,
                valid_ratios: torch.Tensor) -> torch.Tensor:
        decoder_input = torch.cat([holistic[:, None], self.embedding(label)], dim=1)
        y = self.rnn_decoder(decoder_input)[0]                                  # B, T, C
        query = self.conv1x1_1(y)[..., None, None]                               # B, T, d_k, 1, 1
        key = self.conv3x3_1(feat)[:, None]                                      # B, 1, d_k, h, w
        weight = self.conv1x1_2(torch.tanh(key + query).permute(0, 1, 3, 4, 2))  # B, T, h, w, 1
        b, t, h, w, _ = weight.shape
        valid_width = torch.ceil(valid_ratios * w).long().clamp(max=w)
        masked = torch.arange(w, device=feat.device)[None] >= valid_width[:, None]  # B, w
        weight = weight.masked_fill(masked[:, None, None, :, None], float("-inf"))
        weight = torch.softmax(weight.reshape(b, t, -1), dim=-1).reshape(b, t, 1, h, w)
        glimpse = (feat[:, None] * weight).sum(dim=(3, 4))                      # B, T, C
        out = self.prediction(torch.cat([y, glimpse, holistic[:, None].expand(b, t, -1)], dim=2))
        return self.pred_dropout(out)[:, 1:]


class SARHead(nn.Module):
    """SAR as PP-OCRv3 trains it: ``forward(feat, label_sar, valid_ratio) -> logits[B, L, out_channels - 1]``.

    Args:
        in_channels: channels of the backbone feature.
        out_channels: SAR classes (characters + ``<UKN>``, ``<BOS/EOS>``, ``<PAD>``).
        enc_dim: width of the encoder and decoder LSTMs.
        max_text_length: the longest label (kept for decoding lengths).
    """

    def __init__(self, in_channels: int, out_channels: int, enc_dim: int = 512, max_text_length: int = 25) -> None:
        super().__init__()
        self.max_text_length = max_text_length
        self.encoder = SAREncoder(in_channels, enc_dim)
        self.decoder = ParallelSARDecoder(out_channels, in_channels, enc_dim, d_k=512)

    def forward(self, feat: torch.Tensor, label: torch.Tensor, valid_ratios: torch.Tensor) -> torch.Tensor:
        valid_ratios = valid_ratios.to(feat.dtype)
        return self.decoder(feat, self.encoder(feat, valid_ratios), label, valid_ratios)
