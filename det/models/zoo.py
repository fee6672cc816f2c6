"""Model cards of the detection zoo: label sets, PaddleDetection's released weights and the registration helper.

Every PaddleDetection model-zoo entry publishes ``https://bj.bcebos.com/v1/paddledet/models/<config>.pdparams``
(``paddledet.bj.bcebos.com`` for PicoDet and RT-DETR) and its COCO val2017 box mAP(0.5:0.95) in
``configs/<family>/README.md``. Such cards carry the ``paddle-weights`` tag: ``pretrained=True`` converts the
``.pdparams`` through the family's ``paddle_mapping``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from oarkit.core.registry import DetectorInput, PretrainedWeights, register_model

Factory = Callable[..., nn.Module]

COCO_CLASSES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow", "elephant",
    "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard",
    "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle",
    "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange", "broccoli",
    "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant", "bed", "dining table", "toilet",
    "tv", "laptop", "mouse", "remote", "keyboard", "cell phone", "microwave", "oven", "toaster", "sink",
    "refrigerator", "book", "clock", "vase", "scissors", "teddy bear", "hair drier", "toothbrush",
)
#: CDLA (Chinese document layout analysis), the classes of PaddleOCR's layout model in their index order
CDLA_CLASSES = ("text", "title", "figure", "figure_caption", "table", "table_caption", "header", "footer",
                "reference", "equation")
#: label set name (a card's ``label_names``) -> class names, index order
LABEL_SETS: dict[str, tuple[str, ...]] = {"coco": COCO_CLASSES, "cdla": CDLA_CLASSES}

PADDLEDET_LICENSE = "Apache-2.0"
#: PP-YOLOE+ and PicoDet normalise by 1/255 only; PP-YOLOE and RT-DETR(-ResNet) too, or by ImageNet's statistics
UNIT_MEAN, UNIT_STD = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
#: smallest input on which the native detectors run forward and backward (stride 32 / 64, batch 2)
TEST_INPUT = (3, 64, 64)


def labels_of(card_label_names: str, num_classes: int) -> list[str]:
    """Class names of a card's label set, or ``class_0 ..`` when the set is unknown or of another size."""
    names = LABEL_SETS.get(card_label_names, ())
    return list(names) if len(names) == num_classes else [f"class_{i}" for i in range(num_classes)]


def register_paddledet(name: str, *, config: str, family: str, paper: str, map_: float, size: tuple[int, int],
                       classifier: tuple[str, ...], url: str = "", mean: tuple[float, ...] = UNIT_MEAN,
                       std: tuple[float, ...] = UNIT_STD, stride_multiple: int = 32, dataset: str = "coco",
                       metric: str = "coco_map", metrics_source: str = "", tags: tuple[str, ...] = (),
                       **card: Any) -> Callable[[Factory], Factory]:
    """Register a PaddleDetection model-zoo variant with its released weights and reference mAP.

    Args:
        name: ``det/<variant>``.
        config: PaddleDetection's config name, which names the released ``.pdparams``.
        family: architecture family (``ppyoloe``, ``picodet``, ...).
        paper: title and link.
        map_: the published box mAP on ``dataset`` val (COCO: mAP 0.5:0.95), in percent.
        size: height and width the weights were evaluated at.
        classifier: module prefixes of the class outputs (re-initialised for another number of classes).
        url: the weights' address when it is not the default one.
        mean, std: input normalisation in [0, 1] pixel units.
        stride_multiple: the multiple both sides must be.
        dataset: the label set and dataset of the weights (``coco``, ``cdla``).
        metric: the metric's name on the card.
        metrics_source: where the metric is published (default: the family's PaddleDetection README).
        tags: extra tags (``large`` keeps the model out of the fast tests).
        **card: other :class:`~oarkit.core.registry.ModelCard` fields.
    """
    weights = PretrainedWeights(url=url or f"https://bj.bcebos.com/v1/paddledet/models/{config}.pdparams",
                                format="pdparams", license=PADDLEDET_LICENSE, source=f"PaddleDetection ({config})")
    fields: dict[str, Any] = {
        "task": "det", "weights": weights, "family": family, "paper": paper, "classifier": classifier,
        "num_classes": len(LABEL_SETS[dataset]), "label_names": dataset, "metrics": {metric: map_},
        "metrics_source": metrics_source or f"PaddleDetection 2.6, configs/{family}/README.md ({dataset} val)",
        "input_spec": DetectorInput(size=size, stride_multiple=stride_multiple, mean=mean, std=std),
        "test_input_size": TEST_INPUT, "tags": ("paddle-weights", *tags), **card,
    }

    def decorate(factory: Factory) -> Factory:
        register_model(name, factory, **fields)
        return factory

    return decorate
