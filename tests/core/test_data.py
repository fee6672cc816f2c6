"""The shared image and list-file helpers every image kit's data and predictor use."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from oarkit.core.data import load_image_input, read_image, resolve_list_file, sample_seed
from oarkit.core.errors import DataError


def test_images_from_paths_arrays_and_pil_agree(tmp_path) -> None:
    rgb = np.random.default_rng(0).integers(0, 256, (6, 5, 3), dtype=np.uint8)
    path = tmp_path / "a.png"
    Image.fromarray(rgb).save(path)
    from_path, source = load_image_input(str(path))
    assert source == str(path) and np.array_equal(from_path, rgb)
    assert np.array_equal(load_image_input(Image.open(path))[0], rgb)
    assert np.array_equal(load_image_input(rgb)[0], rgb)
    rgba = np.concatenate([rgb, np.full((6, 5, 1), 255, np.uint8)], axis=2)
    assert np.array_equal(load_image_input(rgba)[0], rgb)
    grey = load_image_input(rgb[..., 0])[0]
    assert grey.shape == (6, 5, 3) and np.array_equal(grey[..., 2], rgb[..., 0])
    unit = load_image_input(rgb.astype(np.float32) / 255.0)[0]
    assert unit.dtype == np.uint8 and np.abs(unit.astype(int) - rgb).max() <= 1


def test_bad_inputs_name_the_problem(tmp_path) -> None:
    with pytest.raises(DataError, match="is missing"):
        read_image(tmp_path / "nope.png")
    (tmp_path / "bad.png").write_bytes(b"not a png")
    with pytest.raises(DataError, match="cannot be decoded"):
        load_image_input(tmp_path / "bad.png")
    with pytest.raises(DataError, match="HxW or HxWxC"):
        load_image_input(np.zeros((2, 3, 3, 3), np.uint8))
    with pytest.raises(DataError, match="Segmenter takes paths"):
        load_image_input(42, taker="Segmenter")


def test_list_files_resolve_inside_the_root_first(tmp_path, monkeypatch) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "train.txt").write_text("a.jpg 0\n")
    (tmp_path / "train.txt").write_text("b.jpg 1\n")
    monkeypatch.chdir(tmp_path)
    assert resolve_list_file("root", "train.txt", line_form="x").resolve() == tmp_path / "root" / "train.txt"
    with pytest.raises(DataError, match="lines 'img label'"):
        resolve_list_file("root", "val.txt", line_form="'img label'")


def test_sample_seeds_depend_on_the_triple_only() -> None:
    assert sample_seed(0, 1, 2) == sample_seed(0, 1, 2)
    assert len({sample_seed(0, 1, 2), sample_seed(0, 2, 1), sample_seed(1, 1, 2)}) == 3
