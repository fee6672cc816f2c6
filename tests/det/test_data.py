"""Detection data: the three formats load, convert into one another and agree; the dataset check reports, fixes
and refuses bad boxes with their file; class names flow from the annotations."""

from __future__ import annotations

import json

import numpy as np
import pytest

from oarkit.core.errors import DataError
from oarkit.det.data import DetectionData, check_records, convert_dataset, read_split
from oarkit.det.data.synthetic import CLASSES


def _same(a, b):
    assert len(a) == len(b)
    for ra, rb in zip(a, b):
        assert (ra.width, ra.height) == (rb.width, rb.height)
        np.testing.assert_allclose(ra.boxes, rb.boxes, atol=0.02)
        np.testing.assert_array_equal(ra.labels, rb.labels)


def test_synthetic_set_is_coco_with_exact_boxes(det_shapes_root):
    records, classes = read_split("coco", det_shapes_root, "train")
    assert classes == list(CLASSES) and len(records) == 12
    assert all(len(r.boxes) >= 1 for r in records)
    _, issues = check_records(records, len(classes), action="report")
    assert issues == []


@pytest.mark.parametrize("chain", [("voc", "yolo", "coco"), ("yolo", "voc", "coco")])
def test_formats_convert_round_trip(det_shapes_root, tmp_path, chain):
    original = {s: read_split("coco", det_shapes_root, s)[0] for s in ("train", "val")}
    src, fmt = det_shapes_root, "coco"
    for i, target in enumerate(chain):
        dst = tmp_path / f"{i}_{target}"
        assert convert_dataset(fmt, src, target, dst) == {"train": 12, "val": 6}
        records, classes = read_split(target, dst, "val")
        assert classes == list(CLASSES)
        _same(records, original["val"])
        src, fmt = dst, target
    _same(read_split("coco", src, "train")[0], original["train"])


def _bad_coco(root, tmp_path):
    data = json.loads((root / "annotations" / "instances_train.json").read_text())
    anns = data["annotations"]
    anns[0]["bbox"] = [10, 10, 0, 5]          # degenerate: no width
    anns[1]["bbox"] = [50, 50, 30, 30]        # leaves the 64x64 image
    anns[2]["category_id"] = 99               # unknown category
    out = tmp_path / "bad"
    (out / "annotations").mkdir(parents=True)
    (out / "annotations" / "instances_train.json").write_text(json.dumps(data))
    (out / "train").symlink_to(root / "train")
    return out, [a["image_id"] for a in anns[:3]]


def test_check_reports_fixes_and_refuses_with_the_file(det_shapes_root, tmp_path):
    root, _ = _bad_coco(det_shapes_root, tmp_path)
    records, classes = read_split("coco", root, "train")
    kept, issues = check_records(records, len(classes), action="report")
    assert sorted(i.kind for i in issues) == ["degenerate", "out_of_image", "unknown_category"]
    assert all(i.file.endswith("instances_train.json") for i in issues)
    assert "99" in next(i.detail for i in issues if i.kind == "unknown_category")
    fixed, _ = check_records(records, len(classes), action="fix")
    assert sum(len(r.boxes) for r in fixed) == sum(len(r.boxes) for r in records) - 2  # degenerate, unknown dropped
    assert check_records(fixed, len(classes), action="report")[1] == []
    with pytest.raises(DataError, match=r"(?s)1 degenerate, 1 out-of-image, 1 unknown-category.*instances_train.json"):
        check_records(records, len(classes), action="refuse")
    data = DetectionData(root=str(root), size=64, check="refuse")
    with pytest.raises(DataError, match="data.check=fix"):
        data.records("train")


def test_classes_and_batches_from_the_data_module(det_shapes_root):
    data = DetectionData(root=str(det_shapes_root), size=64, batch_size=4)
    assert data.classes == list(CLASSES)
    ds = data.val_dataset()
    image, target = ds[0]
    assert image.shape == (3, 64, 64) and target["boxes"].shape[1] == 4
    assert tuple(target["scale"].tolist()) == (1.0, 1.0) and tuple(target["orig_size"].tolist()) == (64, 64)
    data96 = DetectionData(root=str(det_shapes_root), size=[96, 128])
    image, target96 = data96.val_dataset()[0]
    assert image.shape == (3, 96, 128)
    np.testing.assert_allclose(target96["boxes"].numpy(), target["boxes"].numpy() * [2, 1.5, 2, 1.5], rtol=1e-5)


def test_vocdevkit_id_lists(det_shapes_root, tmp_path):
    convert_dataset("coco", det_shapes_root, "voc", tmp_path, splits=("val",))
    year = tmp_path / "VOCdevkit" / "VOC2007"
    ids = [p.stem for p in sorted((year / "Annotations").glob("*.xml"))]
    (year / "ImageSets" / "Main").mkdir(parents=True)
    (year / "ImageSets" / "Main" / "test.txt").write_text("\n".join(ids) + "\n")
    by_ids, classes = read_split("voc", tmp_path, "val", list_file=str(year / "ImageSets" / "Main" / "test.txt"))
    by_pairs, _ = read_split("voc", tmp_path, "val")
    assert classes == list(CLASSES)
    _same(by_ids, by_pairs)
