"""One training step of each OCR recipe on rendered data, evaluation through the one path, and a run's predictor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from oarkit.core.cli import main
from oarkit.core.config import build_trainer, load_config
from oarkit.core.engine.evaluation import evaluate_run
from oarkit.core.kits import task_entry


def _train(recipe: str, overrides: list[str]) -> dict:
    return build_trainer(load_config(recipe, overrides)).fit()


def test_det_recipe_trains_one_step_and_evaluates_the_same(det_root, quick):
    summary = _train("ocr/ppocrv4_det_mobile_ch_640", [*quick, f"data.root={det_root}", "data.crop_size=[128,128]",
                                                         "data.batch_size=2", "data.limit_side_len=160"])
    meta = json.loads(Path(summary["best_dir"], "meta.json").read_text())
    assert meta["task"] == "ocr/det" and meta["preprocessing"]["limit_side_len"] == 160
    again = evaluate_run(summary["output_dir"])
    assert again["hmean"] == pytest.approx(summary["best_metric"])
    assert {"precision", "recall", "hmean"} <= set(again)


def test_rec_recipe_trains_one_step_with_ctc_and_nrtr(rec_root, quick):
    summary = _train("ocr/ppocrv4_rec_mobile_ch_48x320", [
        *quick, f"data.root={rec_root}", "data.dictionary=en", "data.batch_size=2", "data.width=160",
        "data.multi_scale_widths=[128,160]"])
    meta = json.loads(Path(summary["best_dir"], "meta.json").read_text())
    assert meta["task"] == "ocr/rec" and meta["dictionary"]["name"] == "en" and meta["dictionary"]["num_classes"] == 96
    history = Path(summary["output_dir"], "metrics.csv").read_text()
    assert "loss_ctc" in history and "loss_nrtr" in history
    again = evaluate_run(summary["output_dir"])
    assert again["acc"] == pytest.approx(summary["best_metric"]) and "cer" in again


def test_cls_recipe_trains_and_predicts_through_the_entry(rec_root, det_root, quick, capsys):
    summary = _train("ocr/cls_mv3_mobile_lines_48x192", [*quick, f"data.root={rec_root}", "data.batch_size=4"])
    assert summary["main_indicator"] == "acc" and 0 <= summary["best_metric"] <= 1
    assert evaluate_run(summary["output_dir"])["acc"] == pytest.approx(summary["best_metric"])
    assert task_entry("ocr/cls").task_class.__name__ == "TextOrientationTask"
    # oarkit predict on the run: the default det and rec around the run's classifier
    capsys.readouterr()
    page = next((det_root / "images").glob("val_*.jpg"))
    assert main(["predict", summary["output_dir"], str(page)]) == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["source"] == str(page) and len(record["lines"]) >= 1


def test_frozen_norm_keeps_the_loaded_statistics(rec_root):
    from torch import nn

    from oarkit.ocr import OCRRecData, TextRecognitionTask

    task = TextRecognitionTask("ocr/rec_mv3_bilstm_ctc", freeze_norm=True)
    data = OCRRecData(root=str(rec_root), dictionary="en", height=32, width=64, batch_size=2)
    model = task.setup(data).train()
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    before = [m.running_mean.clone() for m in norms]
    batch = task.collate([data.train_dataset()[i] for i in range(2)])
    task.training_step(model, batch)["loss"].backward()
    assert norms and all(torch.equal(b, m.running_mean) for b, m in zip(before, norms))
    assert all(m.weight.grad is None for m in norms if m.weight is not None)


def test_sar_guidance_loss_of_ppocrv3(rec_root):
    from oarkit.ocr import OCRRecData, TextRecognitionTask

    task = TextRecognitionTask("ocr/ppocrv3_rec_mobile")
    data = OCRRecData(root=str(rec_root), dictionary="en", width=160, batch_size=2)
    model = task.setup(data).train()
    losses = task.training_step(model, task.collate([data.train_dataset()[i] for i in range(2)]))
    losses["loss"].backward()
    # a random SAR head spreads its probability over the 96 + 3 classes: cross-entropy near log(99)
    assert set(losses) == {"loss", "loss_ctc", "loss_sar"} and 3.5 < float(losses["loss_sar"]) < 5.5
