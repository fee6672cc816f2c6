"""Export tolerances that mean the same for every metric and model: metric tolerances in points of the metric's
full scale, bounds a comparator states itself (and a separate judge for int8 artifacts), a model's own export
options, int8 layers kept float by module, and box matching that prefers a box's own class."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from oarkit.core import ConfigError
from oarkit.core.deploy import read_manifest
from oarkit.core.engine.task import DeploySpec
from oarkit.core.export import Difference, ExportSource, MatchedBoxes, export, get_format
from oarkit.core.export.formats import INT8_METRIC_TOLERANCE, metric_allowance

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")


def test_a_point_is_a_hundredth_of_the_full_scale() -> None:
    assert metric_allowance(1.0) == 1.0 and metric_allowance(INT8_METRIC_TOLERANCE, 1.0) == pytest.approx(0.01)
    assert metric_allowance(0.1, 1.0) == pytest.approx(0.001)
    with pytest.raises(ConfigError, match="full_scale"):
        metric_allowance(1.0, 0.0)


def test_kit_metrics_declare_the_scale_they_compute() -> None:
    from oarkit.clas.metrics import ClassificationMetric
    from oarkit.det.metrics import COCOMetric, VOCMetric

    assert ClassificationMetric.full_scale == 100.0  # top-1 in percent: tolerances as before
    assert COCOMetric.full_scale == VOCMetric.full_scale == 1.0  # mAP in [0, 1]: 1 point is 0.01


class _Strict:
    """Judges every output at an error of 1e-3 against a bound of its own (1e-6): fails whatever the format says."""

    def __call__(self, reference: dict[str, torch.Tensor], actual: dict[str, torch.Tensor]) -> dict[str, Difference]:
        return {name: Difference(1e-3, 1e-3, "strict", tolerance=1e-6) for name in reference}


class _Lenient:
    def __call__(self, reference: dict[str, torch.Tensor], actual: dict[str, torch.Tensor]) -> dict[str, Difference]:
        return {name: Difference(0.9, 0.9, tolerance=1.0) for name in reference}


def _source(toy, tmp_path, *, full_scale: float, **spec: Any) -> ExportSource:
    class FractionAccuracy(toy.Accuracy):
        def compute(self) -> dict[str, Any]:
            return {"acc": super().compute()["acc"] * full_scale / 100.0}

    FractionAccuracy.full_scale = full_scale

    class Task(toy.ToyTask):
        def build_metric(self) -> Any:
            return FractionAccuracy()

        def deploy_spec(self, model: nn.Module) -> DeploySpec:
            return DeploySpec(module=model, example_inputs=(torch.randn(1, 8),), input_names=["x"],
                              output_names=["logits"], dynamic_axes={"x": {0: "batch"}}, labels=["a", "b", "c"],
                              **spec)

    torch.manual_seed(0)
    data = toy.BlobData(n=96)
    task = Task(norm=False, dropout=0.0)
    model = task.setup(data).eval()
    return ExportSource(task=task, model=model, origin="toy", output_dir=tmp_path, meta={}, data_root=str(tmp_path),
                        dataset=lambda root, split: data.train if split == "train" else data.val)


@pytest.mark.parametrize("full_scale", [100.0, 1.0])
def test_metric_tolerance_follows_the_metric_scale(toy, tmp_path, full_scale) -> None:
    report = export(_source(toy, tmp_path, full_scale=full_scale), "onnx", output_dir=tmp_path)
    row = report.row("onnx")
    points = get_format("onnx").metric_tolerance
    assert row.status == "pass" and row.metric_tolerance == pytest.approx(points * full_scale / 100), report.table()


def test_comparator_bounds_and_the_int8_judge(toy, tmp_path) -> None:
    pytest.importorskip("onnxruntime")
    source = _source(toy, tmp_path, full_scale=100.0, compare=_Strict(), quantized_compare=_Lenient(),
                     export_options={"onnx_int8": {"calibration_method": "minmax", "per_channel": True}})
    report = export(source, "onnx", quantize="int8", output_dir=tmp_path, options={"onnx_int8": {"per_channel": False}})
    float_row, int8_row = report.row("onnx"), report.row("onnx_int8")
    # the float artifact is judged by the strict comparator's own bound (1e-6), not the format's (1e-4)
    assert float_row.status == "fail" and "tolerance 1e-06; strict" in float_row.message, report.table()
    assert float_row.outputs["logits"]["tolerance"] == 1e-6
    # the int8 artifact by the spec's int8 judge, with its bound (1.0) in place of the format's (0.5)
    assert int8_row.outputs["logits"] == {"max_abs": 0.9, "max_rel": 0.9, "tolerance": 1.0}
    assert "differs" not in int8_row.message, report.table()  # (an untrained toy's metric may move a point)
    # the model's export options apply unless the caller gives the same key
    quantization = read_manifest(tmp_path / "onnx_int8").quantization
    assert quantization["calibration_method"] == "minmax" and quantization["per_channel"] is False


def _two_conv_graph() -> Any:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    weights = [numpy_helper.from_array(np.ones((4, 3, 1, 1), np.float32), "model.body.weight"),
               numpy_helper.from_array(np.ones((1, 4, 1, 1), np.float32), "model.head.proj_conv.weight")]
    nodes = [helper.make_node("Conv", ["x", "model.body.weight"], ["h"], name="body"),
             helper.make_node("Conv", ["h", "model.head.proj_conv.weight"], ["y"], name="proj")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])], weights)
    return helper.make_model(graph)


def test_float_modules_name_layers_by_module_path() -> None:
    pytest.importorskip("onnx")
    from oarkit.core.quant.ptq import float_module_nodes

    graph = _two_conv_graph()
    assert float_module_nodes(graph, ["model.head.proj_conv"]) == ["proj"]
    assert float_module_nodes(graph, ["*.proj_conv"]) == ["proj"]
    assert float_module_nodes(graph, ["model"]) == ["body", "proj"]
    assert float_module_nodes(graph, []) == []
    with pytest.raises(ConfigError, match="model.neck"):
        float_module_nodes(graph, ["model.neck"])


def test_matched_boxes_prefer_their_own_class_and_excuse_optional_rows() -> None:
    box = [0.0, 0.0, 10.0, 10.0]
    ref = {"boxes": torch.tensor([box]), "scores": torch.tensor([0.9]), "labels": torch.tensor([1])}
    # the artifact holds the same place twice: another class overlapping a bit more, and the box's own class
    act = {"boxes": torch.tensor([box, [0.0, 0.0, 10.0, 9.0]]), "scores": torch.tensor([0.3, 0.88]),
           "labels": torch.tensor([0, 1])}
    diffs = MatchedBoxes("boxes", scores="scores", labels="labels")(ref, act)
    assert diffs["labels"].error == 0 and diffs["scores"].error == pytest.approx(0.02)
    assert diffs["boxes"].error == pytest.approx(1 / 3)  # one box of the three is left unmatched
    optional = MatchedBoxes("boxes", scores="scores", labels="labels", optional="optional")
    diffs = optional(ref | {"optional": torch.tensor([False])}, act | {"optional": torch.tensor([True, False])})
    assert diffs["boxes"].error == pytest.approx(0.1) and diffs["optional"].error == 0  # only 1 - IoU 0.9 is left


def test_matched_boxes_judge_slivers_at_a_minimum_side() -> None:
    # a box clipped flat at the border: 1e-4 px of rounding halves its IoU, which a 1 px floor makes 1e-4
    ref = {"boxes": torch.tensor([[0.0, 10.0, 2e-4, 30.0], [40.0, 40.0, 60.0, 60.0]])}
    act = {"boxes": torch.tensor([[0.0, 10.0, 1e-4, 30.0], [40.0, 40.0, 60.0, 60.5]])}
    assert MatchedBoxes("boxes")(ref, act)["boxes"].error == pytest.approx(0.5, abs=1e-3)
    floored = MatchedBoxes("boxes", min_side=1.0)(ref, act)["boxes"]
    assert floored.error == pytest.approx(0.5 / 20.5, rel=1e-3)  # now the real 0.5 px move of the second box
    assert floored.max_abs == pytest.approx(0.5)  # coordinates are reported as they are
    moved = {"boxes": torch.tensor([[0.6, 10.0, 0.6001, 30.0], [40.0, 40.0, 60.0, 60.0]])}
    assert MatchedBoxes("boxes", min_side=1.0)(ref, moved)["boxes"].error > 0.4  # a sliver that moves still fails
    with pytest.raises(ConfigError, match="min_side"):
        MatchedBoxes("boxes", min_side=-1.0)


class _AnyChange:
    """Reports 1e-3 for an output that changes at all, as a selection among near-ties does, and 0 otherwise."""

    def __call__(self, reference: dict[str, torch.Tensor], actual: dict[str, torch.Tensor]) -> dict[str, Difference]:
        return {name: Difference(0.0 if torch.equal(reference[name], actual[name]) else 1e-3, 1e-3)
                for name in reference}


def test_a_float_export_can_be_held_to_eagers_own_spread(toy, tmp_path) -> None:
    strict = export(_source(toy, tmp_path / "a", full_scale=100.0, compare=_AnyChange()), "onnx",
                    output_dir=tmp_path / "a").row("onnx")
    held = export(_source(toy, tmp_path / "b", full_scale=100.0, compare=_AnyChange(), spread_nudge=1e-6), "onnx",
                  output_dir=tmp_path / "b").row("onnx")
    # onnxruntime's logits differ from eager's in the last bits: 1e-3 against the format's 1e-4
    assert strict.status == "fail" and "differs by 0.001" in strict.message
    # eager itself moves under a 1e-6 input nudge: the output is held to that spread instead, and says so
    assert held.status == "pass" and held.outputs["logits"]["tolerance"] == pytest.approx(1e-3), held.message


def test_own_spread_raises_only_the_outputs_eager_moves_on() -> None:
    from oarkit.core.export.verify import hold_to_own_spread, own_spread

    class NearTie(nn.Module):  # which of two near-equal values is larger, and a smooth output
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return (x[:, 0] > x[:, 1]).float(), 2 * x

    x = torch.tensor([[2.0, 0.0]] + [[0.5, 0.5]] * 8)  # eight ties: a nudge flips some of them
    spread = own_spread(NearTie(), [(x,)], ["pick", "double"], None, 1e-6)
    assert spread["pick"].error == 1.0 and spread["double"].error < 1e-5
    errors = {"pick": Difference(0.5, 0.5), "double": Difference(1e-6, 1e-6),
              "nan": Difference(float("nan"), float("nan"))}
    raised = hold_to_own_spread(errors, {**spread, "nan": Difference(float("nan"), 0.0)}, 1e-4, 1e-6)
    assert raised == ["pick"] and errors["pick"].within(1e-4) and "own spread 1" in errors["pick"].note
    assert errors["double"].tolerance is None and not errors["nan"].within(1e-4)


def test_a_spread_nudge_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="spread_nudge=0.0 must be a positive"):
        DeploySpec(module=nn.Identity(), example_inputs=(torch.zeros(1, 2),), input_names=["x"],
                   output_names=["y"], spread_nudge=0.0)
