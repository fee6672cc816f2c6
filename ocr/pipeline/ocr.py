"""``OCR``: PaddleOCR's det → (orientation) → rec pipeline from registry names, run directories, export folders or
an exported pipeline folder, on paths, arrays, PIL images or lists of them."""

from __future__ import annotations

import difflib
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oarkit.core.data import ImageInput, load_image_input
from oarkit.core.deploy import is_export_dir
from oarkit.core.deploy.model import DeployedModel
from oarkit.core.deploy.pipeline import DeployedPipeline, Stage, is_pipeline_dir
from oarkit.core.errors import ConfigError, OarkitError

from ..charset import CharDictionary
from ..postprocess.db import DBPostProcess
from .glue import DET_DEFAULTS
from .results import OCRResult

logger = logging.getLogger(__name__)

#: PaddleOCR's pipeline versions (its ``ocr_version``): the det + rec pair of each (the dictionary is the rec's)
VERSIONS: dict[str, tuple[str, str]] = {
    "PP-OCRv4": ("ocr/ppocrv4_det_mobile", "ocr/ppocrv4_rec_mobile"),
    "PP-OCRv5": ("ocr/ppocrv5_det_mobile", "ocr/ppocrv5_rec_mobile"),
    "PP-OCRv6-tiny": ("ocr/ppocrv6_det_tiny", "ocr/ppocrv6_rec_tiny"),
    "PP-OCRv6-small": ("ocr/ppocrv6_det_small", "ocr/ppocrv6_rec_small"),
}
#: the version ``OCR()`` builds: the lowest page CER (English and Chinese rendered pages together) at no more than
#: 1.2x PP-OCRv4's latency per page (``bench/ocr_versions.py``, ``bench/results/ocr_versions.md``)
DEFAULT_VERSION = "PP-OCRv6-small"
DEFAULT_DET, DEFAULT_REC = VERSIONS[DEFAULT_VERSION]
DEFAULT_CLS = "ocr/cls_mv3_mobile"
#: other spellings of the versions (PaddleOCR's model names say ``mobile``), as :func:`_version_key` writes them
_VERSION_ALIASES = {"ppocrv4mobile": "PP-OCRv4", "ppocrv5mobile": "PP-OCRv5"}
#: PaddleOCR's inference defaults for DB (``det_db_*`` flags): :class:`DBPostProcess`'s own
DEFAULT_DB = DBPostProcess().to_dict()

StageSource = str | Path | nn.Module | None


def _version_key(name: str) -> str:
    return re.sub(r"[-_\s]", "", str(name).lower())


def resolve_version(version: str) -> str:
    """The canonical name of an OCR version (:data:`VERSIONS`), whatever its case, dashes and underscores.

    Raises:
        ConfigError: an unknown version; the message lists the valid ones, the closest first.
    """
    key = _version_key(version)
    canonical = {_version_key(name): name for name in VERSIONS}
    if key in canonical or key in _VERSION_ALIASES:
        return canonical.get(key) or _VERSION_ALIASES[key]
    # the longest shared prefix first ("ppocrv6" is a v6 size before it is v5), then difflib's similarity
    ordered = sorted(canonical, key=lambda k: (-len(os.path.commonprefix([k, key])),
                                               -difflib.SequenceMatcher(None, k, key).ratio()))
    ordered = [canonical[k] for k in ordered]
    raise ConfigError(f"unknown OCR version {version!r}; versions: {', '.join(ordered)} (case does not matter)")


def version_of(name: str | Path) -> str | None:
    """The version whose det or rec is the registry name ``name`` (``None``: no version's)."""
    return next((version for version, pair in VERSIONS.items() if str(name) in pair), None)


def _inference_form(model: nn.Module, device: str) -> nn.Module:
    """``model`` in eval mode on ``device`` with its re-parameterizable blocks folded (same outputs, ~3x faster)
    and a recognizer's training-only guidance head dropped."""
    model = model.eval().to(device)
    if hasattr(model, "reparameterize"):
        model.reparameterize()
    if hasattr(model, "drop_guidance"):
        model.drop_guidance()
    return model


def _model_db(model: nn.Module) -> dict[str, Any]:
    """The DB settings a detector was published with (``db_postprocess``), over the pipeline's defaults."""
    return {**DEFAULT_DB, **(getattr(model, "db_postprocess", None) or {})}


def _registry_stage(kind: str, name: str, pretrained: bool | str, device: str) -> tuple[nn.Module, dict[str, Any]]:
    from oarkit.core.registry import create_model, model_info

    card = model_info(name)
    inference = {"guidance": False} if card.task == "ocr/rec" else {}  # a recognizer without its training head
    model = _inference_form(create_model(name, pretrained=pretrained, **inference), device)
    spec = card.input_spec
    if kind == "det":
        return model, {"mean": list(getattr(spec, "mean", DET_DEFAULTS["mean"])),
                       "std": list(getattr(spec, "std", DET_DEFAULTS["std"])),
                       "limit_side_len": int(getattr(spec, "size", (960, 960))[0]), "db": _model_db(model)}
    if kind == "rec":
        dictionary = CharDictionary.of_model(model)
        return model, {"height": int(getattr(model, "image_height", 48)), "dictionary": dictionary}
    size = getattr(spec, "size", (48, 192))
    return model, {"height": int(size[0]), "width": int(size[1]), "mean": list(getattr(spec, "mean", (0.5,) * 3)),
                   "std": list(getattr(spec, "std", (0.5,) * 3))}


