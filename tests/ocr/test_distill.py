"""``distill=kd`` for OCR: a recognizer learns a frozen recognizer's CTC distributions (the teacher's eval
probabilities), a text detector a frozen detector's shrink map; both save a plain student."""

from __future__ import annotations

import csv
import json

import torch

from oarkit.core.cli import main


def _kd_rows(run) -> list[dict[str, str]]:
    return list(csv.DictReader((run / "metrics.csv").read_text().splitlines()))


def test_a_recognizer_distils_the_ctc_distributions(rec_root, quick, tmp_path):
    recipe = "ocr/ppocrv4_rec_mobile_ch_48x320"
    data = [f"data.root={rec_root}", "data.dictionary=en", "data.batch_size=2", "data.width=160",
            "data.multi_scale_widths=[160]"]
    assert main(["train", "-c", recipe, *quick, *data]) == 0
    student = tmp_path / "student"
    assert main(["train", "-c", recipe, *quick, *data, f"output_dir={student}", "distill=kd",
                 f"distill.teacher={tmp_path / 'run'}"]) == 0
    assert json.loads((student / "best" / "meta.json").read_text())["distill"]["method"] == "kd"
    rows = _kd_rows(student)
    assert rows and all(float(r["train_kd_loss"]) > 0 for r in rows) and "train_loss_nrtr" in rows[0]


def test_a_text_detector_distils_the_shrink_map(det_root, quick, tmp_path):
    recipe = "ocr/ppocrv4_det_mobile_ch_640"
    tiny = [f"data.root={det_root}", "data.crop_size=[128,128]", "data.batch_size=2", "data.limit_side_len=160"]
    assert main(["train", "-c", recipe, *quick, *tiny]) == 0
    student = tmp_path / "student"
    assert main(["train", "-c", recipe, *quick, *tiny, f"output_dir={student}", "distill=kd",
                 f"distill.teacher={tmp_path / 'run'}", "distill.temperature=1"]) == 0
    assert json.loads((student / "best" / "meta.json").read_text())["distill"]["temperature"] == 1.0
    assert all(float(r["train_kd_loss"]) >= 0 for r in _kd_rows(student))


def test_the_shrink_map_logits_recover_the_probabilities():
    from oarkit.ocr.tasks.det import TextDetectionTask

    prob = torch.rand(2, 1, 8, 8)
    [(logits, dim)] = TextDetectionTask.distill_logits(None, prob)
    assert dim == 1 and torch.allclose(logits.softmax(dim)[:, 0], prob.clamp(1e-6, 1 - 1e-6)[:, 0], atol=1e-6)
    maps = {"maps": torch.cat([prob, torch.rand(2, 2, 8, 8)], dim=1)}  # training output: shrink map first
    assert torch.equal(TextDetectionTask.distill_logits(None, maps)[0][0], logits)
