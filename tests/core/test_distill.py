"""``distill=kd``: a student trained on its labels plus a frozen teacher's soft targets, through the normal
Trainer. The teacher is the colour classifier run (PP-LCNet x0.25, three classes); the student is trained on the
same images for a few steps."""

from __future__ import annotations

import csv
import math

import pytest
import torch
from safetensors.torch import load_file

from oarkit.core.cli import main
from oarkit.core.distill import KnowledgeDistillation, kd_loss
from oarkit.core.errors import ConfigError

from .conftest import assert_resume_bit_exact

RECIPE = "clas/pp_lcnet_x0_5_digits_32x32"


def _settings(root, *extra) -> list[str]:
    return [f"data.root={root}", "task.model.name=clas/pp_lcnet_x0_25", "data.batch_size=4", "trainer.progress=false",
            "trainer.tensorboard=false", *extra]


def _student(root, out, *extra) -> list[str]:
    return ["train", "-c", RECIPE, *_settings(root, f"output_dir={out}", *extra)]


def test_kd_loss_is_the_tempered_kl_divergence():
    student, teacher = torch.randn(4, 5), torch.randn(4, 5)
    t = 3.0
    p = torch.softmax(teacher / t, -1)
    want = (p * (torch.log(p) - torch.log_softmax(student / t, -1))).sum(-1).mean() * t * t
    assert torch.allclose(kd_loss(student, teacher, t), want)
    assert kd_loss(teacher, teacher, t).abs() < 1e-6
    pixels = torch.randn(2, 3, 4, 4)  # per-pixel logits: the class dimension is 1
    assert kd_loss(pixels, pixels, 2.0, dim=1).abs() < 1e-6
    with pytest.raises(ConfigError, match=r"teacher's logits have shape \[4, 6\] but the student's \[4, 5\]"):
        kd_loss(student, torch.randn(4, 6), t)


def test_bad_settings_are_refused_by_name(tmp_path):
    with pytest.raises(ConfigError, match="distill.temperature must be positive"):
        KnowledgeDistillation(str(tmp_path), temperature=0)
    with pytest.raises(ConfigError, match=r"distill.alpha must be in \[0, 1\]"):
        KnowledgeDistillation(str(tmp_path), alpha=1.5)
    with pytest.raises(ConfigError, match="neither an existing run or model directory nor a registered model"):
        KnowledgeDistillation(str(tmp_path / "no_such_run"))


def test_a_distilled_student_trains_saves_without_its_teacher_and_records_it(colour_clas_run, colour_clas_root,
                                                                               tmp_path):
    out = tmp_path / "student"
    assert main(_student(colour_clas_root, out, "trainer.max_epochs=2", "distill=kd",
                         f"distill.teacher={colour_clas_run}", "distill.temperature=2")) == 0
    meta = __import__("json").loads((out / "best" / "meta.json").read_text())
    assert meta["distill"]["method"] == "kd" and str(colour_clas_run) in meta["distill"]["teacher"]
    assert meta["distill"]["temperature"] == 2.0 and meta["distill"]["alpha"] == 0.5
    saved = load_file(str(out / "best" / "model.safetensors"))
    from oarkit.core.registry import create_model

    assert saved.keys() == create_model("clas/pp_lcnet_x0_25", num_classes=3).state_dict().keys()
    rows = list(csv.DictReader((out / "metrics.csv").read_text().splitlines()))
    assert rows and all(math.isfinite(float(r["train_kd_loss"])) for r in rows)
    from oarkit.clas import Classifier

    assert Classifier(str(out))(torch.zeros(32, 32, 3, dtype=torch.uint8).numpy()).label in ("red", "green", "blue")


def test_a_resumed_distillation_run_is_bit_exact(colour_clas_run, colour_clas_root, tmp_path):
    assert_resume_bit_exact(RECIPE, _settings(colour_clas_root, "trainer.max_epochs=2", "distill=kd",
                                              f"distill.teacher={colour_clas_run}", "trainer.ema_decay=null"),
                            tmp_path)


def test_a_teacher_of_other_classes_is_refused(colour_clas_root, tmp_path, capsys):
    from oarkit.core.engine.checkpoint import contiguous_state, write_model_dir
    from oarkit.core.registry import create_model

    teacher = write_model_dir(tmp_path / "five_classes", weights=contiguous_state(
        create_model("clas/pp_lcnet_x0_25", num_classes=5)), config_yaml="{}\n",
        meta={"task": "clas", "model": {"name": "clas/pp_lcnet_x0_25", "kwargs": {"num_classes": 5}}})
    code = main(_student(colour_clas_root, tmp_path / "student", "trainer.max_epochs=1", "distill=kd",
                         f"distill.teacher={teacher}"))
    assert code != 0
    assert "teacher's logits have shape [4, 5] but the student's [4, 3]" in capsys.readouterr().err
