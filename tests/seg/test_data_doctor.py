"""The dataset doctor on segmentation data: label maps that are all ignore, of the wrong size, or out of range."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from oarkit.core.data.doctor import check_data_module
from oarkit.seg import SegmentationData


def _pair(root: Path, name: str, mask: np.ndarray, size: tuple[int, int] = (16, 16), seed: int = 0) -> str:
    (root / "img").mkdir(exist_ok=True)
    (root / "ann").mkdir(exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(pixels).save(root / "img" / f"{name}.png")
    Image.fromarray(mask.astype(np.uint8)).save(root / "ann" / f"{name}.png")
    return f"img/{name}.png ann/{name}.png"


def test_mask_problems_become_findings(tmp_path):
    good = np.zeros((16, 16), np.uint8)
    good[4:12, 4:12] = 1
    lines = [_pair(tmp_path, f"ok{i}", good, seed=i) for i in range(3)]
    lines.append(_pair(tmp_path, "empty", np.full((16, 16), 255), seed=10))
    lines.append(_pair(tmp_path, "small", np.zeros((8, 8)), seed=11))
    lines.append(_pair(tmp_path, "wild", np.full((16, 16), 7), seed=12))
    (tmp_path / "train.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "val.txt").write_text(_pair(tmp_path, "v", good, seed=20) + "\n")
    report = check_data_module(SegmentationData(root=str(tmp_path), num_classes=2, crop_size=16))
    by_kind = {f.kind: f for f in report.findings}
    assert by_kind["seg/empty_mask"].severity == "warning"
    assert by_kind["seg/empty_mask"].files == [str(tmp_path / "ann" / "empty.png")]
    assert by_kind["seg/mask_size"].severity == "error"
    assert "8x8 mask for a 16x16 image" in by_kind["seg/mask_size"].message
    assert by_kind["seg/label_out_of_range"].files == [str(tmp_path / "ann" / "wild.png")]
    assert report.stats["train"]["class_counts"] == {"class_0": 4, "class_1": 3}
    assert SegmentationData(root=str(tmp_path), num_classes=2, val_list="none.txt").inventory("val") is None
