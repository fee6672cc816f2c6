"""``prune=l1|fpgm|taylor``: a trained checkpoint's channels removed to a FLOPs target through Torch-Pruning, then
fine-tuned in the normal Trainer; the pruned run reloads from its meta.json alone (no pruning code), evaluates,
predicts and exports with verification. The classifier is the colour run (PP-LCNet x0.25, three classes)."""

from __future__ import annotations

import json

import pytest
import torch

from oarkit.core.cli import main
from oarkit.core.errors import ConfigError, WeightsError
from oarkit.core.prune import (
    StructuredPruning,
    apply_pruned_shapes,
    count_flops,
    prune_to_flops,
    pruned_shapes,
    snapshot,
)
from oarkit.core.registry import create_model

from .conftest import assert_resume_bit_exact

pytest.importorskip("torch_pruning")
RECIPE = "clas/pp_lcnet_x0_5_digits_32x32"


def _args(root, out, *extra) -> list[str]:
    return ["train", "-c", RECIPE, f"data.root={root}", "task.model.name=clas/pp_lcnet_x0_25", "data.batch_size=4",
            "trainer.progress=false", "trainer.tensorboard=false", f"output_dir={out}", *extra]


def test_count_flops_counts_multiply_adds_twice():
    layer = torch.nn.Linear(8, 4, bias=False)
    assert count_flops(layer, (torch.randn(3, 8),)) == 2 * 3 * 8 * 4
    conv = torch.nn.Conv2d(2, 5, 3, padding=1, bias=False)
    assert count_flops(conv, (torch.randn(1, 2, 6, 6),)) == 2 * 6 * 6 * 5 * 2 * 9


@pytest.mark.parametrize("method", ["l1", "fpgm"])
def test_a_pruned_model_meets_its_flops_target_and_rebuilds_from_the_record(method):
    model = create_model("clas/pp_lcnet_x0_25", num_classes=7).eval()
    inputs = (torch.randn(1, 3, 32, 32),)
    built = snapshot(model)
    result = prune_to_flops(model, inputs, method, 0.4)
    assert abs(result.flops_ratio / 0.4 - 1) <= 0.05
    assert count_flops(result.model, inputs) == result.flops_after < result.flops_before == count_flops(model, inputs)
    assert result.model(*inputs).shape == (1, 7)  # the class count is never pruned
    record = json.loads(json.dumps(pruned_shapes(built, result.model)))  # data only: it survives JSON
    assert any(c["attributes"].get("out_channels") for c in record.values())
    fresh = create_model("clas/pp_lcnet_x0_25", num_classes=7)
    apply_pruned_shapes(fresh, record)
    fresh.load_state_dict(result.model.state_dict())
    assert torch.equal(fresh.eval()(*inputs), result.model(*inputs))


def test_attention_heads_and_feed_forward_width_are_pruned_not_the_hidden_size():
    model = create_model("nlp/bert_tiny_uncased", num_classes=3).eval()
    ids = (torch.randint(5, 100, (1, 12)),)
    key = next(k for k in model.state_dict() if k.endswith("word_embeddings.weight"))
    hidden = model.state_dict()[key].shape
    result = prune_to_flops(model, ids, "l1", 0.5)
    pruned = result.model
    assert abs(result.flops_ratio / 0.5 - 1) <= 0.05 and pruned(*ids).logits.shape == model(*ids).logits.shape
    assert pruned.state_dict()[key].shape == hidden
    attention = [m for m in pruned.modules() if hasattr(m, "num_attention_heads") and hasattr(m, "query")]
    assert attention and all(m.num_attention_heads * m.attention_head_size == m.query.out_features for m in attention)
    assert any(m.num_attention_heads < 2 or m.query.out_features < 128 for m in attention)


def test_bad_settings_are_refused_by_name(tmp_path, colour_clas_run):
    with pytest.raises(ConfigError, match=r"prune.flops=1.0 must be in \(0, 1\)"):
        StructuredPruning("l1", checkpoint=str(colour_clas_run), flops=1.0)
    with pytest.raises(ConfigError, match=r"prune.flops=0 must be in \(0, 1\)"):
        StructuredPruning("l1", checkpoint=str(colour_clas_run), flops=0)
    with pytest.raises(ConfigError, match="not a pruning method"):
        StructuredPruning("l2", checkpoint=str(colour_clas_run))
    with pytest.raises(WeightsError, match="prune.checkpoint=.*no_such_run.* is not a run or model directory"):
        StructuredPruning("l1", checkpoint=str(tmp_path / "no_such_run"))
    with pytest.raises(ConfigError, match=r"prune.flops=1.5 must be in \(0, 1\)"):
        prune_to_flops(torch.nn.Linear(4, 4), (torch.randn(1, 4),), "l1", 1.5)
    with pytest.raises(WeightsError, match="records a pruned module 'head.nothing'"):
        apply_pruned_shapes(torch.nn.Linear(2, 2), {"head.nothing": {"attributes": {}, "tensors": {}}})
    with pytest.raises(WeightsError, match="does not fit"):
        apply_pruned_shapes(torch.nn.Linear(2, 2), {"": {"attributes": {"in_features": "import os"}, "tensors": {}}})
    from oarkit.core import load_config

    with pytest.raises(ConfigError, match="prune.checkpoint is required"):
        load_config(RECIPE, ["prune=l1"])


