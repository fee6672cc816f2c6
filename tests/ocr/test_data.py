"""The renderer, label formats, DB targets, datasets, the multi-scale sampler, losses and metrics."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
import torch
from torch.utils.data import SequentialSampler

from oarkit.core.errors import DataError
from oarkit.ocr.charset import CharDictionary
from oarkit.ocr.data import (
    MultiScaleBatchSampler,
    OCRDetData,
    OCRRecData,
    db_targets,
    read_det_labels,
    read_icdar2015_gt,
    read_ppocrlabel,
    write_lmdb_rec_set,
)
from oarkit.ocr.losses import CTCLoss, DBLoss
from oarkit.ocr.metrics import DetMetric, RecMetric, character_error_rate, edit_distance, match_detections
from oarkit.ocr.postprocess import Decoded
from oarkit.ocr.render import render_line, render_page


def test_renderer_is_seeded_and_quads_hold_the_ink():
    a = render_page(4, size=(200, 320), language="mixed", seed=7)
    b = render_page(4, size=(200, 320), language="mixed", seed=7)
    assert np.array_equal(a.image, b.image) and a.text == b.text and len(a.lines) >= 2
    grey = a.image.astype(np.float32).mean(axis=2)
    background = np.median(grey)
    for line in a.lines:
        x0, y0 = line.points.min(axis=0).astype(int)
        x1, y1 = line.points.max(axis=0).astype(int)
        inside = np.abs(grey[y0:y1, x0:x1] - background) > 40
        assert inside.mean() > 0.05, line.text  # the quad holds the text's strokes
    assert any(ord(c) > 0x2E7F for c in a.text + render_page(4, language="ch", seed=1).text)
    line = render_line("Hello 你好", height=32, seed=1)
    assert line.shape[0] == 32 and line.shape[1] > 64


def test_paddleocr_and_ppocrlabel_labels(tmp_path):
    regions = [{"transcription": "abc", "points": [[1, 2], [30, 2], [30, 12], [1, 12]]},
               {"transcription": "###", "points": [[5, 20], [9, 20], [9, 24], [5, 24]]},
               {"transcription": "d", "points": [[1, 30], [9, 30], [9, 38], [1, 38]], "difficult": True}]
    (tmp_path / "train.txt").write_text(f"img/a.jpg\t{json.dumps(regions)}\n\n", encoding="utf-8")
    (path, instances), = read_det_labels(tmp_path / "train.txt")
    assert path.endswith("img/a.jpg") and [i.ignore for i in instances] == [False, True, True]
    assert instances[0].points.shape == (4, 2)
    folder = tmp_path / "batch1"
    folder.mkdir()
    (folder / "Label.txt").write_text(f"batch1/a.jpg\t{json.dumps(regions[:1])}\n", encoding="utf-8")
    (path, _), = read_ppocrlabel(folder)
    assert path == str(tmp_path / "batch1" / "a.jpg")
    (tmp_path / "bad.txt").write_text("img/a.jpg [no tab]\n", encoding="utf-8")
    with pytest.raises(DataError, match="bad.txt:1"):
        read_det_labels(tmp_path / "bad.txt")


def test_icdar2015_ground_truth(tmp_path):
    gt = tmp_path / "gt_img_1.txt"
    gt.write_text("\ufeff377,117,463,117,465,130,378,130,Genaxis Theatre\n374,155,409,155,409,170,374,170,###\n"
                  "1,1,5,1,5,5,1,5,a,b\n", encoding="utf-8")
    instances = read_icdar2015_gt(gt)
    assert [i.text for i in instances] == ["Genaxis Theatre", "###", "a,b"]
    assert [i.ignore for i in instances] == [False, True, False]


def test_lmdb_recognition_set(tmp_path, rec_root):
    lines = [line.split("\t") for line in (rec_root / "train.txt").read_text().splitlines()][:3]
    samples = [((rec_root / p).read_bytes(), label) for p, label in lines]
    write_lmdb_rec_set(tmp_path / "train", samples)
    data = OCRRecData(root=str(tmp_path), format="lmdb", train_list="train", dictionary="en")
    dataset = data.dataset("train")
    assert len(dataset) == 3
    item = dataset[1]
    assert item["text"] == lines[1][1] and item["image"].shape == (3, 48, 320)


def test_db_targets_mark_shrunk_text_and_its_border():
    poly = np.array([[20, 20], [100, 20], [100, 50], [20, 50]], np.float32)
    t = db_targets([poly], [False], 80, 120)
    shrink = t["shrink_map"]
    assert shrink[35, 60] == 1 and shrink[21, 21] == 0 and shrink[5, 5] == 0
    assert 0.3 < shrink.sum() / (80 * 30) < 0.8  # about (1 - 0.4^2) of the area is trimmed from the edges
    assert t["threshold_map"][20, 60] == pytest.approx(0.7, abs=0.05)  # on the border: thresh_max
    assert t["threshold_map"][35, 60] == pytest.approx(0.3, abs=1e-6)  # deep inside: thresh_min
    assert t["threshold_mask"][20, 60] == 1 and t["threshold_mask"][5, 5] == 0
    ignored = db_targets([poly], [True], 80, 120)
    assert ignored["shrink_map"].sum() == 0 and ignored["shrink_mask"][35, 60] == 0


def test_det_dataset_train_and_eval_samples(det_root):
    data = OCRDetData(root=str(det_root), crop_size=128, limit_side_len=96)
    sample = data.train_dataset()[0]
    assert sample["image"].shape == (3, 128, 128)
    assert {k: tuple(v.shape) for k, v in sample.items() if k != "image"} == {
        "shrink_map": (128, 128), "shrink_mask": (128, 128), "threshold_map": (128, 128), "threshold_mask": (128, 128)}
    assert sample["shrink_map"].sum() > 0
    val = data.val_dataset()[0]
    assert val["image"].shape == (3, 96, 96) and val["source_size"] == (160, 160) and len(val["polys"]) >= 1


def test_multi_scale_sampler_keeps_pixels_per_batch():
    sampler = MultiScaleBatchSampler(SequentialSampler(range(100)), [160, 320, 640], 8, base_width=320, seed=1)
    batches = list(sampler)
    assert sorted(i for b in batches for i, _ in b) == list(range(100))
    for batch in batches[:-1]:
        width = batch[0][1]
        assert all(w == width for _, w in batch) and len(batch) == {160: 16, 320: 8, 640: 4}[width]
    assert len({b[0][1] for b in batches}) > 1 and len(sampler) == len(batches)


def test_rec_dataset_takes_a_width_from_the_sampler(rec_root):
    data = OCRRecData(root=str(rec_root), dictionary="en", multi_scale_widths=[160, 256])
    dataset = data.train_dataset()
    assert dataset[(0, 160)]["image"].shape == (3, 48, 160)
    item = dataset[0]
    assert item["codes"] == CharDictionary.load("en").encode(item["text"])


def test_db_loss_prefers_the_right_maps():
    poly = np.array([[8, 8], [56, 8], [56, 24], [8, 24]], np.float32)
    targets = {k: torch.from_numpy(v)[None] for k, v in db_targets([poly], [False], 32, 64).items()}
    good = torch.stack([targets["shrink_map"][0].clamp(0.02, 0.98), targets["threshold_map"][0],
                        targets["shrink_map"][0].clamp(0.02, 0.98)])[None]
    bad = torch.full_like(good, 0.5)
    loss_good, loss_bad = DBLoss()(good, targets), DBLoss()(bad, targets)
    assert loss_good["loss"] < 0.5 < loss_bad["loss"]
    assert set(loss_good) == {"loss", "loss_shrink", "loss_threshold", "loss_binary"}


def test_ctc_loss_is_low_for_the_right_alignment():
    labels, lengths = torch.tensor([[1, 2, 0]]), torch.tensor([2])
    right = torch.full((1, 6, 4), -5.0)
    for t, c in enumerate([1, 1, 0, 2, 2, 0]):
        right[0, t, c] = 5.0
    wrong = right.roll(1, dims=2)
    assert CTCLoss()(right, labels, lengths) < 0.1 < CTCLoss()(wrong, labels, lengths)


def test_detection_matching_and_metric():
    gt = [np.array([[0, 0], [10, 0], [10, 10], [0, 10]]), np.array([[20, 0], [30, 0], [30, 10], [20, 10]]),
          np.array([[50, 50], [60, 50], [60, 60], [50, 60]])]
    pred = [np.array([[1, 0], [10, 0], [10, 10], [1, 10]]),    # IoU 0.9: a match
            np.array([[20, 0], [24, 0], [24, 10], [20, 10]]),  # IoU 0.4: no match
            np.array([[51, 51], [59, 51], [59, 59], [51, 59]])]  # inside a don't-care region: not counted
    counts = match_detections(gt, [False, False, True], pred)
    assert counts == {"gt": 2, "pred": 2, "matched": 1}
    metric = DetMetric()
    metric.update([{"boxes": np.stack(pred)}], {"polys": [gt], "ignores": [[False, False, True]]})
    assert metric.compute()["hmean"] == pytest.approx(0.5)


def test_recognition_metrics():
    assert edit_distance("kitten", "sitting") == 3 and edit_distance("", "abc") == 3
    assert character_error_rate(["abd", "x"], ["abc", "xy"]) == pytest.approx(2 / 5)
    metric = RecMetric()
    metric.update([Decoded("hello world", 0.9), Decoded("fo0", 0.5)], {"texts": ["helloworld", "foo"]})
    out = metric.compute()
    assert out["acc"] == 0.5 and out["cer"] == pytest.approx(1 / 13)
    assert out["norm_edit_dis"] == pytest.approx(1 - (0 + 1 / 3) / 2)


def test_rendered_rec_set_reads_back(rec_root):
    first = (rec_root / "val.txt").read_text(encoding="utf-8").splitlines()[0]
    path, label = first.split("\t")
    image = cv2.imread(str(rec_root / path))
    assert image is not None and image.shape[0] == 48 and label