def _run_stage(kind: str, folder: Path, device: str) -> tuple[nn.Module, dict[str, Any]]:
    from oarkit.core.engine.checkpoint import find_model_dir
    from oarkit.core.engine.run import TrainedModel

    trained = TrainedModel.load(find_model_dir(folder))
    if trained.task_id != f"ocr/{kind}":
        raise OarkitError(f"{folder} holds a {trained.task_id or 'unknown'} model, not an ocr/{kind} one")
    meta = trained.meta
    params = dict(meta.get("preprocessing") or {})
    if kind == "det" and meta.get("postprocess"):
        params["db"] = dict(meta["postprocess"])
    if kind == "rec":
        params["dictionary"] = CharDictionary.from_dict(meta["dictionary"])
    return _inference_form(trained.model, device), params


class OCR:
    """Text detection, optional orientation and recognition: ``OCR()(image) -> OCRResult``.

    Example::

        ocr = OCR()                                   # PP-OCRv6 small det + rec (DEFAULT_VERSION), published weights
        result = ocr("page.jpg")
        print(result.text); result.save("page_ocr.png")
        OCR(version="PP-OCRv4")                       # PaddleOCR's PP-OCRv4 mobile det + rec
        OCR("runs/ocr_export")                        # an exported pipeline folder (onnxruntime)
        OCR(rec="runs/my_rec")                        # a fine-tuned recognizer beside the default detector

    Args:
        det: the detector: a registry name, run or model directory, export folder, a module, or a pipeline folder
            (then ``rec`` and ``cls`` come from it); ``None``: the version's.
        rec: the recognizer, in the same forms; ``None``: the version's (its dictionary comes with it).
        cls: the orientation classifier, in the same forms; ``None``: lines are read as they stand.
        version: the det + rec pair of a PaddleOCR version (:data:`VERSIONS`: ``PP-OCRv4``, ``PP-OCRv5``,
            ``PP-OCRv6-tiny``, ``PP-OCRv6-small``; any case) for the stages not given; ``None``:
            :data:`DEFAULT_VERSION`.
        use_cls: take the default classifier (``ocr/cls_mv3_mobile``) when ``cls`` is not given.
        pretrained: registry names load their registered weights (``True``), or random ones (``False``).
        device: where eager modules run.
        det_preprocess, det_postprocess: detection settings over the source's (``limit_side_len``, ``limit_type``,
            ``mean``, ``std``; DB's ``thresh``, ``box_thresh``, ``unclip_ratio``, ``use_dilation``, ...).
        rec_preprocess: recognition settings (``height``, ``width``: the narrowest padded batch).
        dictionary: the recognizer's dictionary (a :class:`CharDictionary`, a built-in name or a file).
        cls_preprocess: orientation settings (``height``, ``width``).
        drop_score: lines the recognizer scores under this are left out.
        rec_batch_size, cls_batch_size: crops per batch.
        cls_threshold: a crop is turned when the classifier says 180 degrees with at least this probability.
        runtime_options: engine settings for exported stages (``threads=2``).
    """

    def __init__(self, det: StageSource = None, rec: StageSource = None, cls: StageSource = None, *,
                 version: str | None = None, use_cls: bool = False, pretrained: bool | str = True, device: str = "cpu",
                 det_preprocess: dict[str, Any] | None = None, det_postprocess: dict[str, Any] | None = None,
                 rec_preprocess: dict[str, Any] | None = None, dictionary: CharDictionary | str | None = None,
                 cls_preprocess: dict[str, Any] | None = None, drop_score: float = 0.5, rec_batch_size: int = 6,
                 cls_batch_size: int = 6, cls_threshold: float = 0.9,
                 runtime_options: dict[str, Any] | None = None) -> None:
        self.device = str(device)
        runtime_options = dict(runtime_options or {})
        glue_params: dict[str, Any] = {"drop_score": float(drop_score), "rec_batch_size": int(rec_batch_size)}
        chosen = resolve_version(version) if version is not None else DEFAULT_VERSION
        #: the version whose det and rec the pipeline runs (registry names); ``None``: other models
        self.version: str | None = None
        if isinstance(det, (str, Path)) and is_pipeline_dir(det):
            if version is not None:
                raise ConfigError(f"{det} is an exported pipeline folder with models of its own; leave out "
                                  f"version={version!r}")
            self.pipeline = DeployedPipeline.load(det, **runtime_options)
            self.pipeline.parameters.update({k: v for k, v in glue_params.items()
                                              if k in (self.pipeline.glue.parameters() or {})})
            self._override(det_preprocess, det_postprocess, rec_preprocess, dictionary, cls_preprocess)
            return
        version_det, version_rec = VERSIONS[chosen]
        det, rec = version_det if det is None else det, version_rec if rec is None else rec
        if isinstance(det, (str, Path)) and isinstance(rec, (str, Path)):
            self.version = next((v for v, pair in VERSIONS.items() if pair == (str(det), str(rec))), None)
        if cls is None and use_cls:
            cls = DEFAULT_CLS
        stages = {"det": self._stage("det", det, pretrained, runtime_options)}
        if cls is not None:
            stages["cls"] = self._stage("cls", cls, pretrained, runtime_options)
            glue_params.update(cls_batch_size=int(cls_batch_size), cls_threshold=float(cls_threshold))
        stages["rec"] = self._stage("rec", rec, pretrained, runtime_options)
        glue = "ocr/det_cls_rec" if "cls" in stages else "ocr/det_rec"
        self.pipeline = DeployedPipeline(glue, stages, glue_params)
        self._override(det_preprocess, det_postprocess, rec_preprocess, dictionary, cls_preprocess)

    def _stage(self, kind: str, source: StageSource, pretrained: bool | str,
               runtime_options: dict[str, Any]) -> Stage:
        if source is None:
            raise OarkitError(f"OCR needs a {kind} model: a registry name, run directory, export folder or module")
        if isinstance(source, nn.Module):
            defaults = {"det": {"db": _model_db(source)}, "rec": {}, "cls": {}}[kind]
            return Stage(name=kind, model=source.eval(), parameters=defaults)
        path = Path(source)
        if is_export_dir(path):
            model = DeployedModel(path, **runtime_options)
            return Stage(name=kind, model=model, parameters={}, manifest=model.manifest, folder=path)
        if path.exists():
            model, params = _run_stage(kind, path, self.device)
        else:
            model, params = _registry_stage(kind, str(source), pretrained, self.device)
        if kind == "det":
            params["db"] = {**DEFAULT_DB, **params.get("db", {})}
        return Stage(name=kind, model=model, parameters=params)

    def _override(self, det_pre: dict[str, Any] | None, det_post: dict[str, Any] | None,
                  rec_pre: dict[str, Any] | None, dictionary: CharDictionary | str | None,
                  cls_pre: dict[str, Any] | None) -> None:
        stages = self.pipeline.stages
        if det_pre:
            stages["det"].parameters.update(det_pre)
        if det_post:
            current = dict(DEFAULT_DB)
            if stages["det"].manifest is not None:
                current.update((stages["det"].manifest.postprocessing or {}).get("db") or {})
            current.update(stages["det"].parameters.get("db") or {})
            stages["det"].parameters["db"] = {**current, **det_post}
        if rec_pre:
            stages["rec"].parameters.update(rec_pre)
        if dictionary is not None:
            stages["rec"].parameters["dictionary"] = CharDictionary.load(dictionary) if not isinstance(
                dictionary, CharDictionary) else dictionary
        if cls_pre and "cls" in stages:
            stages["cls"].parameters.update(cls_pre)

    @classmethod
    def from_source(cls, source: str | Path, *, device: str = "cpu", **kwargs: Any) -> OCR:
        """The predictor the command line builds: a pipeline folder as it is, an ``ocr/det``, ``ocr/rec`` or
        ``ocr/cls`` run, export or registry name in its place beside the default models (a version's det or rec
        name beside the other model of its version, unless ``version=`` says otherwise), or ``ocr``, the name
        of the default pipeline (where no folder of that name exists)."""
        from oarkit.core.kits import pipeline_task_id, source_task_id

        if "version" not in kwargs and isinstance(source, str) and version_of(source):
            kwargs["version"] = version_of(source)
        if is_pipeline_dir(source):
            return cls(source, device=device, **kwargs)
        if pipeline_task_id(source) == "ocr":
            return cls(device=device, **kwargs)
        task_id, _ = source_task_id(source)
        kind = task_id.split("/", 1)[-1]
        if kind == "det":
            return cls(det=source, device=device, **kwargs)
        if kind == "rec":
            return cls(rec=source, device=device, **kwargs)
        if kind == "cls":
            return cls(cls=source, device=device, **kwargs)
        raise OarkitError(f"{source} is a {task_id or 'unknown'} model, not an OCR one (ocr/det, ocr/rec, ocr/cls)")

    @property
    def stages(self) -> dict[str, Stage]:
        return self.pipeline.stages

    def __call__(self, inputs: ImageInput | Sequence[ImageInput]) -> OCRResult | list[OCRResult]:
        """OCR of one image (a path, RGB array or PIL image) or a list of them."""
        single = not isinstance(inputs, (list, tuple))
        items = [inputs] if single else list(inputs)
        loaded = [load_image_input(item, taker="OCR") for item in items]
        with torch.inference_mode():
            results = self.pipeline([image for image, _ in loaded])
        for result, (_, source) in zip(results, loaded):
            result.source = source
        return results[0] if single else results

    def __repr__(self) -> str:
        return f"OCR({self.pipeline!r})"
