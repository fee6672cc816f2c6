"""LSTM and GRU under ``torch.export`` with a dynamic sequence length: torch's while_loop decompositions for the
whole export, and the Python dispatcher's cached kernels of those operators forgotten around it.

Found on the CRNN recognizers (``ocr/rec_mv3_bilstm_ctc``, ``ocr/rec_r34_vd_bilstm_ctc``), whose sequence length
is computed from the input width by the backbone; torch 2.14.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import torch

#: the operators whose Python kernel torch.onnx swaps for a while_loop decomposition while it captures a graph with
#: dynamic shapes (``torch.export._patches.register_{lstm,gru}_while_loop_decomposition``)
RNN_OPS = ("lstm", "gru")


def _clear_rnn_dispatch_caches() -> None:
    for name in RNN_OPS:
        cache = getattr(getattr(torch.ops.aten, name).input, "_dispatch_cache", None)  # private: may go away
        if cache is not None:
            cache.clear()


@contextlib.contextmanager
def rnn_while_loop_decompositions() -> Iterator[None]:
    """LSTM and GRU traced by torch's while_loop decompositions for a whole export (ONNX, ``.pt2``), with the
    Python dispatcher's cached kernels of those operators forgotten on entry and on exit.

    The stock decomposition of ``aten.lstm.input`` unrolls the sequence at its traced length. Under a plain
    ``torch.export`` that guards the sequence length to the traced one: a CRNN's ``.pt2`` raised "Guard failed:
    ... == 16" at every width but the traced 64. torch.onnx (torch 2.14) installs the while_loop decompositions
    around its graph capture only, by assigning ``op.py_kernels``, which leaves the operator's ``_dispatch_cache``
    as it was; then

    - its type-promotion pass re-ran the captured graph outside that patch with the stock decomposition: the ONNX
      output declared a fixed number of steps (``[batch, 16, classes]``; onnxruntime warned at every other width);
    - that pass cached the stock kernel for ``AutogradCPU``, so every later capture in the process ignored the patch
      and traced the stock decomposition, which fails on a computed sequence length ("stack expects each tensor to
      be equal size"): a second LSTM model in one process, even the same one again, did not export to ONNX.

    The graph keeps its one ``lstm`` node (ONNX ``LSTM``) either way; only the traced shapes change, not numerics.
    Models without these operators are not affected. A torch without ``torch.export._patches`` gets the cache
    clearing alone.
    """
    try:
        from torch.export._patches import register_gru_while_loop_decomposition, register_lstm_while_loop_decomposition
        patches = (register_lstm_while_loop_decomposition, register_gru_while_loop_decomposition)
    except ImportError:
        patches = ()
    _clear_rnn_dispatch_caches()
    try:
        with contextlib.ExitStack() as stack, warnings.catch_warnings():
            # torch's own while_loop body calls torch._check_is_size, which torch 2.14 announces it will remove
            warnings.filterwarnings("ignore", message="_check_is_size will be removed", category=FutureWarning)
            for patch in patches:
                stack.enter_context(patch())
            yield
    finally:
        _clear_rnn_dispatch_caches()
