"""``oarkit tune``: the space syntax, a study's reports, resume, pruning, failures, two processes on one SQLite file.

Trials train the demo clas recipe on a tiny colour ImageFolder (three classes, 12 training images, PP-LCNet
x0.25, two epochs of three steps): about a second each.
"""

from __future__ import annotations

import csv
import logging
import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from oarkit.core.errors import ConfigError
from oarkit.core.tune import SearchParam, parse_space, parse_space_entry, space_overrides

optuna = pytest.importorskip("optuna")
REPO = Path(__file__).resolve().parents[2]
RECIPE = "clas/pp_lcnet_x0_5_digits_32x32"
STEPS_PER_EPOCH = 3  # 12 training images, batch 4


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory) -> Path:
    pytest.importorskip("oarkit.clas")
    root = tmp_path_factory.mktemp("colours")
    rng = np.random.default_rng(0)
    for split, n in (("train", 4), ("val", 2)):
        for name, colour in {"red": (200, 30, 30), "green": (30, 200, 30), "blue": (30, 30, 200)}.items():
            (root / split / name).mkdir(parents=True)
            for i in range(n):
                image = np.clip(np.array(colour) + rng.normal(0, 20, (32, 32, 3)), 0, 255).astype(np.uint8)
                cv2.imwrite(str(root / split / name / f"{i:03d}.png"), image)
    return root


@pytest.fixture
def tiny(tiny_root) -> list[str]:
    """Overrides that make every trial of the demo recipe a second-long run."""
    return [f"data.root={tiny_root}", "task.model.name=clas/pp_lcnet_x0_25", "trainer.max_epochs=2",
            "data.batch_size=4", "trainer.progress=false", "trainer.tensorboard=false"]


def _study(out: Path, name: str = "pp_lcnet_x0_5_digits_32x32"):
    return optuna.load_study(study_name=name, storage=f"sqlite:///{out / 'study.db'}")


# ----------------------------------------------------------------------------- the space syntax
def test_space_entries_parse_to_ranges_and_choices():
    lr, batch, momentum, opt, flag = parse_space(["optimizer.lr=1e-4:1e-1:log", "data.batch_size=8:32",
                                                 "optimizer.momentum=0.5:0.99", "optimizer=sgd,adamw",
                                                 "trainer.deterministic=true,false"])
    assert (lr.kind, lr.low, lr.high, lr.log) == ("float", 1e-4, 1e-1, True)
    assert (batch.kind, batch.low, batch.high, batch.log) == ("int", 8, 32, False)
    assert isinstance(batch.low, int) and momentum.kind == "float" and not momentum.log
    assert opt == SearchParam(key="optimizer", kind="categorical", choices=("sgd", "adamw"), text="optimizer=sgd,adamw")
    assert flag.choices == (True, False)
    assert parse_space_entry("data.batch_size=8,16,32").choices == (8, 16, 32)
    assert parse_space_entry("x.y=1:1000:log").kind == "int"  # two ints: an int range, log or not
    assert parse_space_entry("x.y=1:2.5").kind == "float"
    assert space_overrides({"optimizer.lr": 0.001, "trainer.deterministic": False, "optimizer": "adamw"}) == [
        "optimizer.lr=0.001", "trainer.deterministic=false", "optimizer=adamw"]


@pytest.mark.parametrize(("entry", "message"), [
    ("optimizer.lr", "must read KEY=LOW:HIGH"),
    ("=1:2", "must read KEY=LOW:HIGH"),
    ("optimizer.lr=", "must read KEY=LOW:HIGH"),
    ("optimizer.lr=0.1", "must read KEY=LOW:HIGH"),
    ("optimizer.lr=1:2:3", "must read KEY=LOW:HIGH"),
    ("optimizer.lr=1:2:lin", "must read KEY=LOW:HIGH"),
    ("optimizer.lr=a:b", "bounds of a range must be numbers"),
    ("optimizer.lr=0.1:0.01", "LOW must be below HIGH"),
    ("optimizer.lr=3:3", "LOW must be below HIGH"),
    ("optimizer.lr=0:1:log", "log range needs LOW > 0"),
    ("optimizer=sgd,,adamw", "empty choice"),
    ("optimizer=sgd,sgd", "lists a choice twice"),
    ("optimizer..lr=1:2", "not a dotted config key"),
])
def test_bad_space_entries_name_the_entry_and_the_syntax(entry, message):
    with pytest.raises(ConfigError, match=message) as err:
        parse_space_entry(entry)
    assert repr(entry) in str(err.value)


