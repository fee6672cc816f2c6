"""The wrapped torchvision detectors' export-friendly eval path (:mod:`oarkit.det.models.torchvision_eval`) gives the
detections of torchvision's own post-processing on the same module and input.

The kit's NMS (:func:`~oarkit.det.postprocess.multiclass_nms`) run with torchvision's own settings
(``torchvision_nms()``: score threshold, IoU threshold, detections per image) differs from torchvision's
post-processing only in which candidates it sees and keeps, so the two are compared on the detections that both
must keep:

- the kit's candidates are the 1000 best (box, class) pairs of each image; torchvision's are every pair above its
  score threshold (R-CNN), the ``topk_candidates`` best of each level above it (RetinaNet, FCOS) or of each class
  (SSD). NMS visits boxes by descending score, so both keep the same boxes above the score of the last candidate
  either side cuts off: the test judges detections above the highest of those cuts;
- torchvision keeps ``detections_per_img`` rows, among them zero-area boxes outside the image (one-stage heads),
  which the kit drops: a side that filled its rows is judged down to its last score only;
- the kit drops boxes under 0.01 pixels on a side (:data:`~oarkit.det.models.torchvision_eval.MIN_BOX_SIZE`), and
  torchvision's sigmoid heads (RetinaNet, FCOS) may return its background class, which the setup switches off as
  training does.

Above those cuts each detection must have a partner on the other side: the same class, IoU >= 0.99, scores within
1e-5; pairs whose score another candidate of their class matches within 1e-5 are left out (NMS may keep either).
The R-CNN proposal sets are compared with torchvision's RPN directly. The random models get batch-norm statistics
calibrated on a random batch and wider class (and RPN objectness) weights, so that their scores spread: a random
backbone with torchvision's unit statistics gives features that hardly depend on the input, and every proposal
scores alike.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
from torchvision.models.detection.image_list import ImageList  # noqa: E402
from torchvision.ops import box_iou  # noqa: E402

from oarkit.core import create_model, list_models, model_info  # noqa: E402
from oarkit.det.models.torchvision_eval import MIN_BOX_SIZE, TWO_STAGE, prepare_images, rpn_proposals  # noqa: E402
from oarkit.det.postprocess import MAX_PRE_NMS, NMSConfig, multiclass_nms, split_detections  # noqa: E402

NAMES = [n for n in list_models("det/*") if n.split("/")[1].startswith(("fasterrcnn", "maskrcnn", "retinanet",
                                                                         "fcos", "ssd"))]
#: the quickest member of each family; the rest is slow (over ~3 s a model on two cores)
FAST = {"det/fasterrcnn_mobilenet_v3_large_320_fpn", "det/retinanet_resnet50_fpn", "det/fcos_resnet50_fpn",
        "det/ssdlite320_mobilenet_v3_large"}
NUM_CLASSES = 5
#: the input side (SSD300's VGG needs its card's 300: smaller inputs leave its last layers without pixels)
SIZE = 128
#: judged detections must match: IoU, score difference; scores within SCORE_TOL of a cut may sit on one side only
MIN_IOU, SCORE_TOL = 0.99, 1e-5
#: at least this many judged detections per image, so that the comparison is not empty
MIN_JUDGED = 10


def _size(name: str) -> int:
    return max(SIZE, model_info(name).test_input_size[-1])


def _model(name: str, calibrate) -> torch.nn.Module:
    """A seeded random model whose scores spread (conftest's ``calibrate``)."""
    torch.manual_seed(0)
    model = create_model(name, num_classes=NUM_CLASSES)
    return calibrate(model, torch.rand(2, 3, _size(name), _size(name), generator=torch.Generator().manual_seed(7)))


def _partnerless(ours: dict[str, torch.Tensor], theirs: dict[str, torch.Tensor], cut: float) -> list[str]:
    """Detections of ``ours`` scoring above ``cut + SCORE_TOL`` without a partner in ``theirs`` (above ``cut -
    SCORE_TOL``): the same label, IoU >= MIN_IOU, scores within SCORE_TOL; each partner used once."""
    pool = theirs["scores"] > cut - SCORE_TOL
    boxes, scores, labels = theirs["boxes"][pool], theirs["scores"][pool], theirs["labels"][pool]
    iou = box_iou(ours["boxes"], boxes) if len(boxes) else torch.zeros(len(ours["boxes"]), 0)
    taken: set[int] = set()
    missing = []
    for i in torch.nonzero(ours["scores"] > cut + SCORE_TOL).flatten().tolist():
        ok = (labels == ours["labels"][i]) & (iou[i] >= MIN_IOU) & ((scores - ours["scores"][i]).abs() <= SCORE_TOL)
        free = [j for j in torch.nonzero(ok).flatten().tolist() if j not in taken]
        if free:
            taken.add(free[0])
        else:
            missing.append(f"label {int(ours['labels'][i])} score {float(ours['scores'][i]):.6f} box "
                           f"{[round(v, 2) for v in ours['boxes'][i].tolist()]}")
    return missing


def _candidate_cut(model: torch.nn.Module, scores: torch.Tensor, levels: list[int], threshold: float) -> float:
    """The score above which torchvision's candidates of one image hold every pair above ``threshold`` (scores
    [N, C] of the kit's classes, ``levels`` the anchors of each level): the ``topk_candidates``-th best pair of a
    level (RetinaNet, FCOS) or of a class (SSD) that has more (0 for the R-CNNs, whose candidates are not capped)."""
    if model.family in TWO_STAGE:
        return 0.0
    k = model.model.topk_candidates
    groups = scores.T if model.family == "ssd" else [s.flatten() for s in scores.split(levels)]
    return max([float(g[g > threshold].topk(k).values[-1]) for g in groups if int((g > threshold).sum()) > k],
               default=0.0)


def _ties(scores: torch.Tensor, det: dict[str, torch.Tensor]) -> torch.Tensor:
    """Detections whose score another candidate of their class (scores [N, C]) matches within SCORE_TOL: NMS may
    keep either (R-CNN proposals that RoIAlign pools alike score alike and decode to different boxes)."""
    column = scores[:, det["labels"]].T  # [D, N]
    return ((column - det["scores"][:, None]).abs() <= SCORE_TOL).sum(dim=1) > 1


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in FAST else pytest.mark.slow) for n in NAMES])
def test_eval_path_gives_torchvisions_detections(name: str, calibrated):
    model = _model(name, calibrated)
    tv = model.model
    x = torch.rand(2, 3, _size(name), _size(name), generator=torch.Generator().manual_seed(1))
    settings = model.torchvision_nms()
    threshold = settings["score_threshold"]
    with torch.no_grad():
        boxes, scores = model.decode(model(x))
        ours = split_detections(*multiclass_nms(boxes, scores, NMSConfig(**settings)))
        features = list(tv.backbone(prepare_images(tv, x)[0]).values())
    reference = model.torchvision_detections(x)
    per_location = tv.anchor_generator.num_anchors_per_location()[0] if model.family not in TWO_STAGE else 1
    levels = [per_location * f.shape[-2] * f.shape[-1] for f in features]
    for i, (mine, theirs) in enumerate(zip(ours, reference)):
        assert bool((theirs["labels"] >= 0).all()), "torchvision kept its background class: the setup lets it score"
        wh = theirs["boxes"][:, 2:] - theirs["boxes"][:, :2]
        kept = {k: v[(wh >= MIN_BOX_SIZE).all(dim=1)] for k, v in theirs.items()}
        cut = max(threshold, _candidate_cut(model, scores[i], levels, threshold))
        flat = scores[i].flatten()
        if len(flat) > MAX_PRE_NMS:  # the kit's candidates: the best MAX_PRE_NMS pairs
            cut = max(cut, float(flat.topk(MAX_PRE_NMS).values[-1]))
        for side in (mine, theirs):  # a side that filled its rows is judged down to its last score
            if len(side["scores"]) == settings["max_detections"]:
                cut = max(cut, float(side["scores"].min()))
        mine = {k: v[~_ties(scores[i], mine)] for k, v in mine.items()}
        kept = {k: v[~_ties(scores[i], kept)] for k, v in kept.items()}
        judged = int((kept["scores"] > cut + SCORE_TOL).sum())
        print(f"{name} image {i}: {len(ours[i]['scores'])} detections, torchvision {len(theirs['scores'])}, "
              f"{judged} judged above {cut:.4f} ({len(ours[i]['scores']) - len(mine['scores'])} tied)")
        assert judged >= MIN_JUDGED, f"only {judged} detections above the cuts: nothing much is compared"
        unmatched = _partnerless(mine, kept, cut)
        assert not unmatched, f"the kit's detections without a torchvision partner: {unmatched}"
        unmatched = _partnerless(kept, mine, cut)
        assert not unmatched, f"torchvision's detections without a partner: {unmatched}"


