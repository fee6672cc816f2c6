"""The NRTR guidance head of PP-OCRv4's recognizers: PaddleOCR ``ppocr/modeling/heads/rec_nrtr_head.py``
``Transformer`` (decoder only) behind ``MultiHead``'s ``before_gtc``.

"NRTR: A No-Recurrence Sequence-to-Sequence Model For Scene Text Recognition", Sheng et al., ICDAR 2019,
https://arxiv.org/abs/1806.00926. In PP-OCRv4 ("GTC": guided training of CTC) an attention decoder reads the
backbone's features during training only, so that they learn from a sequence loss; inference uses the CTC branch
alone and Paddle's inference models leave this head out.

Module paths are Paddle's (``embedding.embedding``, ``positional_encoding.pe``, ``decoder.<i>.self_attn.qkv``,
``...cross_attn.q`` / ``.kv``, ``.out_proj``, ``norm1..3``, ``mlp.fc1`` / ``fc2``, ``tgt_word_prj``). Teacher
forcing: the decoder reads ``label_gtc[:, :-1]`` (``<s>`` first) and predicts ``label_gtc[:, 1:]``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .sequence import Mlp


class MultiheadAttention(nn.Module):
    """Self-attention (``qkv``) or cross-attention (``q`` on the query, ``kv`` on the memory)."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, self_attn: bool = False) -> None:
        super().__init__()
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.is_self_attn = self_attn
        if self_attn:
            self.qkv = nn.Linear(embed_dim, embed_dim * 3)
        else:
            self.q = nn.Linear(embed_dim, embed_dim)
            self.kv = nn.Linear(embed_dim, embed_dim * 2)
        self.attn_drop = nn.Dropout(dropout)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query: torch.Tensor, key: torch.Tensor | None = None,
                attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        b, n, _ = query.shape
        if self.is_self_attn:
            q, k, v = self.qkv(query).reshape(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        else:
            q = self.q(query).reshape(b, n, self.num_heads, self.head_dim).transpose(1, 2)
            k, v = self.kv(key).reshape(b, key.shape[1], 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        if attn_mask is not None:
            attn = attn + attn_mask
        attn = self.attn_drop(torch.softmax(attn, dim=-1))
        return self.out_proj((attn @ v).transpose(1, 2).reshape(b, n, self.embed_dim))


class TransformerBlock(nn.Module):
    """Post-norm decoder block: masked self-attention, cross-attention on the memory, ReLU MLP."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, attention_dropout_rate: float = 0.0,
                 residual_dropout_rate: float = 0.1, epsilon: float = 1e-5) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, attention_dropout_rate, self_attn=True)
        self.norm1 = nn.LayerNorm(d_model, eps=epsilon)
        self.dropout1 = nn.Dropout(residual_dropout_rate)
        self.cross_attn = MultiheadAttention(d_model, nhead, attention_dropout_rate)
        self.norm2 = nn.LayerNorm(d_model, eps=epsilon)
        self.dropout2 = nn.Dropout(residual_dropout_rate)
        self.mlp = Mlp(d_model, dim_feedforward, act=nn.ReLU, drop=residual_dropout_rate)
        self.norm3 = nn.LayerNorm(d_model, eps=epsilon)
        self.dropout3 = nn.Dropout(residual_dropout_rate)

    def forward(self, tgt: torch.Tensor, memory: torch.Tensor, self_mask: torch.Tensor | None) -> torch.Tensor:
        tgt = self.norm1(tgt + self.dropout1(self.self_attn(tgt, attn_mask=self_mask)))
        tgt = self.norm2(tgt + self.dropout2(self.cross_attn(tgt, key=memory)))
        return self.norm3(tgt + self.dropout3(self.mlp(tgt)))


class Embeddings(nn.Module):
    """Token embedding (``embedding``, padding index 0) scaled by ``sqrt(d_model)``."""

    def __init__(self, d_model: int, vocab: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model, padding_idx=0)
        nn.init.normal_(self.embedding.weight, 0.0, d_model ** -0.5)
        self.d_model = d_model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.embedding(x) * math.sqrt(self.d_model)


class PositionalEncoding(nn.Module):
    """Sinusoidal positions (the buffer ``pe``, ``[max_len, 1, dim]`` as Paddle stores it) and dropout."""

    def __init__(self, dim: int, dropout: float = 0.1, max_len: int = 5000) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        position = torch.arange(max_len, dtype=torch.float32)[:, None]
        div_term = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
        pe = torch.zeros(max_len, dim)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe[:, None, :])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(x + self.pe[: x.shape[1], 0][None])


class Transformer(nn.Module):
    """NRTR's decoder over the backbone's flattened features (no encoder layers, as PP-OCRv4 configures it).

    Args:
        d_model: width (PP-OCRv4: 384).
        nhead: attention heads (``d_model // 32``).
        num_decoder_layers: decoder blocks (4).
        dim_feedforward: MLP width (``4 * d_model``).
        out_channels: NRTR classes before Paddle's ``+ 1`` (the CTC classes + 3).
    """

    def __init__(self, d_model: int, nhead: int, num_decoder_layers: int, dim_feedforward: int,
                 out_channels: int, residual_dropout_rate: float = 0.1) -> None:
        super().__init__()
        self.out_channels = out_channels + 1
        self.embedding = Embeddings(d_model, self.out_channels)
        self.positional_encoding = PositionalEncoding(d_model, residual_dropout_rate)
        self.decoder = nn.ModuleList([TransformerBlock(d_model, nhead, dim_feedforward,
                                                       residual_dropout_rate=residual_dropout_rate)
                                      for _ in range(num_decoder_layers)])
        self.tgt_word_prj = nn.Linear(d_model, self.out_channels, bias=False)
        nn.init.normal_(self.tgt_word_prj.weight, 0.0, d_model ** -0.5)

    def forward(self, memory: torch.Tensor, label: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits ``[B, L + 1, out_channels]`` for ``label`` (``<s> chars </s> pad``) trimmed to
        the longest line of the batch."""
        tgt = label[:, : 2 + int(length.max())][:, :-1]
        tgt = self.positional_encoding(self.embedding(tgt))
        n = tgt.shape[1]
        mask = torch.triu(torch.full((n, n), float("-inf"), device=tgt.device), diagonal=1)
        for layer in self.decoder:
            tgt = layer(tgt, memory, self_mask=mask)
        return self.tgt_word_prj(tgt)


class FCTranspose(nn.Module):
    """``[B, C, N] -> [B, N, C] -> fc`` (no bias): the backbone features as the decoder's memory."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.fc = nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.transpose(1, 2))
