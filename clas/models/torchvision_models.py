"""Every torchvision classification architecture as ``clas/tv_<name>``, with torchvision's ImageNet-1k weights.

Read from torchvision's own registry (``torchvision.models.list_models``): the weights' url, metrics, parameter
count, minimum input size and eval transform come from each architecture's ``DEFAULT`` weights, so a torchvision
upgrade adds its new models here. Papers: see ``PAPERS`` below; recipes: https://pytorch.org/vision/stable/models.html.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import torch
import torchvision
from torch import nn
from torchvision import models as tvm

from oarkit.core.registry import ImageInput, PretrainedWeights, register_model

logger = logging.getLogger(__name__)

# Head module per torchvision model module (the layer whose outputs are the classes; checked by the model tests).
HEADS = {
    "alexnet": ("classifier.6",), "convnext": ("classifier.2",), "densenet": ("classifier",),
    "efficientnet": ("classifier.1",), "googlenet": ("fc",), "inception": ("fc",), "maxvit": ("classifier.5",),
    "mnasnet": ("classifier.1",), "mobilenetv2": ("classifier.1",), "mobilenetv3": ("classifier.3",),
    "regnet": ("fc",), "resnet": ("fc",), "shufflenetv2": ("fc",), "squeezenet": ("classifier.1",),
    "swin_transformer": ("head",), "vgg": ("classifier.6",), "vision_transformer": ("heads.head",),
}
# Paper per model-name prefix, the longest matching prefix wins.
PAPERS = {
    "alexnet": "One weird trick for parallelizing convolutional neural networks, https://arxiv.org/abs/1404.5997",
    "convnext": "A ConvNet for the 2020s, https://arxiv.org/abs/2201.03545",
    "densenet": "Densely Connected Convolutional Networks, https://arxiv.org/abs/1608.06993",
    "efficientnet": "EfficientNet: Rethinking Model Scaling for Convolutional Neural Networks, "
                    "https://arxiv.org/abs/1905.11946",
    "efficientnet_v2": "EfficientNetV2: Smaller Models and Faster Training, https://arxiv.org/abs/2104.00298",
    "googlenet": "Going Deeper with Convolutions, https://arxiv.org/abs/1409.4842",
    "inception_v3": "Rethinking the Inception Architecture for Computer Vision, https://arxiv.org/abs/1512.00567",
    "maxvit": "MaxViT: Multi-Axis Vision Transformer, https://arxiv.org/abs/2204.01697",
    "mnasnet": "MnasNet: Platform-Aware Neural Architecture Search for Mobile, https://arxiv.org/abs/1807.11626",
    "mobilenet_v2": "MobileNetV2: Inverted Residuals and Linear Bottlenecks, https://arxiv.org/abs/1801.04381",
    "mobilenet_v3": "Searching for MobileNetV3, https://arxiv.org/abs/1905.02244",
    "regnet": "Designing Network Design Spaces, https://arxiv.org/abs/2003.13678",
    "resnet": "Deep Residual Learning for Image Recognition, https://arxiv.org/abs/1512.03385",
    "resnext": "Aggregated Residual Transformations for Deep Neural Networks, https://arxiv.org/abs/1611.05431",
    "shufflenet_v2": "ShuffleNet V2: Practical Guidelines for Efficient CNN Architecture Design, "
                     "https://arxiv.org/abs/1807.11164",
    "squeezenet": "SqueezeNet: AlexNet-level accuracy with 50x fewer parameters and <0.5MB model size, "
                  "https://arxiv.org/abs/1602.07360",
    "swin": "Swin Transformer: Hierarchical Vision Transformer using Shifted Windows, https://arxiv.org/abs/2103.14030",
    "swin_v2": "Swin Transformer V2: Scaling Up Capacity and Resolution, https://arxiv.org/abs/2111.09883",
    "vgg": "Very Deep Convolutional Networks for Large-Scale Image Recognition, https://arxiv.org/abs/1409.1556",
    "vit": "An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale, https://arxiv.org/abs/2010.11929",
    "wide_resnet": "Wide Residual Networks, https://arxiv.org/abs/1605.07146",
}
LICENSE = "BSD-3-Clause (torchvision)"
LARGE_PARAMS = 100_000_000  # over this, a model is tagged "large" and kept out of the fast tests
SMALL_INPUT = 32
# Auxiliary classifiers of the Inception models, present in their released weights.
AUX_HEADS = {"googlenet": ("aux1.", "aux2."), "inception_v3": ("AuxLogits.",)}
_VIT_LEGACY = re.compile(r"mlp\.linear_([12])\.")
# torchvision's DenseNet weights predate its module names: "denselayer1.norm.1.weight" is now "...norm1.weight".
_DENSENET_LEGACY = re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))\.([12]\.(?:weight|bias|running_(?:mean|var)))$")


def _factory(name: str, defaults: dict[str, Any]) -> Callable[..., nn.Module]:
    def factory(*, num_classes: int = 1000, **kwargs: Any) -> nn.Module:
        return tvm.get_model(name, weights=None, num_classes=num_classes, **{**defaults, **kwargs})

    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = f"torchvision's ``{name}``, randomly initialised (load weights with ``pretrained=True``)."
    return factory


def _densenet_filter(state: dict[str, torch.Tensor], model: nn.Module) -> dict[str, torch.Tensor]:
    """Rename torchvision's legacy DenseNet checkpoint keys onto the current modules."""
    return {"".join(m.groups()) if (m := _DENSENET_LEGACY.match(k)) else k: v for k, v in state.items()}


