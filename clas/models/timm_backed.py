"""Models whose architecture timm implements: factories, model cards read from timm's pretrained settings,
and the registration of PaddleClas-named variants.

timm (https://github.com/huggingface/pytorch-image-models) keeps, for every pretrained tag, the weights' hub id,
licence, input size, mean/std, crop and head names; the cards here are read from those settings rather than
copied by hand.

A PaddleClas-named card loads PaddleClas's weights, so that PaddleClas's published top-1 is the metric of the
weights it loads (:func:`register_paddle_variant`): timm's copy of them where timm has one (a ``paddle``/``ssld``
tag), else the PaddleClas release itself (``format: pdparams``, converted on load through the family's Paddle
mapping; such cards carry the ``paddle-weights`` tag). timm's own trainings of these architectures (``ra2``,
``lamb`` ...) stay reachable under their timm names (``timm/lcnet_100``, ``timm/resnet18d``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import timm
from timm.models import PretrainedCfg, get_pretrained_cfg
from torch import nn

from oarkit.core.errors import ConfigError
from oarkit.core.interop import PaddleMapping
from oarkit.core.registry import IMAGENET_MEAN, IMAGENET_STD, ImageInput, PretrainedWeights, register_model

# Where PaddleClas publishes its ImageNet-1k training checkpoints (``MODEL_URLS`` in ppcls/arch/backbone).
PADDLE_URL = "https://paddle-imagenet-models-name.bj.bcebos.com/dygraph/legendary_models/{}_pretrained.pdparams"
PADDLE_METRICS_SOURCE = "PaddleClas model zoo"
# Smallest input on which every timm-backed convnet here runs forward and backward (stride 32, batch 2).
SMALL_INPUT = (3, 32, 32)

_LABEL_SETS = {"in1k": "imagenet-1k", "in12k": "imagenet-12k", "in21k": "imagenet-21k", "in22k": "imagenet-22k"}


def timm_factory(arch: str, module: str) -> Callable[..., nn.Module]:
    """A registry factory building timm's ``arch`` with fresh weights; ``module`` is reported as its home."""

    def factory(*, num_classes: int = 1000, **kwargs: Any) -> nn.Module:
        return timm.create_model(arch, pretrained=False, num_classes=num_classes, **kwargs)

    factory.__name__ = factory.__qualname__ = arch
    factory.__module__ = module
    factory.__doc__ = f"timm's ``{arch}``, randomly initialised (load weights with ``pretrained=True``)."
    return factory


def timm_cfg(arch_or_tag: str) -> PretrainedCfg | None:
    """timm's pretrained settings of ``arch`` (its default tag) or ``arch.tag``; ``None`` when unknown."""
    try:
        return get_pretrained_cfg(arch_or_tag)
    except RuntimeError:  # an architecture timm knows with a tag it does not
        return None


def is_paddle_tag(cfg: PretrainedCfg) -> bool:
    """Whether a timm pretrained tag holds PaddleClas's own weights (converted by timm)."""
    return "paddle" in cfg.tag or "ssld" in cfg.tag


def _source(cfg: PretrainedCfg) -> str:
    if is_paddle_tag(cfg):
        return "PaddleClas, converted by timm"
    return f"timm hub, from {cfg.origin_url}" if cfg.origin_url else "timm hub (huggingface.co/timm)"


def timm_weights(cfg: PretrainedCfg) -> PretrainedWeights | None:
    """The weights of a timm pretrained tag: its Hugging Face hub file, else its direct url, else ``None``."""
    licence = cfg.license or "unknown"
    if cfg.hf_hub_id:
        file_name = cfg.hf_hub_filename or "model.safetensors"
        fmt = "safetensors" if file_name.endswith(".safetensors") else "pth"
        return PretrainedWeights(hub_id=cfg.hf_hub_id, file_name=file_name, format=fmt, license=licence,
                                 source=_source(cfg))
    if cfg.url:
        return PretrainedWeights(url=cfg.url, format="pth", license=licence, source=_source(cfg))
    return None


def head_names(cfg: PretrainedCfg) -> tuple[str, ...]:
    """Module prefixes of the classification head(s) named by a timm pretrained cfg."""
    if not cfg.classifier:
        return ()
    return (cfg.classifier,) if isinstance(cfg.classifier, str) else tuple(cfg.classifier)


