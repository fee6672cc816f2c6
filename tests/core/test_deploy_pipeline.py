"""Deploy pipelines: two exported models and registered glue between them (a toy det -> crop -> classify, as OCR
runs det -> crop -> cls -> rec), loaded from pipeline.yaml and checked against the same glue on eager modules."""

from __future__ import annotations

import shutil

import pytest
import torch
import yaml
from torch import nn

from oarkit.core import ConfigError, OarkitError, UnknownNameError
from oarkit.core.deploy import (
    PIPELINE_FILE,
    DeployedModel,
    DeployedPipeline,
    Stage,
    StageSpec,
    read_pipeline,
    register_glue,
    write_pipeline,
)
from oarkit.core.engine.deploy_spec import DeploySpec
from oarkit.core.export import ExportSource, export

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")

GLUE = "tests/crop_then_classify"


@register_glue(GLUE, stages=("detector", "classifier"))
def crop_then_classify(stages, images: torch.Tensor, *, crop: int = 16) -> dict[str, torch.Tensor]:
    """The detector's heat map gives each image's hottest cell; a ``crop`` square around it is classified."""
    heat = stages["detector"].model(images)
    stride = int(stages["detector"].parameters.get("stride", 1))
    n, _, _, width = heat.shape
    cell = heat.reshape(n, -1).argmax(1)
    cy, cx = (cell // width) * stride + stride // 2, (cell % width) * stride + stride // 2
    top = (cy - crop // 2).clamp(0, images.shape[2] - crop)
    left = (cx - crop // 2).clamp(0, images.shape[3] - crop)
    crops = torch.stack([images[i, :, t:t + crop, s:s + crop] for i, (t, s) in enumerate(zip(top.tolist(),
                                                                                          left.tolist()))])
    logits = stages["classifier"].model(crops)
    return {"boxes": torch.stack([left, top, left + crop, top + crop], 1), "logits": logits,
            "class_ids": logits.argmax(1)}


def _detector() -> nn.Module:
    """Mean brightness of each 4x4 cell: the heat map's hottest cell holds the bright square."""
    conv = nn.Conv2d(3, 1, 4, stride=4)
    with torch.no_grad():
        conv.weight.fill_(1 / 48)
        conv.bias.zero_()
    return conv.eval()


def _classifier() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(8, 3)).eval()


def _images(n: int, seed: int) -> torch.Tensor:
    """Dim noise with a bright 8x8 square, of a random colour, somewhere in each 32x32 image."""
    g = torch.Generator().manual_seed(seed)
    images = 0.1 * torch.randn(n, 3, 32, 32, generator=g)
    for i in range(n):
        y, x = torch.randint(0, 25, (2,), generator=g).tolist()
        images[i, :, y:y + 8, x:x + 8] += 1 + torch.rand(3, 1, 1, generator=g)
    return images


@pytest.fixture(scope="module")
def pipeline_dir(tmp_path_factory):
    """Both models exported to ONNX (verified), and the pipeline.yaml that joins them."""
    from oarkit.core.engine.task import Task

    class StageTask(Task):
        task_id = "toy/stage"

        def __init__(self, example: torch.Tensor, output: str, labels: list[str]) -> None:
            self.example, self.output, self.labels = example, output, labels

        def setup(self, data):  # pragma: no cover - export only
            raise AssertionError

        def training_step(self, model, batch):  # pragma: no cover - export only
            raise AssertionError

        def validation_step(self, model, batch):  # pragma: no cover - export only
            raise AssertionError

        def build_metric(self):  # pragma: no cover - export only
            raise AssertionError

        def deploy_spec(self, model: nn.Module) -> DeploySpec:
            return DeploySpec(module=model, example_inputs=(self.example,), input_names=["images"],
                              output_names=[self.output], dynamic_axes={"images": {0: "batch"}}, labels=self.labels)

    folder = tmp_path_factory.mktemp("pipeline")
    models = {"detector": _detector(), "classifier": _classifier()}
    tasks = {"detector": StageTask(torch.randn(1, 3, 32, 32), "heat", []),
             "classifier": StageTask(torch.randn(1, 3, 16, 16), "logits", ["red", "green", "blue"])}
    for name, model in models.items():
        source = ExportSource(task=tasks[name], model=model, origin=name, output_dir=folder / name, meta={})
        report = export(source, "onnx")
        assert report.ok, report.table()
    write_pipeline(folder, glue=GLUE, task="toy/crop_classify", parameters={"crop": 16},
                   stages={"detector": StageSpec("detector/onnx", {"stride": 4}), "classifier": "classifier/onnx"})
    return folder, models


def test_deployed_pipeline_gives_the_eager_pipelines_result(pipeline_dir) -> None:
    folder, models = pipeline_dir
    manifest = read_pipeline(folder)
    assert manifest.glue == GLUE and list(manifest.stages) == ["detector", "classifier"]
    assert manifest.stages["detector"].parameters == {"stride": 4} and manifest.parameters == {"crop": 16}
    deployed = DeployedPipeline.load(folder)
    assert isinstance(deployed.stages["classifier"].model, DeployedModel)
    assert deployed.stages["classifier"].manifest.labels == ["red", "green", "blue"]
    eager = DeployedPipeline(GLUE, {"detector": Stage("detector", models["detector"], {"stride": 4}),
                                    "classifier": models["classifier"]}, {"crop": 16})
    images = _images(6, seed=1)
    with torch.no_grad():
        expected, got = eager(images), deployed(images)
    assert torch.equal(got["boxes"], expected["boxes"]) and torch.equal(got["class_ids"], expected["class_ids"])
    torch.testing.assert_close(got["logits"], expected["logits"], atol=1e-5, rtol=1e-4)
    # the crops found the bright squares (the detector is doing its job, not two models agreeing on noise)
    boxes = got["boxes"]
    assert all(float(images[i, :, b[1]:b[3], b[0]:b[2]].mean()) > 0.25 for i, b in enumerate(boxes.tolist()))
    # eager modules in place of some stages keep the folder's manifests and parameters
    mixed = DeployedPipeline.load(folder, models={"detector": models["detector"]})
    with torch.no_grad():
        assert torch.equal(mixed(images)["boxes"], expected["boxes"])


def test_pipeline_errors_name_the_stage_the_glue_and_the_fix(pipeline_dir, tmp_path) -> None:
    folder, _ = pipeline_dir
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    raw = yaml.safe_load((copy / PIPELINE_FILE).read_text())

    def load_with(**changes):
        (copy / PIPELINE_FILE).write_text(yaml.safe_dump({**raw, **changes}))
        return DeployedPipeline.load(copy)

    with pytest.raises(UnknownNameError, match=f"unknown glue 'tests/crop_then_clasify'.*{GLUE}"):
        load_with(glue="tests/crop_then_clasify")
    with pytest.raises(ConfigError, match="no parameter 'crops'.*crop"):
        load_with(parameters={"crops": 16})
    with pytest.raises(ConfigError, match=r"missing \['classifier'\]"):
        load_with(stages={"detector": raw["stages"]["detector"]})
    with pytest.raises(ConfigError, match="must be a sub-folder"):
        load_with(stages={**raw["stages"], "classifier": {"model": "../elsewhere"}})
    with pytest.raises(ConfigError, match="import path|unknown keys"):
        load_with(glue_module="os.system")  # a pipeline file cannot name code to import
    shutil.rmtree(copy / "classifier")
    with pytest.raises(OarkitError, match="stage 'classifier' names the folder 'classifier/onnx', which is missing"):
        load_with()
    with pytest.raises(OarkitError, match="not a pipeline folder"):
        DeployedPipeline.load(tmp_path)
    with pytest.raises(ConfigError, match="already registered"):
        register_glue(GLUE, stages=("detector", "classifier"))(lambda stages, inputs: inputs)
