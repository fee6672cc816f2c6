"""The command line end to end on a tiny dataset: train, resume, eval, predict, summary, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from oarkit.core.cli import main

DEMO = "clas/pp_lcnet_x0_5_digits_32x32"
ROOT = Path(__file__).resolve().parents[2]


def test_train_eval_predict_summary(tiny_overrides, shapes_root, tmp_path, capsys):
    assert main(["train", "-c", DEMO, *tiny_overrides]) == 0
    run = tmp_path / "run"
    meta = json.loads((run / "best" / "meta.json").read_text())
    assert meta["labels"] == ["circle", "square", "triangle"]
    assert meta["model"] == {"name": "clas/pp_lcnet_x0_25", "kwargs": {"num_classes": 3}}
    assert meta["preprocessing"]["crop"] == [32, 32]
    assert (run / "curves.png").exists() and (run / "confusion_matrix.png").exists()

    assert main(["eval", str(run), "--json"]) == 0
    out = capsys.readouterr().out
    results = json.loads(out[out.index("{"):])
    assert results["num_samples"] == 12 and Path(results["confusion_matrix"]).exists()
    # one evaluation path: the number oarkit eval gives is the number training logged for best/
    assert results["top1"] == pytest.approx(meta["metrics"]["top1"], abs=1e-9)

    images = [str(shapes_root / "val" / k / "000.png") for k in ("circle", "square")]
    assert main(["predict", str(run), *images, "--topk", "2", "--save-dir", str(tmp_path / "pred")]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    assert len(lines) == 2 and all(len(x["topk"]) == 2 and x["label"] in meta["labels"] for x in lines)
    assert all(Path(x["plot"]).exists() for x in lines)

    assert main(["summary", str(run)]) == 0
    assert "best top1" in capsys.readouterr().out


def test_resume_from_the_command_line_matches_a_straight_run(tiny_overrides, tmp_path):
    straight = [o.replace(str(tmp_path / "run"), str(tmp_path / "straight")) for o in tiny_overrides]
    assert main(["train", "-c", DEMO, *straight]) == 0
    # An interrupted 2-epoch run: the same config, stopped after its first epoch, then resumed.
    interrupted = [*tiny_overrides, "+callbacks=[{_target_: oarkit.core.engine.callbacks.StopAfter, epochs: 1}]"]
    assert main(["train", "-c", DEMO, *interrupted, f"output_dir={tmp_path / 'resumed'}"]) == 0
    resumed = [o for o in tiny_overrides if not o.startswith("output_dir")]
    assert main(["train", "-c", DEMO, *resumed, f"output_dir={tmp_path / 'resumed'}", "--resume"]) == 0
    a = load_file(str(tmp_path / "straight" / "last" / "model.safetensors"))
    b = load_file(str(tmp_path / "resumed" / "last" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_bad_input_gets_a_clear_message_not_a_traceback(tiny_overrides, tmp_path, capsys):
    assert main(["train", "-c", DEMO, *tiny_overrides, f"data.root={tmp_path / 'missing'}"]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and str(tmp_path / "missing") in err and "Traceback" not in err
    assert main(["predict", str(tmp_path / "nothing"), "x.png"]) == 2
    assert "neither an existing run directory nor a registered model" in capsys.readouterr().err
    assert main(["prepare-data", "digitz", "--out", str(tmp_path)]) == 2
    assert "digits" in capsys.readouterr().err


def test_tools_script_runs_as_a_program(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "train.py"), "-c", DEMO, "--show-config",
                           "trainer.max_epochs=1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "max_epochs: 1" in proc.stdout and "oarkit.clas.ClassificationTask" in proc.stdout
