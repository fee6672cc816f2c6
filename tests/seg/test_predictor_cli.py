"""The demo recipe end to end on a tiny set: train, eval, predict (overlays), summary; the Segmenter's inputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf
from PIL import Image

from oarkit.core.cli import main
from oarkit.core.config import instantiate, load_config, packaged_config_root, packaged_configs
from oarkit.core.errors import ConfigError
from oarkit.seg import SegmentationResult, Segmenter

DEMO = "seg/pp_liteseg_stdc1_shapes_256x256"


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, shapes_root) -> Path:
    out = tmp_path_factory.mktemp("seg") / "run"
    assert main(["train", "-c", DEMO, f"data.root={shapes_root}", f"output_dir={out}", "trainer.max_iters=4",
                 "data.batch_size=4", "data.crop_size=[32,32]", "trainer.progress=false", "trainer.tensorboard=false",
                 "trainer.precision=fp32"]) == 0
    return out


def test_train_eval_predict_summary(trained_run, shapes_root, tmp_path, capsys):
    meta = json.loads((trained_run / "best" / "meta.json").read_text())
    assert meta["task"] == "seg" and meta["labels"] == ["background", "circle", "square", "triangle"]
    assert meta["model"] == {"name": "seg/pp_liteseg_stdc1", "kwargs": {"num_classes": 4}}
    assert meta["preprocessing"]["crop_size"] == [32, 32] and meta["inference"]["scales"] == [0.5]
    assert "miou" in meta["metrics"] and (trained_run / "confusion_matrix.png").exists()
    capsys.readouterr()

    assert main(["eval", str(trained_run), "--json"]) == 0
    out = capsys.readouterr().out
    results = json.loads(out[out.index("{"):])
    assert results["num_pixels"] == 6 * 64 * 64 and len(results["class_iou"]) == 4
    assert Path(results["confusion_matrix"]).exists() and 0 <= results["miou"] <= 1
    # one evaluation path: the number oarkit eval gives is the number training logged for best/
    assert results["miou"] == pytest.approx(meta["metrics"]["miou"], abs=1e-9)

    images = [str(shapes_root / "images" / "val" / f"0000{i}.jpg") for i in (0, 1)]
    assert main(["predict", str(trained_run), *images, "--save-dir", str(tmp_path / "pred")]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    assert len(lines) == 2 and all(x["size"] == [64, 64] for x in lines)
    assert all(abs(sum(c["fraction"] for c in x["classes"]) - 1) < 1e-5 for x in lines)  # each rounded to 1e-6
    assert all(Path(x["plot"]).exists() and Path(x["plot"].replace(".png", "_pseudo.png")).exists() for x in lines)
    assert main(["summary", str(trained_run)]) == 0
    assert "best miou" in capsys.readouterr().out


def test_segmenter_inputs_and_results(trained_run, shapes_root, tmp_path):
    seg = Segmenter(trained_run)
    path = shapes_root / "images" / "val" / "00002.jpg"
    array = np.asarray(Image.open(path).convert("RGB"))
    by_path, by_array, by_pil = seg(str(path)), seg(array), seg(Image.open(path))
    assert isinstance(by_path, SegmentationResult) and by_path.source == str(path)
    assert np.array_equal(by_path.label_map, by_array.label_map) and np.array_equal(by_path.label_map,
                                                                                  by_pil.label_map)
    assert by_path.label_map.shape == (64, 64) and by_path.scores.shape == (4, 64, 64)
    np.testing.assert_allclose(by_path.scores.sum(0), 1.0, rtol=1e-5)
    assert np.array_equal(by_path.scores.argmax(0), by_path.label_map)
    batch = Segmenter(trained_run, batch_size=2, return_scores=False)([array, array[:48, :40]])
    assert [r.label_map.shape for r in batch] == [(64, 64), (48, 40)] and batch[0].scores is None
    saved = by_path.save(tmp_path / "p.png")
    assert saved.exists() and Image.open(tmp_path / "p_pseudo.png").mode == "P"
    pseudo = np.asarray(Image.open(tmp_path / "p_pseudo.png"))
    assert np.array_equal(pseudo, by_path.label_map)


def test_segmenter_from_a_registry_name():
    seg = Segmenter("seg/pp_liteseg_stdc1", pretrained=False)
    assert len(seg.labels) == 19 and seg.labels[0] == "road" and seg.preprocessing["mean"] == [0.5, 0.5, 0.5]
    result = seg(np.zeros((40, 56, 3), np.uint8))
    assert result.label_map.shape == (40, 56) and result.to_dict()["classes"]


def test_demo_config_composes_and_checks_keys(shapes_root):
    cfg = load_config(DEMO, [f"data.root={shapes_root}", "task.inference_mode=slide", "task.crop_size=[32,32]"])
    assert cfg.task.inference_mode == "slide" and cfg.data.crop_size == [128, 128]
    with pytest.raises(ConfigError, match="data.crop_size"):
        load_config(DEMO, ["data.crop_sise=[64,64]"])
    with pytest.raises(ConfigError, match="inference mode 'slid'"):
        instantiate(load_config(DEMO, ["task.inference_mode=slid"]).task)


def test_bad_data_is_a_clear_message(tmp_path, shapes_root, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("images", "labels"):
        (bad / name).symlink_to(shapes_root / name)
    (bad / "train.txt").write_text((shapes_root / "train.txt").read_text())
    (bad / "val.txt").write_text((shapes_root / "val.txt").read_text())
    assert main(["train", "-c", DEMO, f"data.root={bad}", f"output_dir={tmp_path / 'run'}", "data.num_classes=2",
                 "trainer.max_iters=4", "trainer.progress=false", "trainer.tensorboard=false"]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "outside [0, 2)" in err and "labels/" in err and "Traceback" not in err


def cfg_raw(name: str):
    """The recipe as written (an own-data recipe leaves data.root for the user: ``???``)."""
    return OmegaConf.load(packaged_config_root() / f"{name}.yaml")


@pytest.mark.parametrize("name", [n for n in packaged_configs() if n.startswith("seg/")])
def test_every_seg_recipe_builds_its_task_and_data(name):
    cfg = load_config(name, ["data.root=/not/read/yet"] if OmegaConf.is_missing(cfg_raw(name).data, "root") else [])
    task, data = instantiate(cfg.task), instantiate(cfg.data)
    assert task.kit == "seg" and (data.crop_size is not None or cfg.data.crop_size == "auto")
    assert task.losses is not None and all(callable(loss) for loss in task.losses)
