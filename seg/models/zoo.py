"""Model cards of the segmentation zoo: PaddleSeg's released weights and the datasets they were trained on.

Every PaddleSeg model-zoo entry publishes ``https://bj.bcebos.com/paddleseg/dygraph/<dataset>/<config>/model.pdparams``
and its mIoU on the dataset's validation set (single scale, no flip) in ``configs/<model>/README.md``. The
``.pdparams`` files need a converter that oarkit does not have yet: such cards carry the ``paddle-weights`` tag
and ``pretrained=True`` says so clearly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from oarkit.core.registry import IMAGENET_MEAN, IMAGENET_STD, ImageInput, PretrainedWeights, register_model

Factory = Callable[..., nn.Module]
PADDLESEG_URL = "https://bj.bcebos.com/paddleseg/dygraph/{dataset}/{config}/model.pdparams"
PADDLESEG_LICENSE = "Apache-2.0"
#: PaddleSeg's default ``Normalize``: (x / 255 - 0.5) / 0.5
PADDLE_MEAN = (0.5, 0.5, 0.5)
PADDLE_STD = (0.5, 0.5, 0.5)
#: smallest input on which every model here runs forward and backward (stride 32, batch 2)
TEST_INPUT = (3, 64, 64)

#: dataset -> (classes, label set name, the (channels, height, width) the recipes train on)
DATASETS: dict[str, tuple[int, str, tuple[int, int, int]]] = {
    "cityscapes": (19, "cityscapes", (3, 512, 1024)),
    "ade20k": (150, "ade20k", (3, 512, 512)),
    "pascal_voc12": (21, "voc", (3, 512, 512)),
    "coco_voc": (21, "voc", (3, 520, 520)),  # torchvision: COCO val2017 restricted to the 20 VOC classes
}


def dataset_fields(dataset: str, *, mean: tuple[float, ...] = PADDLE_MEAN, std: tuple[float, ...] = PADDLE_STD,
                   size: tuple[int, int] | None = None) -> dict[str, Any]:
    """The card fields a dataset fixes: number of classes, label set, and the image input spec at the size its
    recipes train on (``size`` when the weights used another), normalised with ``mean``/``std``, no crop."""
    classes, labels, (channels, height, width) = DATASETS[dataset]
    return {"num_classes": classes, "label_names": labels,
            "input_spec": ImageInput(size=size or (height, width), channels=channels, mean=mean, std=std)}


def register_paddleseg(name: str, *, family: str, config: str, dataset: str, miou: float, paper: str,
                       classifier: tuple[str, ...], imagenet_norm: bool = False, tags: tuple[str, ...] = (),
                       url: str = "", readme: str = "", size: tuple[int, int] | None = None,
                       **card: Any) -> Callable[[Factory], Factory]:
    """Register a PaddleSeg model-zoo variant with its released weights and reference mIoU.

    Args:
        name: the registry name, ``seg/<variant>``.
        family: architecture family (``pp_liteseg``, ``deeplabv3p``, ...).
        config: PaddleSeg's config name, which is also the folder of the released weights.
        dataset: a key of :data:`DATASETS`.
        miou: the published single-scale validation mIoU, in percent.
        paper: title and link.
        classifier: module prefixes of the layers that output the classes (re-initialised for other counts).
        imagenet_norm: the recipe normalises with ImageNet's mean/std instead of PaddleSeg's 0.5/0.5.
        tags: extra tags (``large`` keeps the model out of the fast tests).
        url: the weights' address when it differs from :data:`PADDLESEG_URL`.
        readme: PaddleSeg's config folder holding the README with the metric, when it is not ``family``.
        size: height and width of the weights' inputs, when they differ from the dataset's recipe size.
        **card: other :class:`~oarkit.core.registry.ModelCard` fields.
    """
    weights = PretrainedWeights(url=url or PADDLESEG_URL.format(dataset=dataset, config=config), format="pdparams",
                                license=PADDLESEG_LICENSE, source=f"PaddleSeg model zoo ({config})")
    fields = {
        "task": "seg", "weights": weights, "family": family, "paper": paper, "classifier": classifier,
        "metrics": {f"{dataset}_miou": miou}, "test_input_size": TEST_INPUT,
        "metrics_source": f"PaddleSeg model zoo, configs/{readme or family}/README.md ({dataset} val, single scale)",
        "tags": ("paddle-weights", *tags),
        **dataset_fields(dataset, mean=IMAGENET_MEAN if imagenet_norm else PADDLE_MEAN,
                         std=IMAGENET_STD if imagenet_norm else PADDLE_STD, size=size), **card,
    }

    def decorate(factory: Factory) -> Factory:
        register_model(name, factory, **fields)
        return factory

    return decorate
