"""Export that knows shapes: declared ranges and multiples, random verification inputs inside them, ragged
outputs, comparators, and a task whose batches are dicts (``Task.export_inputs``), on toy models (no kit)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn
from torch.utils.data import Dataset

from oarkit.core import ConfigError, OarkitError
from oarkit.core.deploy import DeployedModel, read_manifest
from oarkit.core.engine.deploy_spec import DeploySpec, Dim, InputSpec
from oarkit.core.engine.metric import Metric
from oarkit.core.engine.task import Task
from oarkit.core.export import ExportSource, MatchedBoxes, Probabilities, RaggedRows, export
from oarkit.core.export.compare import compare_batch
from oarkit.core.export.prepare import dynamic_shapes, random_inputs, traceable_inputs, verification_sizes

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")

SIDE = Dim("height", 32, 256, multiple=32)


# ---------------------------------------------------------------- declarations, without exporting anything
def test_dim_ranges_and_multiples() -> None:
    assert SIDE.admits(32) and SIDE.admits(256) and not SIDE.admits(48) and not SIDE.admits(288)
    assert SIDE.sizes(100) == [32, 64, 96] and Dim("w", 10, 70, multiple=32).sizes(1000) == [32, 64]
    with pytest.raises(ConfigError, match="no multiple of 32"):
        Dim("h", 33, 63, multiple=32)
    with pytest.raises(ConfigError, match="empty"):
        Dim("h", 64, 32)


def test_legacy_dynamic_axes_become_unbounded_dims() -> None:
    spec = DeploySpec(module=nn.Identity(), example_inputs=(torch.randn(1, 3, 8, 8),), input_names=["images"],
                      output_names=["out"], dynamic_axes={"images": {0: "batch"}})
    (images,) = spec.input_specs()
    assert images.dims == [Dim("batch"), 3, 8, 8] and images.dtype == "float32"
    assert spec.output_dynamic_axes() == {"out": {0: "batch"}}
    assert traceable_inputs(spec)[0].shape == (2, 3, 8, 8)  # torch.export would specialise a batch of one


def test_declared_inputs_fill_dynamic_axes_and_check_the_example() -> None:
    spec = DeploySpec(module=nn.Identity(), example_inputs=(torch.randn(1, 3, 32, 96),), input_names=["images"],
                      output_names=["out"], inputs=[InputSpec("images", [Dim("batch", 1, 8), 3, SIDE,
                                                                         Dim("width", 32, 256, multiple=32)])])
    assert spec.dynamic_axes == {"images": {0: "batch", 2: "height", 3: "width"}}
    # a height of 32 is a symbol of value 1 (32 * 1), which torch.export would fix: traced at 64 instead
    assert traceable_inputs(spec)[0].shape == (2, 3, 64, 96)
    shapes = dynamic_shapes(spec, max_batch=4)[0]
    assert str(shapes[2]) == str(32 * torch.export.Dim("height_div32", min=1, max=8))
    assert shapes[0].max == 4  # max_batch bounds the batch axis only
    bad = DeploySpec(module=nn.Identity(), example_inputs=(torch.randn(1, 3, 40, 96),), input_names=["images"],
                     output_names=["out"], inputs=[InputSpec("images", [Dim("batch"), 3, SIDE, 96])])
    with pytest.raises(ConfigError, match="outside height in \\[32, 256\\], a multiple of 32"):
        bad.input_specs()
    with pytest.raises(ConfigError, match="not among input_names"):
        DeploySpec(module=nn.Identity(), example_inputs=(torch.randn(1),), input_names=["x"], output_names=["y"],
                   inputs=[InputSpec("images", [Dim("batch")])])


def test_random_verification_inputs_follow_the_declared_ranges() -> None:
    spec = DeploySpec(module=nn.Identity(), example_inputs=(torch.zeros(2, 40, dtype=torch.long),
                                                            torch.randn(2, 3, 64, 64)),
                      input_names=["ids", "images"], output_names=["out"],
                      inputs=[InputSpec("ids", [Dim("batch", 1, 16), Dim("tokens", 8, 128, multiple=8)],
                                        low=5, high=50),
                              InputSpec("images", [Dim("batch", 1, 16), 3, SIDE, SIDE])])
    traced = traceable_inputs(spec)
    smallest = verification_sizes(spec, traced, seed=0, smallest=True)
    assert smallest == {"batch": 1, "tokens": 8, "height": 32}
    for seed in range(20):
        sizes = verification_sizes(spec, traced, seed=seed)
        assert SIDE.admits(sizes["height"]) and sizes["height"] <= 128 and sizes["height"] != 64
        assert sizes["tokens"] % 8 == 0 and 8 <= sizes["tokens"] <= 80 and 1 <= sizes["batch"] <= 4
        ids, images = random_inputs(spec, sizes, seed=seed)
        assert ids.shape == (sizes["batch"], sizes["tokens"]) and images.shape[0] == sizes["batch"]  # shared batch
        assert ids.dtype == torch.long and int(ids.min()) >= 5 and int(ids.max()) < 50
        assert images.shape[2:] == (sizes["height"], sizes["height"])


def test_comparators_on_ragged_outputs() -> None:
    boxes = torch.tensor([[0.0, 0, 10, 10], [20, 20, 30, 30], [5, 5, 8, 8]])
    scores, image = torch.tensor([0.9, 0.8, 0.3]), torch.tensor([0, 0, 1])
    names = ["boxes", "scores", "image"]
    matched = MatchedBoxes("boxes", scores="scores", batch_index="image")
    # the same detections in another order: equal
    order = torch.tensor([2, 0, 1])
    diffs = compare_batch(names, (boxes, scores, image), (boxes[order], scores[order], image[order]), matched)
    assert all(d.error == 0 for d in diffs.values())
    # one box lost: one of the five boxes unmatched, and the note says so
    diffs = compare_batch(names, (boxes, scores, image), (boxes[:2], scores[:2], image[:2]), matched)
    assert diffs["boxes"].error == pytest.approx(1 / 5) and "2 boxes, eager 3" in diffs["boxes"].note
    # a box of the wrong image does not match
    diffs = compare_batch(names, (boxes, scores, image), (boxes, scores, torch.tensor([0, 1, 1])), matched)
    assert diffs["boxes"].error > 0
    # ragged rows: a different count is an infinite error, equal rows in another order match when ordered
    rows = RaggedRows(["boxes"], order_by=("boxes", 0))
    assert compare_batch(["boxes"], (boxes,), (boxes[:2],), rows)["boxes"].error == float("inf")
    assert compare_batch(["boxes"], (boxes,), (boxes[order],), rows)["boxes"].error == 0
    # the default catches a shape change instead of raising
    assert "shape (2, 4), eager (3, 4)" in compare_batch(["boxes"], (boxes,), (boxes[:2],))["boxes"].note
    prob = torch.tensor([[0.2, 0.49, 0.9]])
    diff = compare_batch(["p"], (prob,), (prob + torch.tensor([[0.0, 0.02, 0.0]]),), Probabilities(["p"]))["p"]
    assert diff.error == pytest.approx(0.02) and "33.3% cross 0.5" in diff.note


# ---------------------------------------------------------------- toy models, exported and verified
class TextureMap(nn.Module):
    """A probability map at the input resolution from two stride-2 convolutions (needs sides divisible by 4)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                                  nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU())
        self.head = nn.Conv2d(8, 1, 1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        features = nn.functional.interpolate(self.down(images), scale_factor=4.0, mode="bilinear")
        return torch.sigmoid(self.head(features))


class MeanError(Metric):
    """The mean absolute error of probability maps against target maps (batches are dicts)."""

    main_indicator = "mae"
    higher_is_better = False

    def reset(self) -> None:
        self.state = {"error": torch.zeros((), dtype=torch.float64), "pixels": torch.zeros((), dtype=torch.long)}

    def update(self, outputs: torch.Tensor, batch: Any) -> None:
        self.state["error"] += (outputs.double() - batch["target"].double()).abs().sum()
        self.state["pixels"] += batch["target"].numel()

    def compute(self) -> dict[str, Any]:
        return {"mae": float(self.state["error"]) / max(1, int(self.state["pixels"]))}


class TextureTask(Task):
    """Dict batches ``{"image", "target", "name"}``: the graph's input is picked by ``export_inputs``."""

    task_id = "toy/texture"

    def setup(self, data: Any) -> nn.Module:
        return TextureMap()

    def training_step(self, model: nn.Module, batch: Any) -> dict[str, torch.Tensor]:
        raise AssertionError("not trained here")

    def validation_step(self, model: nn.Module, batch: Any) -> torch.Tensor:
        return model(batch["image"])

    def build_metric(self) -> Metric:
        return MeanError()

    def collate(self, samples: list[Any]) -> Any:
        return {"image": torch.stack([s["image"] for s in samples]), "target": torch.stack([s["target"] for s in
                                                                                            samples]),
                "name": [s["name"] for s in samples]}

    def export_inputs(self, batch: Any) -> tuple[torch.Tensor, ...]:
        return (batch["image"],)

    def deploy_spec(self, model: nn.Module) -> DeploySpec:
        return DeploySpec(
            module=model, example_inputs=(torch.randn(1, 3, 64, 96),), input_names=["images"],
            output_names=["probability"],
            inputs=[InputSpec("images", [Dim("batch", 1, 8), 3, SIDE, Dim("width", 32, 256, multiple=32)])],
            output_axes={"probability": {0: "batch", 2: "height", 3: "width"}}, compare=Probabilities(["probability"]))


class Textures(Dataset):
    def __init__(self, n: int = 6) -> None:
        g = torch.Generator().manual_seed(3)
        self.images = torch.randn(n, 3, 64, 64, generator=g)
        self.targets = (self.images.mean(1, keepdim=True) > 0).float()

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"image": self.images[i], "target": self.targets[i], "name": f"img{i}"}