def test_a_pruned_run_trains_reloads_evaluates_and_exports_verified(colour_clas_run, colour_clas_root, tmp_path,
                                                                    capsys):
    out = tmp_path / "pruned"
    assert main(_args(colour_clas_root, out, "trainer.max_epochs=1", "prune=fpgm",
                      f"prune.checkpoint={colour_clas_run}", "prune.flops=0.5")) == 0
    meta = json.loads((out / "best" / "meta.json").read_text())
    record = meta["prune"]
    assert record["method"] == "fpgm" and record["flops"] == 0.5 and str(colour_clas_run) in record["checkpoint"]
    assert abs(record["flops_after"] / record["flops_before"] / 0.5 - 1) <= 0.05

    from oarkit.clas import Classifier
    from oarkit.core import load_model

    model = load_model(str(out))  # rebuilt from meta.json: registry name, kwargs, pruned sizes
    float_model = load_model(str(colour_clas_run))
    image = (torch.randn(1, 3, 32, 32),)
    assert count_flops(model, image) / count_flops(float_model, image) == pytest.approx(0.5, rel=0.05)
    assert sum(p.numel() for p in model.parameters()) < sum(p.numel() for p in float_model.parameters())
    assert Classifier(str(out))(torch.zeros(32, 32, 3, dtype=torch.uint8).numpy()).label in ("red", "green", "blue")
    capsys.readouterr()
    assert main(["eval", str(out), "--data", str(colour_clas_root), "--json"]) == 0
    printed = capsys.readouterr().out
    assert "top1" in json.loads(printed[printed.index("{"):])
    assert main(["export", str(out), "--format", "onnx", "--quantize", "int8", "--verify",
                 "--data", str(colour_clas_root)]) in (0, 1)
    report = json.loads((out / "export" / "report.json").read_text())
    statuses = {row["format"]: row["status"] for row in report["rows"]}
    assert statuses["onnx"] == "pass" and "onnx_int8" in statuses


def test_a_resumed_taylor_pruned_run_is_bit_exact(colour_clas_run, colour_clas_root, tmp_path):
    args = _args(colour_clas_root, tmp_path / "unused", "trainer.max_epochs=2", "prune=taylor",
                 f"prune.checkpoint={colour_clas_run}", "trainer.ema_decay=null")[3:]
    assert_resume_bit_exact(RECIPE, [a for a in args if not a.startswith("output_dir=")], tmp_path)


def test_pruned_widths_are_rounded_to_multiples_of_eight_where_the_target_allows(caplog):
    model = create_model("clas/resnet18_vd", num_classes=4).eval()
    inputs = (torch.randn(1, 3, 64, 64),)
    result = prune_to_flops(model, inputs, "l1", 0.5, round_to=8)
    assert result.round_to == 8 and abs(result.flops_ratio / 0.5 - 1) <= 0.05
    widths = [m.out_channels for m in result.model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert widths and all(w % 8 == 0 for w in widths)
    # PP-LCNet x0.25 starts at 8 channels: rounding cannot reach 0.4 of its FLOPs, so widths stay unrounded
    tiny = create_model("clas/pp_lcnet_x0_25", num_classes=4).eval()
    with caplog.at_level("WARNING"):
        unrounded = prune_to_flops(tiny, (torch.randn(1, 3, 32, 32),), "l1", 0.4, round_to=64)
    assert unrounded.round_to is None and abs(unrounded.flops_ratio / 0.4 - 1) <= 0.05
    assert "pruning to unrounded widths instead" in caplog.text


def test_a_run_pruned_with_rounded_widths_split_between_two_shares_records_them(colour_clas_root, tmp_path):
    run, pruned = tmp_path / "resnet", tmp_path / "pruned"
    base = [a.replace("clas/pp_lcnet_x0_25", "clas/resnet18_vd") for a in _args(colour_clas_root, run)]
    assert main([*base, "trainer.max_epochs=1"]) == 0
    assert main([*[a.replace(f"output_dir={run}", f"output_dir={pruned}") for a in base], "trainer.max_epochs=1",
                 "prune=l1", f"prune.checkpoint={run}", "prune.flops=0.5"]) == 0
    record = json.loads((pruned / "best" / "meta.json").read_text())["prune"]
    assert record["round_to"] == 8 and record["channel_ratio"] is None  # one share jumps over 0.5 on ResNet18-vd
    assert len(set(record["layer_ratios"].values())) == 2
    assert abs(record["flops_after"] / record["flops_before"] / 0.5 - 1) <= 0.05

