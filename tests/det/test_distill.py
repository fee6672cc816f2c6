"""``distill=kd`` for detectors: the head's per-level class logits and distance bins of a frozen PP-YOLOE+
teacher are the student's soft targets (PaddleDetection's PP-YOLOE distillation, LD); the saved student is plain."""

from __future__ import annotations

import csv
import json

import pytest
import torch
from safetensors.torch import load_file

from oarkit.core.cli import main
from oarkit.core.errors import ConfigError
from oarkit.core.registry import create_model
from oarkit.det.distill import head_layers, head_logits

DEMO = "det/ppyoloe_plus_crn_s_shapes_160x160"
TINY = ["data.batch_size=4", "data.size=[64,64]", "data.multi_scale=[]", "scheduler.warmup_iters=1",
        "trainer.progress=false", "trainer.tensorboard=false", "trainer.max_iters=2", "trainer.eval_every_iters=2"]


def test_a_distilled_detector_learns_the_head_outputs_and_saves_the_student_alone(det_shapes_root, tmp_path):
    teacher, student = tmp_path / "teacher", tmp_path / "student"
    assert main(["train", "-c", DEMO, f"data.root={det_shapes_root}", f"output_dir={teacher}", *TINY]) == 0
    assert main(["train", "-c", DEMO, f"data.root={det_shapes_root}", f"output_dir={student}", *TINY,
                 "distill=kd", f"distill.teacher={teacher}"]) == 0
    meta = json.loads((student / "best" / "meta.json").read_text())
    assert meta["distill"]["method"] == "kd" and str(teacher) in meta["distill"]["teacher"]
    rows = list(csv.DictReader((student / "metrics.csv").read_text().splitlines()))
    assert rows and all(float(r["train_kd_loss"]) > 0 for r in rows)
    saved = load_file(str(student / "best" / "model.safetensors"))
    classes = meta["model"]["kwargs"]["num_classes"]
    assert saved.keys() == create_model("det/ppyoloe_plus_crn_s", num_classes=classes).state_dict().keys()


@pytest.mark.parametrize("name", ["det/ppyoloe_plus_crn_s", "det/picodet_s_320"])
def test_the_declared_head_layers_give_class_and_bin_logits_in_both_modes(name):
    model = create_model(name, num_classes=3).eval()
    layers = head_layers(model)
    modules = dict(model.named_modules())
    seen: dict[str, torch.Tensor] = {}
    hooks = [modules[n].register_forward_hook(lambda _m, _a, out, n=n: seen.__setitem__(n, out)) for n in layers]
    with torch.no_grad():
        model(torch.randn(1, 3, 64, 64))
    for h in hooks:
        h.remove()
    logits = head_logits({n: seen[n] for n in layers}, layers, 3)
    classes = [t for t, dim in logits if dim == -1]
    bins = [t for t, dim in logits if dim == 2]
    assert classes and len(classes) == len(bins)  # one of each per level
    assert all(t.shape[1] == 3 and t.shape[-1] == 2 for t in classes)  # [B, C, H, W, 2]: class / not
    assert all(t.shape[1] == 4 for t in bins)  # [B, 4, bins, H, W]


def test_a_detector_without_declared_head_layers_is_refused_by_name():
    with pytest.raises(ConfigError, match="declares no head layers to distill"):
        head_layers(torch.nn.Linear(2, 2))