@pytest.mark.parametrize("name", ["det/fasterrcnn_mobilenet_v3_large_320_fpn",
                                  pytest.param("det/maskrcnn_resnet50_fpn", marks=pytest.mark.slow)])
def test_rpn_proposals_are_torchvisions(name: str, calibrated):
    model = _model(name, calibrated)
    tv = model.model
    x = torch.rand(2, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        images, size = prepare_images(tv, x)
        features = tv.backbone(images)
        ours, valid = rpn_proposals(tv.rpn, images, list(features.values()), size)
        theirs, _ = tv.rpn(ImageList(images, [size] * len(x)), features)
    for i, reference in enumerate(theirs):
        kept = ours[i][valid[i]]
        assert len(kept) == len(reference) > 0
        assert bool((box_iou(kept, reference).max(dim=1).values >= 1 - 1e-6).all())


def test_eval_outputs_have_fixed_shapes():
    """The raw outputs' shapes depend on the input size only (what a dynamic-batch export needs)."""
    model = create_model("det/fasterrcnn_mobilenet_v3_large_320_fpn", num_classes=NUM_CLASSES).eval()
    shapes = set()
    with torch.no_grad():
        for x in (torch.rand(3, 3, 64, 96), torch.zeros(3, 3, 64, 96), torch.rand(1, 3, 64, 96)):
            boxes, scores = model(x)
            decoded_boxes, decoded_scores = model.decode((boxes, scores))
            shapes.add((tuple(boxes.shape[1:]), tuple(scores.shape[1:]), tuple(decoded_scores.shape[1:])))
            assert boxes.shape[0] == scores.shape[0] == decoded_boxes.shape[0] == len(x)
            # one non-zero class per candidate row: the pair's own
            assert int((decoded_scores > 0).sum(-1).max()) <= 1
    assert len(shapes) == 1, shapes
    (box_shape, score_shape, decoded_shape), = shapes
    assert box_shape[1:] == (NUM_CLASSES, 4) and score_shape == box_shape[:2]
    assert decoded_shape == (min(MAX_PRE_NMS, box_shape[0] * NUM_CLASSES), NUM_CLASSES)
    assert not getattr(model, "nms_inside", False)
