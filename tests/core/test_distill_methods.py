"""``distill=ssld | feature | dml`` on the colour classifier: each trains through the normal Trainer, saves a
plain student, records its method, and (feature adapters, the DML peer) resumes bit-exact with what it trains
beside the student restored from ``last/``."""

from __future__ import annotations

import csv
import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

from oarkit.core.cli import main
from oarkit.core.distill import KnowledgeDistillation
from oarkit.core.engine.checkpoint import STATE_FILE
from oarkit.core.errors import ConfigError
from oarkit.core.registry import create_model

from .conftest import ToyTask, assert_resume_bit_exact

RECIPE = "clas/pp_lcnet_x0_5_digits_32x32"


def _settings(root, *extra) -> list[str]:
    return [f"data.root={root}", "data.batch_size=4", "trainer.progress=false", "trainer.tensorboard=false",
            "trainer.ema_decay=null", "trainer.max_epochs=2", *extra]


def _train(root, out, *extra) -> dict:
    assert main(["train", "-c", RECIPE, *_settings(root, f"output_dir={out}", *extra)]) == 0
    return json.loads((out / "best" / "meta.json").read_text())


def _plain_student(out, name: str) -> None:
    saved = load_file(str(out / "best" / "model.safetensors"))
    assert saved.keys() == create_model(name, num_classes=3).state_dict().keys()


def _history(out) -> list[dict[str, str]]:
    return list(csv.DictReader((out / "metrics.csv").read_text().splitlines()))


FEATURE = ["task.model.name=clas/pp_lcnet_x0_5", "distill=feature", "distill.pairs=[[blocks.3,blocks.3]]"]


def test_feature_imitation_adapts_other_channels_and_saves_the_student_alone(colour_clas_run, colour_clas_root,
                                                                             tmp_path):
    out = tmp_path / "feature"
    meta = _train(colour_clas_root, out, *FEATURE, f"distill.teacher={colour_clas_run}")
    assert meta["distill"]["method"] == "feature" and meta["distill"]["pairs"] == [["blocks.3", "blocks.3"]]
    _plain_student(out, "clas/pp_lcnet_x0_5")
    rows = _history(out)
    assert rows and all(float(r["train_feature_loss"]) > 0 for r in rows)
    state = torch.load(out / "last" / STATE_FILE, weights_only=True)
    adapters = [s["weights"] for k, s in state["callbacks"].items() if k.endswith("ExtrasState")]
    # x0.5 has twice x0.25's channels at blocks.3: a 1x1 convolution maps 128 -> 64
    assert adapters and adapters[0]["adapters.0.weight"].shape == (64, 128, 1, 1)


def test_a_resumed_feature_run_restores_its_adapters_bit_exact(colour_clas_run, colour_clas_root, tmp_path):
    assert_resume_bit_exact(RECIPE, _settings(colour_clas_root, *FEATURE, f"distill.teacher={colour_clas_run}"),
                            tmp_path)


def test_mutual_learning_trains_two_students_and_keeps_the_first(colour_clas_root, tmp_path):
    out = tmp_path / "dml"
    meta = _train(colour_clas_root, out, "task.model.name=clas/pp_lcnet_x0_25", "distill=dml")
    assert meta["distill"]["method"] == "dml" and meta["distill"]["alpha"] == 0.5
    _plain_student(out, "clas/pp_lcnet_x0_25")
    rows = _history(out)
    assert all(float(r["train_peer_loss"]) > 0 and float(r["train_dml_loss"]) >= 0 for r in rows)
    state = torch.load(out / "last" / STATE_FILE, weights_only=True)
    peer = next(s["weights"] for k, s in state["callbacks"].items() if k.endswith("ExtrasState"))
    saved = load_file(str(out / "last" / "model.safetensors"))
    assert peer.keys() == saved.keys()
    assert any(not torch.equal(peer[k], saved[k]) for k in saved if saved[k].is_floating_point())  # two models


def test_a_resumed_mutual_learning_run_is_bit_exact(colour_clas_root, tmp_path):
    assert_resume_bit_exact(RECIPE, _settings(colour_clas_root, "task.model.name=clas/pp_lcnet_x0_25",
                                              "distill=dml"), tmp_path)


def test_ssld_learns_soft_targets_on_unlabeled_images_too(colour_clas_run, colour_clas_root, tmp_path):
    unlabeled = tmp_path / "unlabeled" / "nested"
    shutil.copytree(colour_clas_root / "val", unlabeled)  # class folders, but no labels are read
    out = tmp_path / "ssld"
    meta = _train(colour_clas_root, out, "task.model.name=clas/pp_lcnet_x0_25", "distill=ssld",
                  f"distill.teacher={colour_clas_run}", f"distill.unlabeled_root={unlabeled.parent}")
    assert meta["distill"]["method"] == "ssld" and meta["distill"]["alpha"] == 1.0
    assert meta["distill"]["unlabeled_root"] == str(unlabeled.parent)
    _plain_student(out, "clas/pp_lcnet_x0_25")


def test_the_ssld_unlabeled_batches_are_the_training_transform_of_every_image(colour_clas_root):
    from oarkit.clas.data.module import ClassificationData

    data = ClassificationData(root=str(colour_clas_root), image_size=32)
    images = data.unlabeled_dataset(colour_clas_root / "val")
    assert len(images) == 6 and images[0].shape == (3, 32, 32)


def test_bad_settings_of_the_new_methods_are_refused_by_name(colour_clas_run, colour_clas_root, tmp_path, capsys):
    with pytest.raises(ConfigError, match="distill=feature needs distill.pairs"):
        KnowledgeDistillation(str(colour_clas_run), method="feature")
    with pytest.raises(ConfigError, match=r"is not a \[student_layer, teacher_layer\] pair"):
        KnowledgeDistillation(str(colour_clas_run), method="feature", pairs=[["blocks.3"]])
    with pytest.raises(ConfigError, match="distill.unlabeled_root=.* is not a folder"):
        KnowledgeDistillation(str(colour_clas_run), unlabeled_root=str(tmp_path / "nothing"))
    with pytest.raises(ConfigError, match="takes no unlabeled data"):
        ToyTask().unlabeled_dataset(None, str(tmp_path))
    code = main(["train", "-c", RECIPE, *_settings(colour_clas_root, f"output_dir={tmp_path / 'bad'}",
                                                   "task.model.name=clas/pp_lcnet_x0_25", "distill=feature",
                                                   f"distill.teacher={colour_clas_run}",
                                                   "distill.pairs=[[blocks.33,blocks.3]]")])
    assert code != 0
    err = capsys.readouterr().err
    assert "has no layer 'blocks.33'" in err and "closest" in err
