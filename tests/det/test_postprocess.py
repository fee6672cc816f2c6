"""The shared multiclass NMS: the same detections as per-image batched NMS, fixed-size outputs with a count, and
an ONNX export (dynamo) that matches eager with a dynamic batch."""

from __future__ import annotations

import pytest
import torch
import torchvision

from oarkit.core.errors import ConfigError
from oarkit.det.postprocess import NMSConfig, multiclass_nms, split_detections


def _candidates(batch: int, n: int = 600, classes: int = 3, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(batch, n, 2, generator=g) * 200
    wh = torch.rand(batch, n, 2, generator=g) * 50 + 2
    return torch.cat([xy, xy + wh], -1), torch.rand(batch, n, classes, generator=g) ** 3


def _reference(boxes, scores, config):
    """Per image: every (box, class) pair, the best pre_nms_top_k, batched NMS, threshold, max_detections."""
    out = []
    for b, s in zip(boxes, scores):
        flat = s.reshape(-1)
        top, idx = flat.topk(min(config.pre_nms_top_k, flat.numel()))
        box, label = b[idx // s.shape[1]], idx % s.shape[1]
        keep = torchvision.ops.batched_nms(box, top, label, config.iou_threshold)
        keep = keep[top[keep] >= config.score_threshold][: config.max_detections]
        out.append((box[keep], top[keep], label[keep]))
    return out


def test_matches_per_image_batched_nms_with_fixed_size_outputs():
    boxes, scores = _candidates(3)
    config = NMSConfig(score_threshold=0.05, iou_threshold=0.5, pre_nms_top_k=800, max_detections=60)
    out_boxes, out_scores, out_labels, num = multiclass_nms(boxes, scores, config)
    assert out_boxes.shape == (3, 60, 4) and out_scores.shape == (3, 60) and num.shape == (3,)
    for det, (b, s, lab), n in zip(split_detections(out_boxes, out_scores, out_labels, num), _reference(
            boxes, scores, config), num.tolist()):
        assert n == len(s)
        torch.testing.assert_close(det["boxes"], b)
        torch.testing.assert_close(det["scores"], s)
        assert torch.equal(det["labels"], lab)
    assert float(out_scores[0, int(num[0]):].abs().sum()) == 0.0  # rows past the count are zeros


def test_a_threshold_leaves_fewer_rows_and_bad_settings_fail():
    boxes, scores = _candidates(1)
    *_, few = multiclass_nms(boxes, scores, NMSConfig(score_threshold=0.9))
    *_, many = multiclass_nms(boxes, scores, NMSConfig(score_threshold=0.01))
    assert 0 < int(few) < int(many)
    with pytest.raises(ConfigError, match="pre_nms_top_k=2000"):
        NMSConfig(pre_nms_top_k=2000)


class _NMS(torch.nn.Module):
    def forward(self, boxes, scores):
        return multiclass_nms(boxes, scores, NMSConfig(max_detections=50))


def test_onnx_export_matches_eager_with_a_dynamic_batch(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    boxes, scores = _candidates(2, n=1500, classes=4)  # 6000 (box, class) pairs: more than NMS exports alone
    batch = torch.export.Dim("batch", min=1, max=8)
    torch.onnx.export(_NMS(), (boxes, scores), tmp_path / "nms.onnx", dynamo=True, external_data=False,
                      dynamic_shapes=({0: batch}, {0: batch}))
    session = ort.InferenceSession(str(tmp_path / "nms.onnx"))
    for b in (1, 3):
        boxes, scores = _candidates(b, n=1500, classes=4, seed=b)
        eager = _NMS()(boxes, scores)
        names = [i.name for i in session.get_inputs()]
        got = session.run(None, dict(zip(names, (boxes.numpy(), scores.numpy()))))
        for e, g in zip(eager, got):
            torch.testing.assert_close(torch.from_numpy(g).to(e.dtype), e)
