"""``oarkit prune-sensitivity``: each prunable group pruned alone and scored without fine-tuning, written as
json/csv/png; ``prune.sensitivity=`` turns the table into layer-wise ratios that meet a FLOPs target and reload.
The run is the colour classifier (PP-LCNet x0.25, three classes)."""

from __future__ import annotations

import csv
import json
import shutil

import pytest
import torch

from oarkit.core.cli import main
from oarkit.core.errors import ConfigError
from oarkit.core.prune import StructuredPruning, find_prunable, prune_to_flops
from oarkit.core.prune.layerwise import SensitivityTable
from oarkit.core.prune.sensitivity import analyse_sensitivity, metric_loss
from oarkit.core.registry import create_model

pytest.importorskip("torch_pruning")
RATIOS = [0.3, 0.6]
LAYERS = 4


@pytest.fixture(scope="module")
def analysed(colour_clas_run, tmp_path_factory):
    """A copy of the colour run with its default ``prune_sensitivity/`` written by the CLI, and what it printed."""
    import contextlib
    import io

    run = tmp_path_factory.mktemp("sensitivity") / "run"
    shutil.copytree(colour_clas_run, run)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["prune-sensitivity", str(run), "--ratios", ",".join(map(str, RATIOS)),
                     "--layers", str(LAYERS)]) == 0
    return run, printed.getvalue()