def _vit_filter(state: dict[str, torch.Tensor], model: nn.Module) -> dict[str, torch.Tensor]:
    """Rename the MLP layers of older ViT checkpoints (torchvision PR 6053: ``mlp.linear_1`` is now ``mlp.0``)."""
    return {_VIT_LEGACY.sub(lambda m: f"mlp.{3 * (int(m.group(1)) - 1)}.", k): v for k, v in state.items()}


def _mnasnet_filter(state: dict[str, torch.Tensor], model: nn.Module) -> dict[str, torch.Tensor]:
    """Give the model the fixed 32-channel stem of version-1 MNASNet checkpoints when ``state`` has one."""
    stem = state.get("layers.0.weight")
    if stem is not None and stem.shape != model.layers[0].weight.shape:
        # torchvision rebuilds that stem while loading a version-1 state dict; let it (MNASNet owns no tensors itself).
        model._load_from_state_dict({}, "", {"version": 1}, False, [], [], [])
    return state


def _aux_filter(prefixes: tuple[str, ...]) -> Callable[[dict[str, torch.Tensor], nn.Module], dict[str, torch.Tensor]]:
    def drop_unused_aux(state: dict[str, torch.Tensor], model: nn.Module) -> dict[str, torch.Tensor]:
        """Drop the auxiliary heads' tensors when the model was built without them (``aux_logits=False``)."""
        own = model.state_dict()
        return {k: v for k, v in state.items() if k in own or not k.startswith(prefixes)}

    return drop_unused_aux


FILTERS = {"densenet": _densenet_filter, "vision_transformer": _vit_filter, "mnasnet": _mnasnet_filter}


def _paper(name: str) -> str:
    prefixes = sorted((p for p in PAPERS if name.startswith(p)), key=len)
    return PAPERS[prefixes[-1]] if prefixes else ""


def _register(name: str) -> None:
    weights = tvm.get_model_weights(name).DEFAULT
    family = tvm.get_model_builder(name).__module__.rsplit(".", 1)[-1]
    if family not in HEADS:
        logger.warning("torchvision model %s (module %s) has no known head; not registered", name, family)
        return
    meta, transform = weights.meta, weights.transforms()
    defaults: dict[str, Any] = {}
    if name in AUX_HEADS:
        # Auxiliary heads off (the model returns one tensor in training too); transform_input on, as torchvision
        # sets it for its released weights; init_weights explicit, silencing torchvision's warning.
        defaults = {"aux_logits": False, "transform_input": True, "init_weights": True}
    if family == "vision_transformer":
        # A ViT's position embedding fixes its input size: build it at the size of its weights (518 for vit_h_14).
        defaults = {"image_size": meta["min_size"][0]}
    crop, resize = transform.crop_size[0], transform.resize_size[0]
    licence = meta.get("license", LICENSE)
    if "SWAG" in licence:
        licence = f"CC-BY-NC-4.0 (SWAG weights, {licence})"
    test_size = max(SMALL_INPUT, *meta.get("min_size", (1, 1)))
    register_model(
        f"clas/tv_{name}",
        _factory(name, defaults),
        task="clas",
        weights=PretrainedWeights(url=weights.url, format="pth", license=licence,
                                  source=f"torchvision {torchvision.__version__}"),
        family=f"tv_{family}",
        input_spec=ImageInput(size=(crop, crop), mean=tuple(transform.mean), std=tuple(transform.std),
                              crop_pct=crop / resize, interpolation=transform.interpolation.value),
        num_classes=len(meta["categories"]),
        label_names="imagenet-1k",
        metrics={"imagenet_top1": meta["_metrics"]["ImageNet-1K"]["acc@1"]},
        metrics_source=f"torchvision ({weights})",
        paper=_paper(name),
        classifier=HEADS[family],
        test_input_size=(3, test_size, test_size),
        tags=("large",) if meta["num_params"] > LARGE_PARAMS else (),
        state_dict_filter=_aux_filter(AUX_HEADS[name]) if name in AUX_HEADS else FILTERS.get(family),
    )


for _name in tvm.list_models(module=tvm):
    _register(_name)