def test_a_key_searched_twice_and_an_empty_space_are_refused():
    with pytest.raises(ConfigError, match="names 'optimizer.lr' twice"):
        parse_space(["optimizer.lr=0.01:0.1", "optimizer.lr=0.1,0.2"])
    with pytest.raises(ConfigError, match="at least one --space"):
        parse_space([])


# ----------------------------------------------------------------------------- refused before any trial
@pytest.mark.parametrize(("space", "extra", "message"), [
    (["optimizer.lrr=1e-3:1e-1:log"], [], "unknown key 'optimizer.lrr'.*Did you mean 'optimizer.lr'"),
    (["optimizer=0.1:0.5"], [], "'optimizer' is a config group"),
    (["trainer.eval_every=1.5:3.5"], [], "trainer.eval_every=1.5.*wrong type"),
    (["trainer.precision=fp32,fp8"], [], "trainer.precision='fp8'"),
    (["optimizer.lr=0.01:0.1"], ["optimizer.lr=0.05"], "both an override and a --space entry"),
])
def test_a_space_the_recipe_cannot_take_is_refused_before_any_trial(space, extra, message, tiny, tmp_path,
                                                                     monkeypatch):
    import oarkit.core.config
    from oarkit.core.tune import tune

    def no_trial(*args, **kwargs):
        raise AssertionError("a trial started")

    monkeypatch.setattr(oarkit.core.config, "build_trainer", no_trial)
    with pytest.raises(ConfigError, match=message):
        tune(RECIPE, [*tiny, *extra], space=space, trials=2, out=tmp_path / "tune")
    assert not (tmp_path / "tune").exists()


def test_the_dataset_doctor_runs_once_before_any_trial(tiny, tiny_root, tmp_path, monkeypatch):
    import shutil

    import oarkit.core.config
    from oarkit.core.errors import DataCheckError
    from oarkit.core.tune import tune

    def no_trial(*args, **kwargs):
        raise AssertionError("a trial started")

    root = tmp_path / "broken"
    shutil.copytree(tiny_root, root)
    (root / "train" / "red" / "bad.png").write_bytes(b"not a png")
    monkeypatch.setattr(oarkit.core.config, "build_trainer", no_trial)
    with pytest.raises(DataCheckError, match="corrupt_image"):
        overrides = [o for o in tiny if not o.startswith("data.root=")] + [f"data.root={root}"]
        tune(RECIPE, overrides, space=["optimizer.lr=0.01:0.1"], trials=2, out=tmp_path / "tune")
    assert not (tmp_path / "tune").exists()


