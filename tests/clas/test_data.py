"""Classification data: datasets, list files, corrupt images, reproducible augmentation, specs, digits."""

from __future__ import annotations

import os

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

import json  # noqa: E402
import logging  # noqa: E402

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from oarkit.clas.data import (  # noqa: E402
    ClassificationData,
    ImageFolderDataset,
    ListFileDataset,
    apply_spec,
    build_eval_transform,
    build_train_transform,
    prepare_digits,
    preprocess_spec,
)
from oarkit.core.errors import ConfigError, DataError  # noqa: E402

CLASSES = ["cat", "dog", "fox"]


def _write(path, rng, size=(20, 28)):
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), rng.integers(0, 256, (*size, 3), dtype=np.uint8))


@pytest.fixture
def folder(tmp_path):
    """root/{train,val}/{cat,dog,fox}/*.png: 2 train and 1 val image per class."""
    rng = np.random.default_rng(0)
    for split, n in (("train", 2), ("val", 1)):
        for name in CLASSES:
            for i in range(n):
                _write(tmp_path / split / name / f"{i}.png", rng)
    return tmp_path


@pytest.fixture
def spec():
    return preprocess_spec(16, crop_pct=0.875)


def test_image_folder_labels(folder, spec):
    ds = ImageFolderDataset(folder, "train", build_eval_transform(spec))
    assert ds.classes == CLASSES
    assert len(ds) == 6
    assert [label for _, label in ds.samples] == [0, 0, 1, 1, 2, 2]
    assert all(os.path.basename(os.path.dirname(p)) == CLASSES[y] for p, y in ds.samples)
    image, label = ds[3]
    assert image.shape == (3, 16, 16) and image.dtype == torch.float32 and label == 1
    raw, _ = ImageFolderDataset(folder, "train", None)[0]
    assert raw.dtype == np.uint8 and raw.shape == (20, 28, 3)


def test_image_folder_given_classes(folder):
    (folder / "val" / "fox").rename(folder / "val" / "wolf")
    with pytest.raises(DataError, match="wolf"):
        ImageFolderDataset(folder, "val", None, classes=CLASSES)
    # a val split missing a class is fine: labels still follow the given order
    (folder / "val" / "wolf").rename(folder / "val" / "fox")
    (folder / "val" / "cat" / "0.png").unlink()
    (folder / "val" / "cat").rmdir()
    ds = ImageFolderDataset(folder, "val", None, classes=CLASSES)
    assert [label for _, label in ds.samples] == [1, 2]


def test_list_file_labels(folder, spec):
    lines = ["train/dog/0.png 1", "", "train/cat/1.png   0", "val/fox/0.png\t2", ""]
    (folder / "train_list.txt").write_text("\n".join(lines))
    ds = ListFileDataset(folder, "train_list.txt", build_eval_transform(spec))
    assert [label for _, label in ds.samples] == [1, 0, 2]
    assert ds.samples[0][0] == str(folder / "train/dog/0.png")
    assert ds.num_classes == 3 and ds.classes == ["0", "1", "2"]
    assert ds[2][1] == 2 and ds[2][0].shape == (3, 16, 16)


@pytest.mark.parametrize("bad", ["train/dog/0.png", "train/dog/0.png one", "train/dog/0.png -1"])
def test_list_file_malformed_line(folder, bad):
    (folder / "list.txt").write_text(f"train/cat/0.png 0\n\n{bad}\n")
    with pytest.raises(DataError, match=r"list\.txt:3.*expected '<image path relative to root> <integer label>'"):
        ListFileDataset(folder, "list.txt", None)


def test_list_file_missing_image(folder):
    (folder / "list.txt").write_text("train/cat/0.png 0\ntrain/cat/nope.png 0\n")
    with pytest.raises(DataError, match="nope.png"):
        ListFileDataset(folder, "list.txt", None)
    ds = ListFileDataset(folder, "list.txt", None, skip_corrupt=True)
    assert len(ds) == 1 and ds.skipped == [str(folder / "train/cat/nope.png")]


