"""Segmentation data: list files and folder layouts, label checks that name the file, joint transforms, shapes."""

from __future__ import annotations

import os

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from oarkit.core.errors import ConfigError, DataError  # noqa: E402
from oarkit.seg.data import (  # noqa: E402
    SegmentationData,
    SegmentationDataset,
    ade20k_samples,
    apply_spec,
    build_eval_transform,
    build_train_transform,
    cityscapes_samples,
    list_samples,
    pad_collate,
    prepare_shapes,
    preprocess_spec,
    read_label,
    voc_samples,
)


def _pair(root, name, size=(20, 30), label_value=1, rng=None):
    rng = rng or np.random.default_rng(0)
    (root / "img").mkdir(exist_ok=True)
    (root / "lab").mkdir(exist_ok=True)
    cv2.imwrite(str(root / "img" / f"{name}.png"), rng.integers(0, 256, (*size, 3), dtype=np.uint8))
    label = np.zeros(size, np.uint8)
    label[: size[0] // 2] = label_value
    cv2.imwrite(str(root / "lab" / f"{name}.png"), label)
    return f"img/{name}.png lab/{name}.png"


def test_list_file_and_label_checks(tmp_path):
    lines = [_pair(tmp_path, "a"), "", _pair(tmp_path, "b", label_value=255), _pair(tmp_path, "bad", label_value=7)]
    (tmp_path / "train.txt").write_text("\n".join(lines) + "\n")
    samples = list_samples(tmp_path, "train.txt")
    assert [os.path.basename(s[0]) for s in samples] == ["a.png", "b.png", "bad.png"]
    ds = SegmentationDataset(samples, None, num_classes=3)
    image, label = ds[0]
    assert image.shape == (20, 30, 3) and label.dtype == np.uint8 and set(np.unique(label)) == {0, 1}
    assert set(np.unique(ds[1][1])) == {0, 255}  # the ignore index is fine
    with pytest.raises(DataError, match=r"lab/bad\.png has values 7 outside \[0, 3\)"):
        ds[2]


@pytest.mark.parametrize("line", ["img/a.png", "img/a.png lab/a.png extra"])
def test_malformed_list_line_names_file_and_line(tmp_path, line):
    (tmp_path / "val.txt").write_text(f"{_pair(tmp_path, 'a')}\n{line}\n")
    with pytest.raises(DataError, match=r"val\.txt:2: cannot read"):
        list_samples(tmp_path, "val.txt")


def test_missing_files_and_size_mismatch(tmp_path):
    (tmp_path / "l.txt").write_text("img/x.png lab/x.png\n")
    with pytest.raises(DataError, match=r"do not exist.*img/x\.png"):
        list_samples(tmp_path, "l.txt")
    with pytest.raises(DataError, match="nowhere.txt"):
        list_samples(tmp_path, "nowhere.txt")
    _pair(tmp_path, "m")
    cv2.imwrite(str(tmp_path / "lab" / "m.png"), np.zeros((5, 5), np.uint8))
    ds = SegmentationDataset([(str(tmp_path / "img/m.png"), str(tmp_path / "lab/m.png"))], None, num_classes=2)
    with pytest.raises(DataError, match=r"30x20 but its label map .*m\.png is 5x5"):
        ds[0]


def test_palette_and_colour_labels(tmp_path):
    palette = Image.fromarray(np.array([[0, 1], [15, 255]], np.uint8), mode="P")
    palette.putpalette([0, 0, 0, 128, 0, 0] * 128)
    palette.save(tmp_path / "p.png")
    assert read_label(tmp_path / "p.png").tolist() == [[0, 1], [15, 255]]
    Image.fromarray((np.zeros((2, 2, 3)) + [10, 20, 30]).astype(np.uint8)).save(tmp_path / "rgb.png")
    with pytest.raises(DataError, match="colour image"):
        read_label(tmp_path / "rgb.png")


def test_folder_layouts(tmp_path):
    rng = np.random.default_rng(0)
    city = tmp_path / "cityscapes"
    for split in ("train", "val"):
        (city / "leftImg8bit" / split / "aachen").mkdir(parents=True)
        (city / "gtFine" / split / "aachen").mkdir(parents=True)
        cv2.imwrite(str(city / "leftImg8bit" / split / "aachen" / "a_0_leftImg8bit.png"),
                    rng.integers(0, 255, (8, 16, 3), dtype=np.uint8))
        cv2.imwrite(str(city / "gtFine" / split / "aachen" / "a_0_gtFine_labelTrainIds.png"),
                    np.full((8, 16), 18, np.uint8))
    assert cityscapes_samples(city, "val")[0][1].endswith("a_0_gtFine_labelTrainIds.png")
    data = SegmentationData(root=str(city), format="cityscapes", crop_size=8, scale=(1, 1))
    assert data.num_classes == 19 and data.classes[0] == "road"
    assert data.train_dataset()[0][0].shape == (3, 8, 8)

    ade = tmp_path / "ade"
    (ade / "images" / "validation").mkdir(parents=True)
    (ade / "annotations" / "validation").mkdir(parents=True)
    cv2.imwrite(str(ade / "images" / "validation" / "x.jpg"), rng.integers(0, 255, (8, 4, 3), dtype=np.uint8))
    cv2.imwrite(str(ade / "annotations" / "validation" / "x.png"), np.array([[0, 1, 150, 3]] * 8, np.uint8))
    assert len(ade20k_samples(ade, "val")) == 1
    ds = SegmentationData(root=str(ade), format="ade20k").dataset("val", None)
    assert ds[0][1][0].tolist() == [255, 0, 149, 2]  # reduce_zero_label: 0 ("other") ignored, the rest shift down

    voc = tmp_path / "VOCdevkit" / "VOC2012"
    for sub in ("JPEGImages", "SegmentationClass", "ImageSets/Segmentation"):
        (voc / sub).mkdir(parents=True)
    cv2.imwrite(str(voc / "JPEGImages" / "2007_1.jpg"), rng.integers(0, 255, (8, 8, 3), dtype=np.uint8))
    cv2.imwrite(str(voc / "SegmentationClass" / "2007_1.png"), np.zeros((8, 8), np.uint8))
    (voc / "ImageSets/Segmentation/val.txt").write_text("2007_1\n")
    assert voc_samples(tmp_path / "VOCdevkit", "val")[0][0].endswith("2007_1.jpg")
    with pytest.raises(DataError, match=r"train\.txt does not exist"):
        voc_samples(voc, "train")


def test_train_transform_pads_labels_with_ignore_and_stays_aligned():
    spec = preprocess_spec((0.5,) * 3, (0.5,) * 3, (32, 48))
    image = np.zeros((20, 20, 3), np.uint8)
    image[:, 10:] = 255
    label = np.zeros((20, 20), np.uint8)
    label[:, 10:] = 1
    out = build_train_transform(spec, scale=(1.0, 1.0), hflip=0.0, ignore_index=255)(image=image, mask=label)
    img, mask = out["image"], out["mask"]
    assert img.shape == (3, 32, 48) and mask.shape == (32, 48)
    assert (mask[20:] == 255).all() and (mask[:, 20:] == 255).all() and (img[:, 20:, 20:] == -1).all()
    assert torch.equal(mask[:20, :20] == 1, img[0, :20, :20] > 0)  # image and label moved together
    flipped = build_train_transform(spec, scale=(1.0, 1.0), hflip=1.0)(image=image, mask=label)["mask"]
    assert set(flipped.unique().tolist()) <= {0, 1, 255}
    with pytest.raises(ConfigError, match="scale"):
        build_train_transform(spec, scale=(0, 1))


def test_augmentation_is_reproducible_and_worker_independent(shapes_root):
    data = SegmentationData(root=str(shapes_root), crop_size=48, scale=(0.5, 1.5), color_jitter=0.3, seed=3)
    ds = data.train_dataset()
    ds.set_epoch(1)
    single = [torch.cat([x.flatten(), y.flatten().float()]) for x, y in DataLoader(ds, batch_size=4, num_workers=0)]
    several = [torch.cat([x.flatten(), y.flatten().float()]) for x, y in DataLoader(ds, batch_size=4, num_workers=2)]
    assert all(torch.equal(a, b) for a, b in zip(single, several))
    first = ds[2][0]
    ds.set_epoch(2)
    assert not torch.equal(first, ds[2][0])


def test_apply_spec_matches_eval_transform():
    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    for resize in (None, (24, 40)):
        spec = preprocess_spec((0.4, 0.5, 0.6), (0.2, 0.3, 0.25), 32, resize)
        expected = build_eval_transform(spec)(image=image, mask=np.zeros((37, 53), np.uint8))["image"].numpy()
        assert np.abs(apply_spec(image, spec) - expected).max() < 1e-4


def test_pad_collate():
    samples = [(torch.ones(3, 4, 5), torch.ones(4, 5, dtype=torch.long)), (torch.ones(3, 6, 3), torch.zeros(6, 3,
                                                                                                         dtype=torch.long))]
    images, labels = pad_collate(samples, 255)
    assert images.shape == (2, 3, 6, 5) and labels.shape == (2, 6, 5)
    assert (labels[0, 4:] == 255).all() and (labels[1, :, 3:] == 255).all() and images[0, :, 4:].abs().sum() == 0


def test_class_names_and_count(tmp_path, shapes_root):
    assert SegmentationData(root=str(shapes_root)).classes == ["background", "circle", "square", "triangle"]
    _pair(tmp_path, "a")
    with pytest.raises(ConfigError, match="data.num_classes"):
        _ = SegmentationData(root=str(tmp_path)).classes
    assert SegmentationData(root=str(tmp_path), num_classes=3).classes == ["class_0", "class_1", "class_2"]
    with pytest.raises(ConfigError, match="'list'"):
        SegmentationData(root=str(tmp_path), format="lst")


def test_prepare_shapes(tmp_path):
    root = prepare_shapes(tmp_path / "s", num_train=3, num_val=2, size=48)
    lines = (root / "train.txt").read_text().split("\n")
    assert lines[0] == "images/train/00000.jpg labels/train/00000.png" and len(lines) == 4
    label = cv2.imread(str(root / "labels/val/00001.png"), cv2.IMREAD_UNCHANGED)
    assert label.shape == (48, 48) and set(np.unique(label)) <= {0, 1, 2, 3} and len(np.unique(label)) > 1
    stamp = (root / "images/train/00000.jpg").stat().st_mtime_ns
    assert prepare_shapes(tmp_path / "s", num_train=3, num_val=2, size=48) == root
    assert (root / "images/train/00000.jpg").stat().st_mtime_ns == stamp  # already complete: untouched
