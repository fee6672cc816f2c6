"""Every registered detector builds, trains one step (forward and backward) and keeps the eval contract; the
native ports fold, switch assigners by epoch and learn."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from oarkit.core import DataError, create_model, list_models, model_info  # noqa: E402
from oarkit.core.backbones.cspresnet import RepVggBlock  # noqa: E402
from oarkit.core.registry import DetectorInput  # noqa: E402
from oarkit.det.assigners import AssignerEpochCallback, ATSSAssigner, TaskAlignedAssigner  # noqa: E402
from oarkit.det.models import LABEL_SETS  # noqa: E402
from oarkit.det.models.base import pad_targets  # noqa: E402

NAMES = list_models("det/*")
NUM_CLASSES = 5
#: the fast sample: the quickest member of each family whose steps take under ~3 s on two cores; the rest is slow
FAST = {"det/ppyoloe_plus_crn_s", "det/picodet_s_320", "det/picodet_lcnet_x1_0_layout",
        "det/fasterrcnn_mobilenet_v3_large_320_fpn", "det/retinanet_resnet50_fpn", "det/fcos_resnet50_fpn",
        "det/ssdlite320_mobilenet_v3_large"}
PARAMS = [pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in NAMES]
NATIVE = ("ppyoloe", "picodet")  # ported here: every trainable parameter must get a gradient (DDP needs it)


def _targets(size: int) -> list[dict[str, torch.Tensor]]:
    s = float(size)
    return [{"boxes": torch.tensor([[0.1 * s, 0.1 * s, 0.6 * s, 0.7 * s], [0.5 * s, 0.4 * s, 0.9 * s, 0.95 * s]]),
             "labels": torch.tensor([1, NUM_CLASSES - 1])},
            {"boxes": torch.zeros(0, 4), "labels": torch.zeros(0, dtype=torch.long)}]  # an image without objects


def test_at_least_thirty_names_with_complete_cards():
    assert len(NAMES) >= 30
    for name in NAMES:
        card = model_info(name)
        assert card.task == "det" and isinstance(card.input_spec, DetectorInput), name
        assert card.input_spec.stride_multiple >= 1 and min(card.input_spec.size) >= 224, name
        assert len(LABEL_SETS[card.label_names]) == card.num_classes, name
        assert card.weights is not None and card.weights.location and card.weights.license, name
        assert card.metrics and card.metrics_source and card.paper, name
        if card.weights.format == "pdparams":  # a PaddleDetection release: converted on load, so a mapping exists
            assert card.paddle_mapping is not None, f"{name} points at a .pdparams that nothing converts"


@pytest.mark.parametrize("name", PARAMS)
def test_train_step_and_eval_contract(name: str):
    card = model_info(name)
    torch.manual_seed(0)
    model = create_model(name, num_classes=NUM_CLASSES).train()
    size = card.test_input_size[-1]
    x = torch.rand(2, *card.test_input_size)
    losses = model(x, _targets(size))
    assert "loss" in losses and all(v.ndim == 0 for v in losses.values())
    assert torch.isfinite(losses["loss"])
    losses["loss"].backward()
    if card.family in NATIVE:
        missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
        assert not missing, f"parameters without a gradient: {missing[:5]}"
    model.eval()
    with torch.no_grad():
        raw = model(x)
        boxes, scores = model.decode(raw)
    assert boxes.shape[0] == scores.shape[0] == 2 and boxes.shape[-1] == 4
    assert scores.shape[1] == boxes.shape[1] and scores.shape[-1] == NUM_CLASSES
    assert float(scores.min()) >= 0.0 and float(scores.max()) <= 1.0
    assert not getattr(model, "nms_inside", False)  # every model leaves NMS to the kit


def test_targets_are_checked():
    model = create_model("det/picodet_s_320", num_classes=NUM_CLASSES).train()
    with pytest.raises(DataError, match="model.eval"):
        model(torch.rand(1, 3, 64, 64))
    with pytest.raises(DataError, match="one dict per image"):
        model(torch.rand(2, 3, 64, 64), _targets(64)[:1])
    with pytest.raises(DataError, match="boxes"):
        model(torch.rand(1, 3, 64, 64), [{"labels": torch.zeros(1, dtype=torch.long)}])


def test_ppyoloe_eval_outputs_in_paddles_layout():
    model = create_model("det/ppyoloe_plus_crn_s", num_classes=NUM_CLASSES).eval()
    with torch.no_grad():
        scores, dists, points, strides = model(torch.rand(1, 3, 96, 64))
    n = 3 * 2 + 6 * 4 + 12 * 8  # strides 32, 16, 8: deepest level first, as Paddle's head
    assert scores.shape == (1, NUM_CLASSES, n) and dists.shape == (1, n, 4)
    assert points.shape == (n, 2) and strides.shape == (n, 1)
    assert strides[0].item() == 32 and strides[-1].item() == 8 and points[0].tolist() == [0.5, 0.5]
    boxes, _ = model.decode((scores, dists, points, strides))
    torch.testing.assert_close(boxes[0, -1], (torch.cat([points[-1] - dists[0, -1, :2], points[-1] + dists[0, -1, 2:]])
                                              * 8))


def test_repvgg_blocks_fold_with_equal_outputs():
    torch.manual_seed(0)
    model = create_model("det/ppyoloe_plus_crn_s", num_classes=NUM_CLASSES).eval()
    with torch.no_grad():  # random statistics and heads, so the outputs depend on every branch
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
            if isinstance(m, RepVggBlock):
                m.alpha.fill_(0.7)
        for conv in [*model.yolo_head.pred_cls, *model.yolo_head.pred_reg]:
            conv.weight.normal_(0, 0.01)
        x = torch.rand(2, 3, 64, 64)
        before = model(x)
        model.reparameterize()
        after = model(x)
    assert all(m.conv is not None and not hasattr(m, "conv1") for m in model.modules() if isinstance(m, RepVggBlock))
    for a, b in zip(before[:2], after[:2]):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("name", ["det/ppyoloe_plus_crn_s", "det/picodet_s_320"])
def test_assigner_switches_at_static_assigner_epoch(name: str, monkeypatch: pytest.MonkeyPatch):
    model = create_model(name, num_classes=NUM_CLASSES, static_assigner_epoch=1).train()
    calls: list[str] = []
    for cls in (ATSSAssigner, TaskAlignedAssigner):
        original = cls.forward
        monkeypatch.setattr(cls, "forward", lambda self, *a, _o=original, _c=cls, **k: (calls.append(_c.__name__),
                                                                                       _o(self, *a, **k))[1])

    class Trainer:  # what the callback reads of the trainer
        ema = None

    trainer = Trainer()
    trainer.model = model
    x = torch.rand(2, 3, 64, 64)
    for epoch in (0, 1):
        AssignerEpochCallback().on_train_epoch_start(trainer, epoch)
        model(x, _targets(64))
    assert calls == ["ATSSAssigner", "TaskAlignedAssigner"]


def test_task_aligned_assigner_picks_anchors_inside_the_box():
    points = torch.tensor([[4.0, 4.0], [12.0, 4.0], [4.0, 12.0], [12.0, 12.0]])
    gt_labels, gt_boxes, mask = pad_targets([{"boxes": torch.tensor([[0.0, 0.0, 10.0, 10.0]]),
                                              "labels": torch.tensor([2])}], torch.device("cpu"))
    pred_boxes = torch.tensor([[[0.0, 0.0, 9.0, 9.0], [8.0, 0.0, 16.0, 8.0], [0.0, 8.0, 8.0, 16.0],
                                [8.0, 8.0, 16.0, 16.0]]])
    scores = torch.full((1, 4, 3), 0.5)
    labels, boxes, assigned, positive = TaskAlignedAssigner(topk=2)(scores, pred_boxes, points, gt_labels, gt_boxes,
                                                                    mask, bg_index=3)
    assert labels.tolist() == [[2, 3, 3, 3]]  # only the first anchor point lies inside the box
    torch.testing.assert_close(boxes[0, 0], gt_boxes[0, 0])
    assert assigned[0, 0, 2] > 0 and assigned[0, 1:].abs().sum() == 0 and assigned[0, 0, :2].abs().sum() == 0


def test_picodet_learns_one_image():
    torch.manual_seed(0)
    model = create_model("det/picodet_s_320", num_classes=NUM_CLASSES, static_assigner_epoch=0).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    x, targets = torch.rand(1, 3, 64, 64).expand(2, -1, -1, -1), _targets(64)[:1] * 2
    first = None
    for _ in range(12):
        loss = model(x, targets)["loss"]
        first = float(loss.detach()) if first is None else first
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert float(loss.detach()) < 0.7 * first


@pytest.mark.slow
@pytest.mark.parametrize("name", ["det/ppyoloe_plus_crn_s", "det/picodet_s_320"])
def test_native_ports_export_to_onnx_with_decode(name: str, tmp_path):
    ort = pytest.importorskip("onnxruntime")

    class Graph(torch.nn.Module):  # forward + decode, what the kit's export wraps with NMS
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return self.model.decode(self.model(x))

    model = create_model(name).eval()
    if hasattr(model, "reparameterize"):
        model.reparameterize()
    x = torch.rand(1, 3, 128, 96)
    path = tmp_path / "model.onnx"
    torch.onnx.export(Graph(model), (x,), str(path), dynamo=True, external_data=False)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    outputs = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    with torch.no_grad():
        expected = Graph(model)(x)
    for ours, eager in zip(outputs, expected):
        np.testing.assert_allclose(ours, eager.numpy(), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in NAMES])
def test_another_class_count_changes_only_the_cards_head(name: str):
    # pretrained=True with another num_classes keeps everything but the card's classifier modules
    card = model_info(name)
    ours = create_model(name, num_classes=NUM_CLASSES).state_dict()
    released = create_model(name).state_dict()
    changed = [k for k, v in ours.items() if released[k].shape != v.shape]
    assert changed
    assert all(any(k == h or k.startswith(h + ".") for h in card.classifier) for k in changed), changed