def test_corrupt_image(folder, spec, caplog):
    bad = folder / "train" / "dog" / "x.png"
    bad.write_bytes(b"this is not a png" * 10)
    ds = ImageFolderDataset(folder, "train", build_eval_transform(spec))
    index = [p for p, _ in ds.samples].index(str(bad))
    with pytest.raises(DataError, match=r"x\.png.*skip_corrupt=True"):
        ds[index]
    with caplog.at_level(logging.WARNING):
        ds = ImageFolderDataset(folder, "train", build_eval_transform(spec), skip_corrupt=True)
    assert len(ds) == 6 and ds.skipped == [str(bad)]
    assert "Skipped 1 unreadable" in caplog.text


def test_missing_folders(tmp_path, folder):
    with pytest.raises(DataError, match=r"nowhere.*<root>/<split>/<class name>"):
        ImageFolderDataset(tmp_path / "nowhere", "train", None)
    with pytest.raises(DataError, match=r"test.*does not exist"):
        ImageFolderDataset(folder, "test", None)
    (folder / "empty" / "cat").mkdir(parents=True)
    with pytest.raises(DataError, match="No images found"):
        ImageFolderDataset(folder, "empty", None)
    with pytest.raises(DataError, match="missing_list.txt"):
        ListFileDataset(folder, "missing_list.txt", None)


def test_augmentation_is_reproducible(folder, spec):
    def build():
        return ImageFolderDataset(folder, "train", build_train_transform(spec, color_jitter=0.4), seed=7)

    a, b = build(), build()
    b[0], b[4]  # consuming samples in another order must not change anything
    for i in (0, 3, 5):
        assert torch.equal(a[i][0], b[i][0])
    assert torch.equal(a[2][0], a[2][0])
    first = a[2][0]
    a.set_epoch(1)
    assert not torch.equal(first, a[2][0])
    b.set_epoch(1)
    assert torch.equal(a[2][0], b[2][0])
    other = ImageFolderDataset(folder, "train", build_train_transform(spec), seed=8)
    assert not torch.equal(build()[2][0], other[2][0])


def test_augmentation_independent_of_workers(folder, spec):
    ds = ImageFolderDataset(folder, "train", build_train_transform(spec, color_jitter=0.4), seed=3)
    ds.set_epoch(2)
    single = torch.cat([x for x, _ in DataLoader(ds, batch_size=2, num_workers=0)])
    several = torch.cat([x for x, _ in DataLoader(ds, batch_size=2, num_workers=2)])
    assert torch.equal(single, several)


@pytest.mark.parametrize("option", [{"affine": 0.5}, {"random_erasing": 1.0}])
def test_geometric_and_erasing_augmentation(folder, spec, option):
    def build(**kwargs):
        return ImageFolderDataset(folder, "train", build_train_transform(spec, hflip=0.0, **kwargs), seed=5)

    plain, augmented, again = build(), build(**option), build(**option)
    for i in (0, 3, 5):
        assert not torch.equal(plain[i][0], augmented[i][0])  # the option changes the tensor ...
        assert torch.equal(augmented[i][0], again[i][0])  # ... reproducibly for (seed, epoch, index)
        assert augmented[i][0].shape == (3, 16, 16)
    first = augmented[2][0]
    augmented.set_epoch(1)
    again.set_epoch(1)
    assert not torch.equal(first, augmented[2][0]) and torch.equal(augmented[2][0], again[2][0])
    if "random_erasing" in option:  # the erased rectangle holds the mean colour: 0 after Normalize
        assert (augmented[2][0] == 0).all(dim=0).any()


@pytest.mark.parametrize(
    ("option", "match"),
    [
        ({"affine": -0.1}, r"affine=-0\.1.*\[0, 1\]"),
        ({"affine": 2}, "affine=2"),
        ({"random_erasing": 1.5}, "probability"),
    ],
)
def test_augmentation_option_validation(folder, spec, option, match):
    with pytest.raises(ConfigError, match=match):
        build_train_transform(spec, **option)
    with pytest.raises(ConfigError, match=match):
        ClassificationData(root=str(folder), image_size=16, **option).train_dataset()