def test_dynamic_height_and_width_export_verifies_inside_the_declared_ranges(tmp_path) -> None:
    torch.manual_seed(0)
    task = TextureTask()
    model = task.setup(None).eval()
    source = ExportSource(task=task, model=model, origin="textures", output_dir=tmp_path, meta={},
                          data_root=str(tmp_path), dataset=lambda root, split: Textures())
    report = export(source, "onnx", batch_size=4)
    row = report.row("onnx")
    assert row.status == "pass", report.table()
    assert row.metric_delta == pytest.approx(0.0, abs=1e-6) and report.main_indicator == "mae"
    manifest = read_manifest(tmp_path / "onnx")
    assert manifest.inputs[0].shape == ["batch", 3, "height", "width"]
    assert manifest.inputs[0].ranges["height"] == {"min": 32, "max": 256, "multiple": 32}
    assert manifest.outputs[0].shape == ["batch", 1, "height", "width"]
    deployed = DeployedModel(tmp_path / "onnx")
    for shape in ((1, 3, 32, 256), (3, 3, 160, 96), (2, 3, 256, 32)):  # corners and the middle of the range
        x = torch.randn(shape)
        with torch.no_grad():
            torch.testing.assert_close(deployed(x), model(x), atol=1e-5, rtol=1e-4)
    with pytest.raises(OarkitError, match=r"axis 2 \(height\) is 100, the graph takes \[32, 256\], a multiple of 32"):
        deployed(torch.randn(1, 3, 100, 64))


