"""Two LSTM recognizers export to ONNX one after the other in one process.

torch.onnx (torch 2.14) captures ``aten.lstm`` under dynamic shapes with a while_loop decomposition it installs
without clearing the operator's dispatch cache; the first export's type-promotion pass cached the stock
decomposition, so every later LSTM capture in the process traced that one and failed ("stack expects each tensor
to be equal size"): ``ocr/rec_mv3_bilstm_ctc`` then ``ocr/rec_r34_vd_bilstm_ctc`` did not export in one pytest run.
:func:`oarkit.core.export.exporters.onnx.fresh_rnn_dispatch` clears that cache around each export. Tiny CRNNs (two
stride-2 convolutions, PaddleOCR's BiLSTM neck and CTC head) keep this fast.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from oarkit.core.export import export  # noqa: E402
from oarkit.core.export.source import ExportSource  # noqa: E402
from oarkit.ocr.charset import CharDictionary  # noqa: E402
from oarkit.ocr.data.datasets import RecPreprocess  # noqa: E402
from oarkit.ocr.models.sequence import CTCHead, SequenceEncoder  # noqa: E402
from oarkit.ocr.tasks import TextRecognitionTask  # noqa: E402

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

HEIGHT, WIDTH = 16, 64
DICTIONARY = CharDictionary("abc", name="abc")


class TinyCRNN(nn.Module):
    """Width / 4 after two stride-2 convolutions, height averaged to 1, then the ``rnn`` SequenceEncoder (a
    two-layer BiLSTM) and the CTC head: the sequence length the LSTM sees is computed from the input width, as in
    the registered CRNNs."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU())
        self.neck = SequenceEncoder(16, "rnn", hidden_size=hidden_size)
        self.head = CTCHead(self.neck.out_channels, DICTIONARY.num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.neck(self.backbone(x).mean(dim=2, keepdim=True)))


def _source(hidden_size: int, folder) -> ExportSource:
    task = TextRecognitionTask()
    preprocessing = RecPreprocess(height=HEIGHT, width=WIDTH).to_dict()
    task.restore({"dictionary": DICTIONARY.to_dict(), "preprocessing": preprocessing})
    return ExportSource(task=task, model=TinyCRNN(hidden_size).eval(), origin=f"tiny_crnn_{hidden_size}",
                        output_dir=folder, meta={})


def test_two_lstm_models_export_to_onnx_in_one_process(tmp_path):
    torch.manual_seed(0)
    for hidden_size in (8, 12, 8):  # two models, then the first again
        folder = tmp_path / f"h{hidden_size}_{len(list(tmp_path.iterdir()))}"
        report = export(_source(hidden_size, folder), "onnx", output_dir=folder,
                        example_inputs=(torch.randn(1, 3, HEIGHT, WIDTH),))
        row = report.rows[0]
        assert row.status == "pass", f"BiLSTM hidden {hidden_size}: {row.message}"
        assert row.max_rel is not None and row.max_rel < 1e-4, row.max_rel
