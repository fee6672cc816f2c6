"""``distill=kd`` for OCR: a recognizer learns a frozen recognizer's CTC distributions (the teacher's eval
probabilities), a text detector a frozen detector's shrink map; both save a plain student."""

from __future__ import annotations

import csv
import json

import pytest
import torch

from oarkit.core.cli import main
from oarkit.core.errors import ConfigError


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
    # a student of a smaller dictionary (ic15: 36 characters) reads the teacher's (en: 95) through its own
    small = tmp_path / "small"
    assert main(["train", "-c", recipe, *quick, *data, "data.dictionary=ic15", "data.use_space_char=false",
                 f"output_dir={small}", "distill=kd", f"distill.teacher={tmp_path / 'run'}"]) == 0
    assert all(float(r["train_kd_loss"]) > 0 for r in _kd_rows(small))
    assert json.loads((small / "best" / "meta.json").read_text())["dictionary"]["name"] == "ic15"


def _rec_task(dictionary: str):
    from oarkit.ocr.charset import CharDictionary
    from oarkit.ocr.tasks.rec import TextRecognitionTask

    task = TextRecognitionTask()
    task.dictionary = CharDictionary.load(dictionary)
    return task


def test_a_teacher_of_another_dictionary_is_read_through_the_students():
    from oarkit.ocr.charset import CharDictionary
    from oarkit.ocr.tasks.rec import LOG_FLOOR

    task = _rec_task("ic15")  # 0-9a-z
    teacher = CharDictionary(["z", "a", "B", "9"], name="mixed")  # holds 3 of ic15's 36: too few
    with pytest.raises(ConfigError, match=r"holds 3 of the student's 36 characters \('ic15'\): too few"):
        task.prepare_distill_teacher(torch.nn.Identity(), {"dictionary": teacher.to_dict()})
    en = CharDictionary.load("en")
    task.prepare_distill_teacher(torch.nn.Identity(), {"dictionary": en.to_dict()})
    logits = torch.arange(float(en.num_classes)).expand(2, 5, -1)  # each column holds its own index
    student = torch.zeros(2, 5, task.dictionary.num_classes)
    _, aligned = task.align_distill_logits(student, logits, -1)
    chars = task.dictionary.characters
    assert aligned.shape == student.shape and aligned[0, 0, 0] == 0  # blank to blank
    assert [int(v) for v in aligned[1, 4, 1:]] == [en.index[c] for c in chars]
    # a character the teacher lacks gets the probability floor
    task.prepare_distill_teacher(torch.nn.Identity(), {"dictionary": CharDictionary(chars[:-1]).to_dict()})
    _, aligned = task.align_distill_logits(student, logits[..., :len(chars)], -1)
    assert aligned[0, 0, -1] == LOG_FLOOR and aligned[0, 0, 1] == 1
    # the same dictionary: nothing to map
    task.prepare_distill_teacher(torch.nn.Identity(), {"dictionary": task.dictionary.to_dict()})
    assert task.teacher_columns is None


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
