"""The dataset doctor on classification data: `oarkit check-data`, its JSON and exit code, and training that stops
on the report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from oarkit.clas import ClassificationData
from oarkit.core.cli import main
from oarkit.core.data.doctor import check_data_module

DEMO = "clas/pp_lcnet_x0_5_digits_32x32"


def _png(path: Path, seed: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.random.default_rng(seed).integers(0, 256, (20, 20, 3), dtype=np.uint8)).save(path)
    return path


def _broken_folder(root: Path) -> Path:
    """Class ``a``: 11 images (one truncated), class ``b``: 1; val holds a copy of a training image."""
    for i in range(11):
        _png(root / "train" / "a" / f"{i}.png", i)
    _png(root / "train" / "b" / "0.png", 50)
    cut = root / "train" / "a" / "3.png"
    cut.write_bytes(cut.read_bytes()[:60])
    (root / "val" / "a").mkdir(parents=True)
    (root / "val" / "a" / "copy.png").write_bytes((root / "train" / "a" / "5.png").read_bytes())
    _png(root / "val" / "b" / "0.png", 60)
    return root


def test_check_data_reports_json_and_exits_1(tmp_path, capsys):
    root = _broken_folder(tmp_path / "set")
    assert main(["check-data", "-c", DEMO, f"data.root={root}", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    by_kind = {f["kind"]: f for f in report["findings"]}
    assert by_kind["corrupt_image"]["severity"] == "error"
    assert by_kind["corrupt_image"]["files"] == [str(root / "train" / "a" / "3.png")]
    assert by_kind["class_imbalance"]["severity"] == "warning" and "'a'" in by_kind["class_imbalance"]["message"]
    assert by_kind["train_val_duplicate"]["files"] == [f"{root / 'train/a/5.png'} = {root / 'val/a/copy.png'}"]
    assert report["splits"]["train"]["class_counts"] == {"a": 11, "b": 1}

    assert main(["check-data", "-c", DEMO, f"data.root={root}"]) == 1
    assert "ERROR    corrupt_image [train]" in capsys.readouterr().out
    (root / "train" / "a" / "3.png").unlink()
    assert main(["check-data", "-c", DEMO, f"data.root={root}"]) == 0  # warnings only


def test_training_stops_with_the_report(tmp_path, capsys):
    root = _broken_folder(tmp_path / "set")
    run = tmp_path / "run"
    assert main(["train", "-c", DEMO, f"data.root={root}", f"output_dir={run}", "trainer.max_epochs=1",
                 "task.model.name=clas/pp_lcnet_x0_25", "trainer.progress=false", "trainer.tensorboard=false"]) == 2
    err = capsys.readouterr().err
    assert "corrupt_image" in err and str(root / "train" / "a" / "3.png") in err and "data.doctor=false" in err
    assert not (run / "last").exists()


def test_list_labels_out_of_range(tmp_path):
    for i in range(4):
        _png(tmp_path / "img" / f"{i}.png", i)
    (tmp_path / "train_list.txt").write_text("img/0.png 0\nimg/1.png 1\n")
    (tmp_path / "val_list.txt").write_text("img/2.png 1\nimg/3.png 7\n")
    data = ClassificationData(root=str(tmp_path), format="list")
    finding = next(f for f in check_data_module(data).findings if f.kind == "clas/label_out_of_range")
    assert finding.severity == "error" and finding.split == "val" and finding.files == [str(tmp_path / "img/3.png")]
    assert ClassificationData(root=str(tmp_path), format="list", val_list="none.txt").inventory("val") is None
    assert ClassificationData(root=str(tmp_path), format="list", doctor=False).doctor is False
