"""The Classifier: built from a run directory, a registry name or a module; every input kind; results."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from oarkit.clas import ClassificationResult, Classifier
from oarkit.clas.data.transforms import build_eval_transform
from oarkit.core import create_model
from oarkit.core.cli import main
from oarkit.core.errors import DataError

DEMO = "clas/pp_lcnet_x0_5_digits_32x32"


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, shapes_root):
    out = tmp_path_factory.mktemp("clf") / "run"
    assert main(["train", "-c", DEMO, f"data.root={shapes_root}", f"output_dir={out}", "trainer.max_epochs=1",
                 "task.model.name=clas/pp_lcnet_x0_25", "data.batch_size=8", "trainer.progress=false",
                 "trainer.tensorboard=false"]) == 0
    return out


def test_every_input_kind_gives_the_same_answer(trained_run, shapes_root):
    clf = Classifier(trained_run, topk=3)
    path = shapes_root / "val" / "square" / "001.png"
    array = np.asarray(Image.open(path).convert("RGB"))
    by_path, by_array, by_pil = clf(str(path)), clf(array), clf(Image.open(path))
    assert isinstance(by_path, ClassificationResult) and by_path.source == str(path)
    assert by_path.class_ids == by_array.class_ids == by_pil.class_ids
    np.testing.assert_allclose(by_path.scores, by_array.scores, rtol=1e-5)
    batch = clf([str(path), array, Image.open(path)] * 3)
    assert len(batch) == 9 and all(r.class_ids == by_path.class_ids for r in batch)
    assert set(by_path.labels) <= {"circle", "square", "triangle"} and len(by_path.scores) == 3
    assert sum(by_path.scores) <= 1.0 + 1e-6 and by_path.scores == sorted(by_path.scores, reverse=True)


def test_grey_and_float_arrays_are_accepted(trained_run):
    clf = Classifier(trained_run)
    assert clf(np.zeros((20, 30), np.uint8)).label in clf.labels
    assert clf(np.random.rand(40, 40, 3).astype(np.float32)).label in clf.labels


def test_results_serialise_and_draw(trained_run, shapes_root, tmp_path):
    result = Classifier(trained_run, topk=2)(str(shapes_root / "val" / "circle" / "000.png"))
    d = result.to_dict()
    assert d["label"] == result.label and [t["label"] for t in d["topk"]] == result.labels
    saved = result.save(tmp_path / "p.png")
    assert saved.stat().st_size > 5000


def test_run_directory_root_best_and_last_all_load(trained_run):
    for source in (trained_run, trained_run / "best", trained_run / "last"):
        assert Classifier(source).labels == ["circle", "square", "triangle"]


def test_predictions_equal_the_training_eval_transform(trained_run, shapes_root):
    clf = Classifier(trained_run)
    path = shapes_root / "val" / "triangle" / "002.png"
    image = np.asarray(Image.open(path).convert("RGB"))
    with torch.no_grad():
        expected = clf.model(build_eval_transform(clf.preprocessing)(image=image)["image"][None]).softmax(-1)
    assert clf(str(path)).scores[0] == pytest.approx(float(expected.max()), rel=1e-5)


def test_registry_name_and_module_sources():
    clf = Classifier("clas/pp_lcnet_x0_25", pretrained=False, topk=5)
    assert len(clf.labels) == 1000 and "tench" in clf.labels[0].lower()
    result = clf(np.zeros((50, 60, 3), np.uint8))
    assert len(result.class_ids) == 5
    module = create_model("clas/pp_lcnet_x0_25", num_classes=4).eval()
    spec = {"resize_short": 32, "crop": [32, 32], "interpolation": "bilinear", "mean": [0.5] * 3, "std": [0.5] * 3,
            "color": "RGB", "layout": "NCHW"}
    bare = Classifier(module, preprocessing=spec, labels=list("abcd"))
    assert bare(np.zeros((32, 32, 3), np.uint8)).label in "abcd"


def test_bad_inputs_are_named(trained_run, tmp_path):
    clf = Classifier(trained_run)
    with pytest.raises(DataError, match="missing.png"):
        clf(str(tmp_path / "missing.png"))
    with pytest.raises(DataError, match="shape"):
        clf(np.zeros((2, 3, 4, 5)))
    with pytest.raises(DataError, match="int"):
        clf(42)
    with pytest.raises(DataError, match="neither a run directory"):
        Classifier(tmp_path)


def test_trainer_predict_uses_the_same_classifier(shapes_root, tmp_path):
    from oarkit.clas import ClassificationData, ClassificationTask
    from oarkit.core import Trainer

    data = ClassificationData(root=str(shapes_root), image_size=32, batch_size=8)
    task = ClassificationTask("clas/pp_lcnet_x0_25")
    trainer = Trainer(task, data, max_epochs=1, output_dir=tmp_path / "py", progress=False, tensorboard=False)
    trainer.fit()
    metrics = trainer.evaluate()
    assert 0.0 <= metrics["top1"] <= 100.0
    result = trainer.predict(str(shapes_root / "val" / "circle" / "000.png"))
    assert result.label in ("circle", "square", "triangle")
    torch.testing.assert_close(
        Classifier(tmp_path / "py").forward(torch.zeros(1, 3, 32, 32)),
        trainer.eval_model.eval()(torch.zeros(1, 3, 32, 32)), rtol=1e-5, atol=1e-5)
