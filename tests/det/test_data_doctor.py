"""The dataset doctor on detection data: det's own box check (degenerate, out-of-image boxes) as findings."""

from __future__ import annotations

import json

from oarkit.core.data.doctor import check_data_module
from oarkit.det import DetectionData


def test_demo_set_passes_and_bad_boxes_are_reported(det_shapes_root, tmp_path):
    report = check_data_module(DetectionData(root=str(det_shapes_root)))
    assert report.ok and report.stats["train"]["samples"] == 12 and report.stats["val"]["samples"] == 6

    annotation = det_shapes_root / "annotations" / "instances_train.json"
    coco = json.loads(annotation.read_text())
    coco["annotations"][0]["bbox"] = [10, 10, 0, 5]  # no width
    coco["annotations"][1]["bbox"] = [50, 50, 40, 40]  # leaves the 64x64 image
    broken = tmp_path / "instances_train.json"
    broken.write_text(json.dumps(coco))
    data = DetectionData(root=str(det_shapes_root), train_annotation=str(broken))
    by_kind = {f.kind: f for f in check_data_module(data).findings}
    assert by_kind["det/degenerate_box"].severity == "warning" and by_kind["det/degenerate_box"].split == "train"
    assert by_kind["det/out_of_image_box"].files == [str(broken)]
    refused = DetectionData(root=str(det_shapes_root), train_annotation=str(broken), check="refuse")
    assert not check_data_module(refused).ok