def test_the_cli_writes_a_row_per_layer_and_the_baseline_is_the_unpruned_eval(analysed):
    from oarkit.core.engine.evaluation import evaluate_run

    run, printed = analysed
    out = run / "prune_sensitivity"
    table = json.loads((out / "sensitivity.json").read_text())
    assert table["method"] == "l1" and table["metric"] == "top1" and table["split"] == "val"
    assert table["baseline"] == evaluate_run(run)["top1"]  # the one evaluation path, unpruned
    layers = table["layers"]
    assert len(layers) == LAYERS < table["groups"]
    shares = [entry["flops_share"] for entry in layers.values()]
    assert shares == sorted(shares, reverse=True) and all(0 < s < 1 for s in shares)  # most FLOPs first
    for entry in layers.values():
        assert entry["ratios"] == RATIOS and len(entry["metric"]) == len(entry["loss"]) == len(RATIOS)
        assert entry["loss"] == [metric_loss(table["baseline"], m) for m in entry["metric"]]
        assert 1.0 > entry["flops"][0] > entry["flops"][1] > 0  # a larger ratio removes more
        assert entry["channels"] > 0
    with open(out / "sensitivity.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0][:3] == ["layer", "channels", "flops_share"] and "top1@0.3" in rows[0] and "loss@0.6" in rows[0]
    assert [row[0] for row in rows[1:]] == list(layers)
    from PIL import Image

    with Image.open(out / "sensitivity.png") as image:
        assert image.format == "PNG" and image.width > 600
    assert all(name in printed for name in layers) and str(out / "sensitivity.json") in printed


def test_a_table_starts_at_no_loss_and_gives_sensitive_layers_smaller_ratios(tmp_path):
    path = tmp_path / "sensitivity.json"
    path.write_text(json.dumps({"method": "l1", "metric": "top1", "layers": {
        "sensitive": {"ratios": [0.2, 0.4, 0.6], "loss": [0.1, 0.4, 0.8]},
        "robust": {"ratios": [0.2, 0.4, 0.6], "loss": [0.0, 0.02, 0.01]},  # noisy: not monotonic
    }}))
    table = SensitivityTable.load(path)
    assert table.ratios_at(0.0) == {"sensitive": 0.0, "robust": 0.0}  # ratio 0 is loss 0
    ratios = table.ratios_at(0.25)
    assert 0.2 < ratios["sensitive"] < 0.4 and ratios["robust"] == 0.6  # interpolated; the largest under 0.25
    assert table.ratios_at(table.max_threshold) == {"sensitive": 0.6, "robust": 0.6}
    low, high = table.ratios_at(0.001)["robust"], table.ratios_at(0.005)["robust"]
    assert 0 < low < high < 0.6  # flat layers grow evenly (the tie slope), not all at once


def test_layer_wise_ratios_follow_the_table_and_leave_unnamed_groups_whole(tmp_path):
    model = create_model("clas/pp_lcnet_x0_25", num_classes=3).eval()
    inputs = (torch.randn(1, 3, 32, 32),)
    groups = find_prunable(model, inputs).groups
    sensitive, robust = "conv_head", "blocks.5.1.conv_pw"
    assert {sensitive, robust} <= set(groups)
    path = tmp_path / "sensitivity.json"
    path.write_text(json.dumps({"method": "l1", "metric": "top1", "layers": {
        sensitive: {"ratios": [0.3, 0.6], "loss": [0.3, 0.9]}, robust: {"ratios": [0.3, 0.6], "loss": [0.0, 0.05]}}}))
    result = prune_to_flops(model, inputs, "l1", 0.8, sensitivity=SensitivityTable.load(path))
    assert abs(result.flops_ratio / 0.8 - 1) <= 0.05 and result.ratio is None
    assert set(result.ratios) == {sensitive, robust} and result.ratios[robust] > result.ratios[sensitive]
    for name in set(groups) - {sensitive, robust}:  # not in the table: kept at full width
        assert result.model.get_submodule(name).weight.shape == model.get_submodule(name).weight.shape
    assert result.model.get_submodule(robust).out_channels < model.get_submodule(robust).out_channels


def test_layer_wise_pruning_from_the_cli_table_meets_the_target_and_reloads(analysed, colour_clas_run,
                                                                            colour_clas_root, tmp_path, check_pruned):
    run, _ = analysed
    table = run / "prune_sensitivity" / "sensitivity.json"
    out = tmp_path / "layerwise"
    assert main(["train", "-c", "clas/pp_lcnet_x0_5_digits_32x32", f"data.root={colour_clas_root}",
                 "task.model.name=clas/pp_lcnet_x0_25", "data.batch_size=4", "trainer.progress=false",
                 "trainer.tensorboard=false", f"output_dir={out}", "trainer.max_epochs=1", "prune=l1",
                 f"prune.checkpoint={colour_clas_run}", f"prune.sensitivity={table}", "prune.flops=0.8"]) == 0
    record = check_pruned(out, colour_clas_run, flops=0.8, data=colour_clas_root)
    assert record["sensitivity"] == str(table) and record["channel_ratio"] is None
    layers = json.loads(table.read_text())["layers"]
    assert set(record["layer_ratios"]) == set(layers)
    assert all(0 <= r <= max(RATIOS) for r in record["layer_ratios"].values())
    assert any(r > 0 for r in record["layer_ratios"].values())


def test_bad_input_is_refused_by_name(colour_clas_run, tmp_path, capsys):
    assert main(["prune-sensitivity", str(tmp_path / "no_such_run")]) == 2
    assert "needs a trained run or model directory" in capsys.readouterr().err
    assert main(["prune-sensitivity", str(tmp_path)]) == 2  # a folder, but no run in it
    assert "neither a run directory" in capsys.readouterr().err
    assert main(["prune-sensitivity", str(colour_clas_run), "--ratios", "0.3,1.5"]) == 2
    assert "pruning ratio 1.5 is outside (0, 1)" in capsys.readouterr().err
    assert main(["prune-sensitivity", str(colour_clas_run), "--ratios", "0.3,half"]) == 2
    assert "must be comma-separated numbers" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="taylor needs gradients"):
        analyse_sensitivity(colour_clas_run, method="taylor")
    with pytest.raises(ConfigError, match="--layers 0 must be at least 1"):
        analyse_sensitivity(colour_clas_run, layers=0)
    with pytest.raises(ConfigError, match="prune.sensitivity=.*missing.json.* cannot be read"):
        StructuredPruning("l1", checkpoint=str(colour_clas_run), sensitivity=str(tmp_path / "missing.json"))
    (tmp_path / "other.json").write_text(json.dumps({"layers": {"x": {"ratios": [1.2], "loss": [0.1]}}}))
    with pytest.raises(ConfigError, match="layer 'x' needs 'ratios' in"):
        SensitivityTable.load(tmp_path / "other.json")