class PeakBoxes(nn.Module):
    """A ragged "detector": a box around every heat-map cell above 0.5 (a variable number of rows per batch)."""

    def __init__(self) -> None:
        super().__init__()
        self.heat = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 1, 3, stride=4, padding=1))

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        heat = torch.sigmoid(self.heat(images))[:, 0]
        cells = torch.nonzero(heat > 0.5)
        scores = heat[cells[:, 0], cells[:, 1], cells[:, 2]]
        y, x = 4.0 * cells[:, 1].float(), 4.0 * cells[:, 2].float()
        return torch.stack([x, y, x + 6, y + 6], 1), scores, cells[:, 0]


class PeakTask(TextureTask):
    task_id = "toy/peaks"

    def deploy_spec(self, model: nn.Module) -> DeploySpec:
        ragged = {0: "detections"}
        return DeploySpec(module=model, example_inputs=(torch.randn(1, 3, 32, 32),), input_names=["images"],
                          output_names=["boxes", "scores", "image_index"], dynamic_axes={"images": {0: "batch"}},
                          output_axes={"boxes": ragged, "scores": ragged, "image_index": ragged},
                          compare=MatchedBoxes("boxes", scores="scores", batch_index="image_index"))


@pytest.fixture(scope="module")
def peaks(tmp_path_factory):
    torch.manual_seed(1)
    model = PeakBoxes().eval()
    with torch.no_grad():
        model.heat[2].bias.fill_(0.5)  # about half the cells fire on noise
    folder = tmp_path_factory.mktemp("peaks")
    source = ExportSource(task=PeakTask(), model=model, origin="peaks", output_dir=folder, meta={})
    return model, folder, export(source, "onnx")


def test_ragged_output_exports_and_verifies_by_matched_boxes(peaks) -> None:
    model, folder, report = peaks
    row = report.row("onnx")
    assert row.status == "pass", report.table()
    assert set(row.outputs) == {"boxes", "scores", "image_index"} and row.max_rel < 1e-4
    manifest = read_manifest(folder / "onnx")
    assert [o.shape[0] for o in manifest.outputs] == ["detections"] * 3
    deployed = DeployedModel(folder / "onnx")
    counts = set()
    for seed, batch in ((5, 1), (6, 3)):
        x = torch.randn(batch, 3, 32, 32, generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            expected = model(x)
        got = deployed(x)
        counts.add(len(got[0]))
        assert len(got[0]) == len(expected[0]) > 0
        torch.testing.assert_close(got[0], expected[0])
    assert len(counts) == 2  # the row count follows the data


def test_a_perturbed_ragged_artifact_fails_verification(peaks, tmp_path, monkeypatch) -> None:
    """An artifact whose boxes moved by a pixel is caught by the IoU comparator, with its note."""
    import oarkit.core.export.pipeline as pipeline

    model, _, _ = peaks
    real = pipeline.deploy_copy

    def shifted(spec: DeploySpec) -> DeploySpec:
        copy = real(spec)
        inner = copy.module

        class Shift(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, ...]:
                boxes, scores, index = self.inner(images)
                return boxes + 1.0, scores, index

        copy.module = Shift().eval()
        return copy

    monkeypatch.setattr(pipeline, "deploy_copy", shifted)
    report = export(ExportSource(task=PeakTask(), model=model, origin="peaks", output_dir=tmp_path, meta={}), "onnx")
    row = report.row("onnx")
    assert row.status == "fail" and "output 'boxes' differs" in row.message, report.table()
    assert row.outputs["boxes"]["max_abs"] == pytest.approx(1.0) and row.outputs["scores"]["max_rel"] < 1e-4