def timm_card_fields(cfg: PretrainedCfg) -> dict[str, Any]:
    """:class:`ModelCard` fields (weights, preprocessing, head, labels) of a timm pretrained tag."""
    label_set = next((v for k, v in _LABEL_SETS.items() if (cfg.tag or "").endswith(k)), "")
    channels, height, width = cfg.input_size
    return {
        "weights": timm_weights(cfg),
        "input_spec": ImageInput(size=(height, width), channels=channels, mean=tuple(cfg.mean), std=tuple(cfg.std),
                                 crop_pct=cfg.crop_pct, interpolation=cfg.interpolation or "bilinear"),
        "classifier": head_names(cfg),
        "num_classes": cfg.num_classes or 1000,  # backbone-only weights: the head is fresh anyway
        "label_names": label_set,
        # Fixed-size models (plain ViTs, Swin, LeViT) run only at their own size.
        "test_input_size": tuple(cfg.input_size) if cfg.fixed_input_size else SMALL_INPUT,
    }


def paddle_card_fields(paddle_name: str) -> dict[str, Any]:
    """:class:`ModelCard` fields of a PaddleClas release, preprocessed as PaddleClas evaluates it
    (resize the short side to 256, centre-crop 224, ImageNet mean/std)."""
    return {
        "weights": PretrainedWeights(url=PADDLE_URL.format(paddle_name), format="pdparams", license="Apache-2.0",
                                     source="PaddleClas"),
        "input_spec": ImageInput(size=(224, 224), mean=IMAGENET_MEAN, std=IMAGENET_STD, crop_pct=0.875,
                                 interpolation="bilinear"),
        "num_classes": 1000,
        "label_names": "imagenet-1k",
        "test_input_size": SMALL_INPUT,
        "tags": ("paddle-weights",),
    }


def register_paddle_variant(name: str, arch: str, *, paddle_name: str, family: str, paper: str, module: str,
                            top1: float | None = None, tag: str = "",
                            builder: Callable[..., nn.Module] | None = None, head_like: str = "",
                            classifier: tuple[str, ...] = (), paddle_mapping: PaddleMapping | None = None) -> None:
    """Register a PaddleClas-named variant that loads PaddleClas's weights (see the module docstring).

    The weights are timm's ``arch.tag`` (its default tag when ``tag`` is empty) when that tag holds PaddleClas's
    weights, else the PaddleClas release ``paddle_name``, which ``paddle_mapping`` converts.

    Args:
        name: registry name, ``clas/<paddleclas_variant>``.
        arch: timm architecture name (also the timm builder's variant name when ``builder`` is given).
        paddle_name: PaddleClas's name of the variant (``PPLCNet_x0_25``), which names its release file.
        family: architecture family of the card.
        paper: paper title and link.
        module: the registering module, reported in duplicate-name errors.
        top1: PaddleClas's published ImageNet-1k top-1 of the variant.
        tag: timm pretrained tag to use instead of the default one.
        builder: factory of the module, when it is not ``timm.create_model(arch)`` (other widths, native ports).
        head_like: a timm architecture whose cfg names the head, for variants timm does not list.
        classifier: the head's module names, when they are not timm's (native ports).
        paddle_mapping: how PaddleClas checkpoints of the variant map onto the module.

    Raises:
        ConfigError: timm has no copy of PaddleClas's weights and no mapping converts the release.
    """
    cfg = timm_cfg(f"{arch}.{tag}" if tag else arch)
    if cfg is not None and cfg.hf_hub_id and is_paddle_tag(cfg):
        fields = timm_card_fields(cfg)
        fields["test_input_size"] = SMALL_INPUT
    elif paddle_mapping is not None:
        fields = paddle_card_fields(paddle_name)
        fields["classifier"] = head_names(timm_cfg(head_like or arch))
    else:
        raise ConfigError(f"{name}: timm has no copy of PaddleClas's {paddle_name} weights; declare paddle_mapping "
                          "so that the PaddleClas release converts")
    if classifier:
        fields["classifier"] = classifier
    factory = builder or timm_factory(arch, module)
    register_model(
        name,
        factory,
        task="clas",
        family=family,
        paper=paper,
        metrics={"imagenet_top1": top1} if top1 is not None else {},
        metrics_source=PADDLE_METRICS_SOURCE if top1 is not None else "",
        paddle_mapping=paddle_mapping,
        **fields,
    )