def test_the_command_line_reports_an_unknown_key_in_one_line(tiny, tmp_path, capsys):
    from oarkit.core.cli import main

    code = main(["tune", "-c", RECIPE, *tiny, "--trials", "2", "--space", "optimizer.momentun=0.5:0.9",
                 "--out", str(tmp_path / "tune")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "error: unknown key 'optimizer.momentun'" in err and "Did you mean 'optimizer.momentum'" in err


def test_without_optuna_the_verb_names_the_extra(monkeypatch, capsys):
    from oarkit.core.cli import main
    from oarkit.core.deploy.optional import MissingDependencyError
    from oarkit.core.tune import import_optuna

    monkeypatch.setitem(sys.modules, "optuna", None)
    with pytest.raises(MissingDependencyError, match=r'pip install "oarkit\[tune\]"'):
        import_optuna()
    assert main(["tune", "-c", RECIPE, "--trials", "1", "--space", "optimizer.lr=0.01:0.1"]) == 2
    assert 'pip install "oarkit[tune]"' in capsys.readouterr().err


# ----------------------------------------------------------------------------- a study
def test_a_study_writes_best_yaml_tables_and_plots(tiny, tmp_path, caplog, capsys):
    from oarkit.core.cli import main
    from oarkit.core.config import load_config

    out = tmp_path / "tune"
    with caplog.at_level(logging.INFO, logger="oarkit.core.tune"):
        code = main(["tune", "-c", RECIPE, *tiny, "--trials", "3", "--space", "optimizer.lr=1e-3:1e-1:log",
                     "--space", "optimizer.momentum=0.5,0.9", "--out", str(out), "--seed", "0"])
    assert code == 0
    assert "tuning finished" in capsys.readouterr().out
    study = _study(out)
    trials = study.get_trials()
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3
    assert study.direction.name == "MAXIMIZE"  # top1: higher is better
    for t in trials:  # every trial is a normal run in its own directory, scored by its best validation top1
        assert t.user_attrs["run_dir"] == str(out / f"trial_{t.number}")
        assert (out / f"trial_{t.number}" / "best" / "model.safetensors").exists()
        assert 0.0 <= t.value <= 100.0 and 1e-3 <= t.params["optimizer.lr"] <= 1e-1
        assert t.params["optimizer.momentum"] in (0.5, 0.9)
        # the pruning callback reported top1 at each evaluation (its global step); the best of them is the value
        assert set(t.intermediate_values) == {STEPS_PER_EPOCH, 2 * STEPS_PER_EPOCH}
        assert max(t.intermediate_values.values()) == pytest.approx(t.value)
    logged = [r.getMessage() for r in caplog.records if " COMPLETE " in r.getMessage()]
    assert len(logged) == 3 and all("optimizer.lr=" in line and "top1=" in line for line in logged)

    best = study.best_trial
    cfg = load_config(out / "best.yaml")  # the resolved recipe with the best values, loadable as a recipe
    assert cfg.optimizer.lr == pytest.approx(best.params["optimizer.lr"])
    assert cfg.optimizer.momentum == best.params["optimizer.momentum"]
    assert cfg.task.model.name == "clas/pp_lcnet_x0_25" and cfg.trainer.max_epochs == 2
    assert main(["train", "-c", str(out / "best.yaml"), f"output_dir={tmp_path / 'best_run'}",
                 "trainer.max_epochs=1"]) == 0
    assert (tmp_path / "best_run" / "best" / "model.safetensors").exists()

    rows = list(csv.DictReader((out / "trials.csv").read_text().splitlines()))
    assert [r["number"] for r in rows] == ["0", "1", "2"] and {r["state"] for r in rows} == {"COMPLETE"}
    assert {"optimizer.lr", "optimizer.momentum", "top1", "duration_s"} <= set(rows[0])
    assert float(rows[best.number]["top1"]) == pytest.approx(best.value)
    table = (out / "trials.md").read_text().splitlines()
    assert "| trial | state | values | top1 | duration |" in table
    assert sum(line.startswith("| ") and "COMPLETE" in line for line in table) == 3
    for png in ("optimization_history.png", "param_importances.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (out / png).stat().st_size > 5_000


def test_rerunning_resumes_the_study_and_counts_its_trials(tiny, tmp_path, caplog):
    from oarkit.core.tune import tune

    out = tmp_path / "tune"
    space = ["optimizer.lr=1e-3:1e-1:log", "optimizer.momentum=0.5:0.9"]
    with caplog.at_level(logging.INFO, logger="oarkit.core.tune"):
        first = tune(RECIPE, tiny, space=space, trials=1, out=out, seed=0)
    assert first.states == {"COMPLETE": 1} and "param_importances" not in first.files
    assert "parameter importances need at least two completed trials" in caplog.text
    second = tune(RECIPE, tiny, space=space, trials=3, out=out, seed=0)
    assert second.states == {"COMPLETE": 3}  # one done before, two more now
    trials = _study(out).get_trials()
    assert [t.number for t in trials] == [0, 1, 2] and trials[0].params == first.best_params
    assert trials[1].params != trials[0].params  # the resumed sampler draws on, it does not repeat trial 0
    third = tune(RECIPE, tiny, space=space, trials=3, out=out)
    assert third.states == {"COMPLETE": 3} and len(_study(out).get_trials()) == 3
    assert {"param_importances", "optimization_history", "best"} <= set(third.files)


class AlwaysPrune(optuna.pruners.BasePruner):
    def prune(self, study, trial) -> bool:
        return True


def test_a_pruned_trial_stops_training_at_its_first_evaluation(tiny, tmp_path):
    from oarkit.core.tune import tune

    out = tmp_path / "tune"
    result = tune(RECIPE, [*tiny, "trainer.max_epochs=4"], space=["optimizer.lr=1e-3:1e-1:log"], trials=2,
                  out=out, pruner=AlwaysPrune())
    assert result.states == {"PRUNED": 2} and result.best_number is None
    for trial in _study(out).get_trials():
        assert trial.state.name == "PRUNED"
        assert trial.user_attrs["pruned_at"] == STEPS_PER_EPOCH and trial.user_attrs["epochs_run"] == 1
        assert list(trial.intermediate_values) == [STEPS_PER_EPOCH]
        rows = list(csv.DictReader((out / f"trial_{trial.number}" / "metrics.csv").read_text().splitlines()))
        assert len(rows) == 1  # one epoch of four: stopped by the pruner
    assert not (out / "best.yaml").exists() and not (out / "optimization_history.png").exists()
    assert "pruned at step 3" in (out / "trials.md").read_text()


def test_median_and_hyperband_pruners_run(tiny, tmp_path):
    from oarkit.core.tune import make_pruner, tune

    assert isinstance(make_pruner("median"), optuna.pruners.MedianPruner)
    assert isinstance(make_pruner("none"), optuna.pruners.NopPruner)
    with pytest.raises(ConfigError, match="Did you mean 'hyperband'"):
        make_pruner("hyperbnd")
    result = tune(RECIPE, tiny, space=["optimizer.lr=1e-3:1e-1:log"], trials=2, out=tmp_path / "tune",
                  pruner="hyperband", sampler="random", seed=1)
    assert sum(result.states.values()) == 2 and set(result.states) <= {"COMPLETE", "PRUNED"}


def test_a_diverging_trial_fails_and_the_study_goes_on(tiny, tmp_path, caplog):
    from oarkit.core.tune import tune

    out = tmp_path / "tune"
    grid = optuna.samplers.GridSampler({"optimizer.lr": [1e12, 0.01]}, seed=0)  # both values in two trials
    with caplog.at_level(logging.INFO, logger="oarkit.core.tune"):
        result = tune(RECIPE, tiny, space=["optimizer.lr=1e12,0.01"], trials=2, out=out, sampler=grid)
    assert result.states == {"FAIL": 1, "COMPLETE": 1} and result.best_params == {"optimizer.lr": 0.01}
    failed = next(t for t in _study(out).get_trials() if t.state.name == "FAIL")
    assert failed.params == {"optimizer.lr": 1e12} and "the loss is nan" in failed.user_attrs["error"]
    assert "FAIL" in caplog.text and "the loss is nan" in caplog.text
    rows = list(csv.DictReader((out / "trials.csv").read_text().splitlines()))
    assert sorted(r["state"] for r in rows) == ["COMPLETE", "FAIL"]


def test_a_config_error_in_a_trial_stops_the_study(tiny, tmp_path):
    from oarkit.core.tune import tune

    out = tmp_path / "tune"
    # Both values compose (ints), but the Trainer refuses them: the space is wrong, every trial would fail.
    with pytest.raises(ConfigError, match=r"trial 0 \(trainer.accumulate_grad_batches=-?\d\).*accumulate"):
        tune(RECIPE, tiny, space=["trainer.accumulate_grad_batches=0,-1"], trials=3, out=out)
    trials = _study(out).get_trials()
    assert [t.state.name for t in trials] == ["FAIL"]  # stopped at the first
    assert "| 0 | FAIL |" in (out / "trials.md").read_text()


def test_two_processes_share_one_sqlite_study(tiny, tmp_path):
    out = tmp_path / "tune"
    env = {**os.environ, "NO_ALBUMENTATIONS_UPDATE": "1", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(REPO / "tools" / "tune.py"), "-c", RECIPE, *tiny, "--trials", "4",
               "--space", "optimizer.lr=1e-3:1e-1:log", "--space", "optimizer.momentum=0.5:0.95",
               "--sampler", "random", "--out", str(out)]
    workers = [subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True) for _ in range(2)]
    logs = [w.communicate(timeout=300)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], "\n".join(logs)
    trials = _study(out).get_trials()
    # Each process stops at the first trial it finishes once the study holds 4: at most one over per other process.
    assert 4 <= len(trials) <= 5 and {t.state.name for t in trials} == {"COMPLETE"}
    assert [t.number for t in trials] == list(range(len(trials)))
    assert len({t.user_attrs["worker"] for t in trials}) == 2  # both processes ran trials of the one study
    assert all((out / f"trial_{t.number}" / "best").is_dir() for t in trials)
    rows = list(csv.DictReader((out / "trials.csv").read_text().splitlines()))
    assert len(rows) >= 4