@pytest.mark.parametrize("interpolation", ["bilinear", "bicubic", "nearest"])
def test_apply_spec_matches_eval_transform(interpolation):
    rng = np.random.default_rng(1)
    for input_size, crop_pct in ((32, 0.875), ((24, 40), 0.9), (32, 1.0)):
        spec = preprocess_spec(
            input_size, mean=(0.5, 0.4, 0.3), std=(0.2, 0.3, 0.25), crop_pct=crop_pct, interpolation=interpolation
        )
        json.dumps(spec)
        transform = build_eval_transform(spec)
        for hw in ((37, 53), (64, 48), (spec["resize_short"], 80), (120, 120)):
            image = rng.integers(0, 256, (*hw, 3), dtype=np.uint8)
            expected = transform(image=image)["image"].numpy()
            got = apply_spec(image, spec)
            assert got.shape == expected.shape == (3, *spec["crop"]) and got.dtype == np.float32
            assert np.abs(got - expected).max() < 1e-5


def test_preprocess_spec_values():
    spec = preprocess_spec((3, 224, 224), crop_pct=0.875, interpolation="bicubic")
    assert spec["resize_short"] == 256 and spec["crop"] == [224, 224] and spec["layout"] == "NCHW"
    with pytest.raises(ConfigError, match="bicubic"):
        preprocess_spec(224, interpolation="bicubik")
    with pytest.raises(ConfigError, match="crop_pct"):
        preprocess_spec(224, crop_pct=1.2)


def test_classification_data_module(folder, caplog):
    (folder / "labels.txt").write_text("0 a cat\n1 a dog\n2 a fox\n")
    data = ClassificationData(root=str(folder), image_size=16, label_file=str(folder / "labels.txt"))
    data.configure(input_size=(3, 32, 32), mean=[0.1, 0.2, 0.3], std=[1, 1, 1], crop_pct=1.0, interpolation="bicubic")
    spec = data.preprocess_spec()
    assert spec["crop"] == [16, 16] and spec["mean"] == [0.1, 0.2, 0.3] and spec["interpolation"] == "bicubic"
    assert data.classes == ["a cat", "a dog", "a fox"] and data.num_classes == 3
    train = data.train_dataset()
    assert train is data.train_dataset() and len(train) == 6 and train[0][0].shape == (3, 16, 16)
    val = data.val_dataset()
    assert len(val) == 3 and [y for _, y in val.samples] == [0, 1, 2]

    with caplog.at_level(logging.WARNING):
        assert ClassificationData(root=str(folder), val_split="test").val_dataset() is None
    assert "No validation data" in caplog.text
    with pytest.raises(ConfigError, match="'list'"):
        ClassificationData(root=str(folder), format="lists")


def test_classification_data_list_format(folder):
    (folder / "train_list.txt").write_text("train/cat/0.png 0\ntrain/fox/0.png 3\n")
    data = ClassificationData(root=str(folder), format="list", image_size=16)
    assert data.classes == ["0", "1", "2", "3"]
    assert data.val_dataset() is None
    assert len(data.train_dataset()) == 2


def test_prepare_digits(tmp_path):
    root = prepare_digits(tmp_path / "digits", size=16)
    for split, n in (("train", 1437), ("val", 360)):
        folders = sorted(p.name for p in (root / split).iterdir())
        assert folders == [str(d) for d in range(10)]
        assert len(list((root / split).glob("*/*.png"))) == n
    image = cv2.imread(str(next((root / "val" / "3").glob("*.png"))), cv2.IMREAD_UNCHANGED)
    assert image.shape == (16, 16) and image.max() > 200
    stamp = (root / "train" / "0" / "0000.png").stat().st_mtime_ns
    assert prepare_digits(root, size=16) == root
    assert (root / "train" / "0" / "0000.png").stat().st_mtime_ns == stamp  # already complete: untouched
    (root / "val" / "9" / next((root / "val" / "9").glob("*.png")).name).unlink()  # an interrupted run
    prepare_digits(root, size=16)
    assert len(list((root / "val").glob("*/*.png"))) == 360
