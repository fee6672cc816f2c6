"""The dataset doctor on OCR data: recognition labels that are empty or hold characters outside the dictionary,
detection pages without polygons."""

from __future__ import annotations

import shutil

from oarkit.core.data.doctor import check_data_module
from oarkit.ocr import OCRDetData, OCRRecData


def test_rendered_sets_pass(det_root, rec_root):
    assert check_data_module(OCRDetData(root=str(det_root))).ok
    assert check_data_module(OCRRecData(root=str(rec_root))).ok


def test_rec_labels(rec_root, tmp_path):
    root = tmp_path / "rec"
    shutil.copytree(rec_root, root)
    lines = (root / "train.txt").read_text(encoding="utf-8").splitlines()
    first, second = lines[0].split("\t")[0], lines[1].split("\t")[0]
    lines[0] = f"{first}\tprice: 5€ ☃"
    lines[1] = f"{second}\t"
    (root / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = check_data_module(OCRRecData(root=str(root), dictionary="en"))
    by_kind = {f.kind: f for f in report.findings}
    assert by_kind["ocr/empty_text"].severity == "error" and by_kind["ocr/empty_text"].files == [str(root / second)]
    unknown = by_kind["ocr/unknown_characters"]
    assert unknown.severity == "warning" and unknown.files == [str(root / first)] and "☃" in unknown.message
    assert "data.dictionary" in unknown.fix


def test_det_page_without_polygons(det_root, tmp_path):
    root = tmp_path / "det"
    shutil.copytree(det_root, root)
    lines = (root / "train.txt").read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0].split("\t")[0] + "\t[]"
    (root / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    finding = next(f for f in check_data_module(OCRDetData(root=str(root))).findings if f.kind == "ocr/no_text_regions")
    assert finding.severity == "warning" and finding.count == 1
