"""Every det/ name exports to ONNX through the kit's own path (``export_source`` with random weights, then
:func:`oarkit.core.export.export`) at its card's small test size, and onnxruntime's detections match eager's: box by
box in the report's verification row, and explicitly on one input (counts and best score per image).

Names whose test fails for a measured reason (see :data:`XFAIL`) are strict xfails.
One name runs in ``make test``; the rest are slow (``make test-slow``).
"""

from __future__ import annotations

import dataclasses
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

from oarkit.core import list_models, model_info  # noqa: E402
from oarkit.core.deploy.model import DeployedModel  # noqa: E402
from oarkit.core.export import export  # noqa: E402
from oarkit.det import export_source  # noqa: E402
from oarkit.det.export_graph import DetectionComparator, detect_fixed  # noqa: E402

pytest.importorskip("onnxruntime")

NAMES = list_models("det/*")
#: the quickest name whose kit export no other fast test covers
FAST = {"det/picodet_s_320"}
#: families whose noise goes to their constant-initialised parameters only (zero heads, batch-norm scales): noise on
#: every PP-YOLOE parameter grows through its backbone until every score is 1.0, all tied
CONSTANT_NOISE = ("ppyoloe",)
#: family or name -> why its test fails (measured). The wrapped torchvision detectors export since their eval path
#: has fixed shapes (det/models/torchvision_eval.py); FCOS, SSD300, SSDlite and both MobileNetV3 Faster R-CNNs pass.
#: Noise 0.1 on every parameter of a ResNet-50-FPN makes every box of RetinaNet v1 and of the R-CNNs degenerate:
_DEGENERATE = ("eager keeps [0, 0] detections: with noise 0.1 on every parameter every box of this ResNet-50-FPN "
               "detector has zero area (dropped as torchvision drops boxes under 0.01 px), nothing to compare")
#: and with batch-norm statistics calibrated on a random batch instead (tests/det/test_torchvision_eval.py's
#: setup), onnxruntime matches eager for RetinaNet v1 (boxes 1 - IoU 4.5e-5, scores 6e-6) but the R-CNNs drift past
#: the onnx tolerance (1e-4): the RPN proposals move by ~1e-3 px, which the box head turns into score differences
#: and, where near-equal boxes compete in NMS, into other kept boxes (fasterrcnn_resnet50_fpn, two random setups:
#: boxes 1 - IoU 7e-3 and 0.25, scores 1e-3 and 2.8e-2)
_RCNN = _DEGENERATE + ("; calibrated instead, onnxruntime drifts from eager past the tolerance 1e-4 (boxes 1 - IoU "
                       "7e-3 to 0.25, scores 1e-3 to 2.8e-2 on fasterrcnn_resnet50_fpn)")
XFAIL: dict[str, str] = {
    "det/retinanet_resnet50_fpn": _DEGENERATE,
    "det/retinanet_resnet50_fpn_v2": "output 'boxes' differs by 0.0024 (tolerance 0.0001): the same detections in "
                                     "the same order, scores within 2e-6 of eager, coordinates within 3.4e-3 px "
                                     "(float drift through the ResNet-50-FPN), which its small random boxes turn "
                                     "into 1 - IoU 2.4e-3",
    "det/fasterrcnn_resnet50_fpn": _RCNN, "det/fasterrcnn_resnet50_fpn_v2": _RCNN,
    "det/maskrcnn_resnet50_fpn": _RCNN, "det/maskrcnn_resnet50_fpn_v2": _RCNN,
    # DETRs, measured 2026-12-04 with noise 0.1 and the 1 px box floor; the other nine pass
    **{name: (f"output 'scores' differs by {diff} (tolerance 0.0001): the random {what} drifts that far from eager in "
              "onnxruntime (boxes within the 1e-2 1 - IoU bound)")
       for name, diff, what in (("det/dfine_m", "0.00168", "D-FINE-M's distribution refinement"),
                                ("det/dfine_s", "0.000392", "D-FINE-S's distribution refinement"),
                                ("det/rtdetrv2_r50vd", "0.000277", "RT-DETRv2-R50's decoder"))},
    **{name: ("eager keeps [0, 0] detections on the explicit check's input: noise 0.1 on every parameter of this "
              "deeper DETR leaves every score under the NMS threshold (the verification row passes)")
       for name in ("det/dfine_x", "det/rtdetr_r101vd", "det/rtdetrv2_r101vd")},
}


def _param(name: str) -> pytest.param:
    marks = [] if name in FAST else [pytest.mark.slow]
    reason = XFAIL.get(name) or XFAIL.get(model_info(name).family)
    if reason:
        marks.append(pytest.mark.xfail(strict=True, reason=reason))
    return pytest.param(name, marks=marks)


def _sorted_scores(scores: torch.Tensor, num: torch.Tensor) -> list[torch.Tensor]:
    """Each image's kept scores in descending order."""
    return [scores[i, : int(n)].sort(descending=True).values for i, n in enumerate(num.tolist())]


@pytest.mark.parametrize("name", [_param(n) for n in NAMES])
def test_every_name_exports_to_onnx_like_eager(name: str, tmp_path):
    torch.manual_seed(0)
    source = export_source(name, pretrained=False)
    # Random initialisations tie: PaddleDetection's zero-weight heads score every box alike (or below the NMS
    # threshold), and a DETR's encoder scores tie, so that which queries its top-k keeps depends on the kernel (torch
    # and onnxruntime pick different ones). Noise on every parameter spreads scores and boxes. (Noise scaled by each
    # tensor's own spread instead left the RT-DETRs with near-identical boxes, 18-42% of which NMS kept on one side
    # only: measured on r18vd, r34vd, hgnetv2_l.)
    detr = "transformers" in model_info(name).tags
    with torch.no_grad():
        for p in source.model.parameters():
            if model_info(name).family not in CONSTANT_NOISE or (p.numel() > 1 and bool((p == p.flatten()[0]).all())):
                p.add_(torch.randn_like(p), alpha=0.1)
    if detr:
        # A random DETR's boxes are 1-2 pixels wide, where float32 rounding (up to 7e-3 px after its transformer
        # layers: RT-DETR-R34) moves the IoU by up to 4e-3: boxes are held to 1 - IoU <= 1e-2 (scores keep 1e-4).
        deploy_spec = source.task.deploy_spec
        compare = DetectionComparator(source.task.nms.score_threshold, tolerances={"boxes": 1e-2})
        source.task.deploy_spec = lambda model: dataclasses.replace(deploy_spec(model), compare=compare)
    # the card's test size instead of the evaluation size (640-800): the deploy spec traces at the task's size
    size = list(model_info(name).test_input_size[-2:])
    source.task.preprocessing = {**source.task.preprocessing, "size": size}
    report = export(source, "onnx", output_dir=tmp_path)
    row = report.rows[0]
    print(f"{name}: {row.status}, outputs {row.outputs}, export {row.export_s} s")
    assert row.status == "pass", row.message
    # and explicitly on one input: as many detections per image, with the same best score
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
    assert error < 1e-4
