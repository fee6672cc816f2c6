"""Every det/ name exports to ONNX through the kit's own path (``export_source`` with random weights, then
:func:`oarkit.core.export.export`) at its card's small test size, and onnxruntime's detections match eager's: box by
box in the report's verification row, and explicitly on one input (counts and best score per image).

The random weights are calibrated or perturbed so that detections spread (see :func:`_randomise`). The few random
models whose own detections move more under a rounding-sized input change than the format's tolerance (RetinaNet
v2's boxes, the D-FINEs' scores) are held to that spread, as every det export is (the task's ``SPREAD_NUDGE``).
One name runs in ``make test``; the rest are slow (``make test-slow``).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

from oarkit.core import list_models, model_info  # noqa: E402
from oarkit.core.deploy.model import DeployedModel  # noqa: E402
from oarkit.core.export import export  # noqa: E402
from oarkit.det import export_source  # noqa: E402
from oarkit.det.export_graph import detect_fixed  # noqa: E402

pytest.importorskip("onnxruntime")

NAMES = list_models("det/*")
#: the quickest name whose kit export no other fast test covers
FAST = {"det/picodet_s_320"}
#: families whose random weights get noise on their constant-initialised parameters only (zero heads, batch-norm
#: scales): PaddleDetection's zero-weight heads score every box alike, and noise on every PP-YOLOE parameter grows
#: through its backbone until every score is 1.0, all tied
CONSTANT_NOISE = ("ppyoloe",)
#: families and names calibrated instead (conftest's ``calibrate``: norm statistics from a random batch, torchvision
#: class layers scaled): noise on every parameter of a ResNet-50-FPN makes every box of RetinaNet and of the R-CNNs
#: degenerate, and leaves the deeper DETRs (D-FINE-X, the R101s) with every score under the threshold or their scores
#: drifting 3e-4 to 2e-3. FCOS, SSD and the MobileNetV3 Faster R-CNNs keep the noise, which spreads their
#: detections (calibrated at their 64 px test size, the MobileNetV3 R-CNNs keep one box scoring 1.0)
CALIBRATED = {"retinanet", "mask_rcnn", "det/fasterrcnn_resnet50_fpn", "det/fasterrcnn_resnet50_fpn_v2", "rtdetr",
              "rtdetr_v2", "d_fine"}
def _param(name: str) -> pytest.param:
    return pytest.param(name, marks=[] if name in FAST else [pytest.mark.slow])


def _sorted_scores(scores: torch.Tensor, num: torch.Tensor) -> list[torch.Tensor]:
    """Each image's kept scores in descending order."""
    return [scores[i, : int(n)].sort(descending=True).values for i, n in enumerate(num.tolist())]


def _randomise(name: str, model: torch.nn.Module, size: list[int], calibrate) -> None:
    """Random weights whose detections spread (random initialisations tie: PaddleDetection's zero-weight heads
    score every box alike, a DETR's encoder scores tie, so that which queries its top-k keeps depends on the
    kernel, and a random ResNet-50-FPN's boxes degenerate)."""
    family = model_info(name).family
    if name in CALIBRATED or family in CALIBRATED:
        calibrate(model, torch.rand(2, 3, *size, generator=torch.Generator().manual_seed(7)))
        return
    with torch.no_grad():
        for p in model.parameters():
            if family not in CONSTANT_NOISE or (p.numel() > 1 and bool((p == p.flatten()[0]).all())):
                p.add_(torch.randn_like(p), alpha=0.1)


@pytest.mark.parametrize("name", [_param(n) for n in NAMES])
def test_every_name_exports_to_onnx_like_eager(name: str, tmp_path, calibrated):
    torch.manual_seed(0)
    source = export_source(name, pretrained=False)
    size = list(model_info(name).test_input_size[-2:])
    _randomise(name, source.model.eval(), size, calibrated)
    # the card's test size instead of the evaluation size (640-800): the deploy spec traces at the task's size
    source.task.preprocessing = {**source.task.preprocessing, "size": size}
    report = export(source, "onnx", output_dir=tmp_path)
    row = report.rows[0]
    print(f"{name}: {row.status}, outputs {row.outputs}, export {row.export_s} s")
    assert row.status == "pass", row.message
    # and explicitly on one input: detections judged, as many per image, the same best score
    x = torch.rand(2, 3, *size, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        eager = detect_fixed(source.model.eval(), x, source.task.nms)
    ours = DeployedModel(tmp_path / "onnx")(x)
    assert int(eager[3].min()) > 0, f"eager keeps {eager[3].tolist()} detections: nothing to compare"
    spread = min(float(s[0] - s[-1]) for s in _sorted_scores(eager[1], eager[3]))
    assert spread > 1e-3, f"eager's kept scores span {spread:.1e}: tied within the comparator's margin, none judged"
    # a box scoring at the NMS threshold may be kept by one side only: counts within one, scores compared in order
    assert (ours[3] - eager[3]).abs().max() <= 1, f"onnxruntime keeps {ours[3].tolist()}, eager {eager[3].tolist()}"
    # the best score of each image (no NMS suppresses it; which of many near-tied boxes the rest keeps may differ)
    error = max(float((a[0] - b[0]).abs()) for a, b in zip(_sorted_scores(ours[1], ours[3]),
                                                            _sorted_scores(eager[1], eager[3])))
    print(f"{name}: detections {eager[3].tolist()}, best score max abs error {error:.2e}")
    assert error < row.outputs["scores"].get("tolerance", 1e-4)
