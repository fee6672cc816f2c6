"""LSTM recognizers export to ONNX and ``.pt2`` one after the other in one process, with a dynamic number of steps.

torch.onnx (torch 2.14) captures ``aten.lstm`` under dynamic shapes with a while_loop decomposition it installs
without clearing the operator's dispatch cache; the first export's type-promotion pass re-ran the graph with the
stock decomposition (declaring the output's steps fixed at the traced count) and cached it, so every later LSTM
capture in the process traced that one and failed ("stack expects each tensor to be equal size"):
``ocr/rec_mv3_bilstm_ctc`` then ``ocr/rec_r34_vd_bilstm_ctc`` did not export in one pytest run.
A plain ``torch.export`` with the stock decomposition guarded the steps to the traced count (the ``.pt2`` failed at
every other width). :func:`oarkit.core.export.exporters.rnn.rnn_while_loop_decompositions` keeps the while_loop
decomposition for the whole export and clears that cache around it. Tiny CRNNs (two stride-2 convolutions,
PaddleOCR's BiLSTM neck and CTC head) keep this fast.
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

onnx = pytest.importorskip("onnx")
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


def test_lstm_models_export_one_after_another_with_dynamic_steps(tmp_path):
    torch.manual_seed(0)
    for i, hidden_size in enumerate((8, 12, 8)):  # two models, then the first again
        folder = tmp_path / f"{i}_hidden{hidden_size}"
        report = export(_source(hidden_size, folder), "onnx,pt2", output_dir=folder,
                        example_inputs=(torch.randn(1, 3, HEIGHT, WIDTH),))
        # verified on fresh inputs of other widths (so other step counts) against eager
        for row in report.rows:
            assert row.status == "pass", f"BiLSTM hidden {hidden_size}, {row.format}: {row.message}"
        row = report.rows[0]
        assert row.format == "onnx" and row.max_rel < 1e-4, (row.format, row.max_rel)
        (output,) = onnx.load(f"{row.folder}/model.onnx").graph.output
        dims = output.type.tensor_type.shape.dim
        # batch and steps are symbols, not the traced sizes (steps were declared 16 = 64 / 4 before)
        assert [d.HasField("dim_param") for d in dims] == [True, True, False], dims
        assert dims[2].dim_value == DICTIONARY.num_classes
