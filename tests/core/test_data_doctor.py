"""The dataset doctor's common checks, on inventories built by hand over a few PNGs written in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from oarkit.core.data.doctor import (
    DataInventory,
    DataReport,
    Finding,
    InventorySample,
    check_before_training,
    check_data_module,
    dhash,
    diagnose,
    scan_image,
)
from oarkit.core.errors import DataCheckError, DataError


def write_png(path: Path, seed: int, size: tuple[int, int] = (24, 16)) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)
    return str(path)


def truncate(path: str) -> str:
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[: len(data) // 2])
    return path


def find(report: DataReport, kind: str) -> Finding:
    matches = [f for f in report.findings if f.kind == kind]
    assert matches, f"no {kind} finding in {report.kinds()}"
    return matches[0]


def test_dhash_is_64_bit_and_survives_a_resize(tmp_path):
    path = write_png(tmp_path / "a.png", 0, (64, 48))
    with Image.open(path) as image:
        h = dhash(image)
        assert 0 <= h < 2**64
        assert dhash(image.resize((128, 96))) == h
    with Image.open(write_png(tmp_path / "b.png", 1, (64, 48))) as other:
        assert dhash(other) != h


def test_scan_image_names_missing_and_truncated_files(tmp_path):
    good = scan_image(write_png(tmp_path / "good.png", 0), want_hash=True)
    assert good.problem is None and good.size == (24, 16) and good.hash is not None
    assert scan_image(str(tmp_path / "nope.png"), want_hash=False).problem == "missing"
    broken = scan_image(truncate(write_png(tmp_path / "cut.png", 1)), want_hash=False)
    assert broken.problem and broken.problem != "missing"


def _dataset(tmp_path: Path) -> tuple[DataInventory, DataInventory]:
    """Train: 12 of class 0, 1 of class 1, none of class 2, one truncated file, one missing; val: a copy of a
    training image, class 0 only."""
    train = [InventorySample(path=write_png(tmp_path / f"train/a{i}.png", i), labels=(0,)) for i in range(12)]
    train.append(InventorySample(path=write_png(tmp_path / "train/b0.png", 100), labels=(1,)))
    train.append(InventorySample(path=truncate(write_png(tmp_path / "train/cut.png", 101)), labels=(0,)))
    train.append(InventorySample(path=str(tmp_path / "train/gone.png"), labels=(0,)))
    copy = tmp_path / "val/copy.png"
    copy.parent.mkdir(parents=True)
    copy.write_bytes(Path(train[3].path).read_bytes())
    val = [InventorySample(path=str(copy), labels=(0,)), InventorySample(path=write_png(tmp_path / "val/v.png", 200),
                                                                         labels=(0,))]
    classes = ["cat", "dog", "owl"]
    return DataInventory("train", train, classes), DataInventory("val", val, classes)


def test_diagnose_finds_each_common_problem(tmp_path):
    train, val = _dataset(tmp_path)
    report = diagnose([train, val])
    corrupt = find(report, "corrupt_image")
    assert corrupt.severity == "error" and corrupt.split == "train"
    assert corrupt.files == [str(tmp_path / "train/cut.png")]
    assert find(report, "missing_image").files == [str(tmp_path / "train/gone.png")]
    assert find(report, "class_without_train_samples").severity == "error"
    assert "owl" in find(report, "class_without_train_samples").message
    imbalance = find(report, "class_imbalance")
    assert imbalance.severity == "warning" and "'cat'" in imbalance.message and "dog" in imbalance.message
    assert imbalance.fix
    assert "dog" in find(report, "class_without_val_samples").message
    duplicate = find(report, "train_val_duplicate")
    assert duplicate.files == [f"{train.samples[3].path} = {tmp_path / 'val/copy.png'}"]
    assert [f.severity for f in report.findings] == sorted((f.severity for f in report.findings),
                                                           key=["error", "warning", "info"].index)
    assert report.stats["train"]["samples"] == 15 and report.stats["train"]["class_counts"] == {"cat": 14, "dog": 1,
                                                                                                "owl": 0}
    assert report.stats["val"]["image_size"] == {"min": [24, 16], "median": [24, 16], "max": [24, 16]}
    assert not report.ok and len(report.errors) == 3


def test_report_json_and_table(tmp_path):
    train, val = _dataset(tmp_path)
    report = diagnose([train, val])
    data = json.loads(json.dumps(report.to_dict()))
    assert data["ok"] is False and data["errors"] == 3
    assert {"severity", "kind", "split", "message", "files", "count", "fix"} == set(data["findings"][0])
    table = report.table()
    assert "ERROR    corrupt_image [train]" in table and "fix: " in table and "cut.png" in table
    assert table.splitlines()[1].split()[:2] == ["train", "15"]


def test_finding_keeps_a_few_files_and_the_count():
    finding = Finding("warning", "x", "m", files=[f"f{i}" for i in range(40)])
    assert len(finding.files) == 5 and finding.count == 40
    with pytest.raises(ValueError, match="severity"):
        Finding("fatal", "x", "m")


def test_duplicate_texts_and_the_hash_limit(tmp_path):
    train = DataInventory("train", [InventorySample(text="Book a table  for two"), InventorySample(text="hi")])
    val = DataInventory("val", [InventorySample(text="book a table for two")])
    assert find(diagnose([train, val]), "train_val_duplicate").count == 1
    images = [InventorySample(path=write_png(tmp_path / f"{i}.png", i)) for i in range(3)]
    report = diagnose([DataInventory("train", images[:2]), DataInventory("val", images[2:])], hash_limit=2)
    assert "duplicates_not_checked" in report.kinds()


def test_empty_train_split_and_no_val():
    report = diagnose([DataInventory("train", [])])
    assert find(report, "empty_split").severity == "error"
    assert find(report, "no_val_split").severity == "info"


class _Data:
    """A data module with an inventory: two generated (in-memory) samples, or a split that cannot be read."""

    def __init__(self, doctor: bool = True, broken: bool = False) -> None:
        self.doctor, self.broken = doctor, broken

    def inventory(self, split: str) -> DataInventory | None:
        if self.broken:
            raise DataError(f"List file {split}.txt does not exist")
        if split == "val":
            return None
        return DataInventory(split, [InventorySample(labels=(0,), size=(8, 8)), InventorySample(labels=(1,),
                                                                                               size=(8, 8))],
                             ["a", "b"])


def test_check_before_training_stops_with_the_report():
    assert check_before_training(object()) is None  # no inventory(): skipped silently
    assert check_before_training(_Data(doctor=False, broken=True)) is None  # data.doctor=false
    report = check_before_training(_Data())
    assert report.ok and report.stats["train"]["image_size"]["max"] == [8, 8]
    with pytest.raises(DataCheckError, match="unreadable_split") as err:
        check_before_training(_Data(broken=True))
    assert "data.doctor=false" in str(err.value) and err.value.report.errors[0].kind == "unreadable_split"
    assert check_data_module(_Data(broken=True)).errors[0].split == "train"
