"""``oarkit convert paddle``: a Paddle checkpoint in, a self-describing oarkit model directory out.

The source may be a ``.pdparams`` file, a PaddleNLP model directory (``model_state.pdparams`` + config) or an
inference model (a folder, a ``model/inference`` prefix or its ``.pdiparams`` file). The registry model it
becomes is named by the caller; its card's ``paddle_mapping`` says how the names and layouts map. The result
(model.safetensors, meta.json, config.yaml) is what ``oarkit.core.load_model``, the predictors, ``oarkit eval``
and ``oarkit export`` read.
"""

from __future__ import annotations

import datetime
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import yaml

from oarkit.core.errors import ConfigError, DataError
from oarkit.core.interop.inference_model import PARAMS_SUFFIX, read_inference_model
from oarkit.core.interop.mapping import PaddleMapping, apply_mapping
from oarkit.core.interop.paddlenlp import is_paddlenlp_dir, read_paddlenlp_dir
from oarkit.core.interop.pdparams import read_pdparams

if TYPE_CHECKING:
    from oarkit.core.registry import ModelCard

logger = logging.getLogger(__name__)


def read_paddle_checkpoint(src: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any], str]:
    """``(tensors by structured name, PaddleNLP config or {}, source format)`` of any Paddle checkpoint.

    Raises:
        DataError: ``src`` is none of the supported forms.
    """
    path = Path(src)
    if path.is_file() and path.suffix == ".pdparams":
        return read_pdparams(path), {}, "pdparams"
    if is_paddlenlp_dir(path):
        state, config = read_paddlenlp_dir(path)
        return state, config, "paddlenlp"
    prefix_params = path.with_name(path.name + PARAMS_SUFFIX)
    if (path.is_dir() and any(path.glob(f"*{PARAMS_SUFFIX}"))) or path.name.endswith(PARAMS_SUFFIX) \
            or prefix_params.is_file():
        return read_inference_model(path).state_dict(), {}, "inference_model"
    raise DataError(f"{src} is not a Paddle checkpoint oarkit reads: pass a .pdparams file, a PaddleNLP model "
                    f"directory (model_state.pdparams + config.json) or an inference model (a folder or prefix "
                    f"with inference{PARAMS_SUFFIX})")


def _kit_meta(card: ModelCard) -> dict[str, Any]:
    """The kit's meta.json view of a registry model (task id, labels, preprocessing), read from the
    ``export_source`` of its task id's entry, so that the converted directory describes itself as the kit's own
    runs do."""
    from oarkit.core.kits import task_entry

    entry = task_entry(card.task)
    if entry.export_source is None:
        return {"task": card.task}
    return dict(entry.export_source(card.name, pretrained=False).meta)


def convert_paddle(src: str | Path, *, model: str, out: str | Path, num_classes: int | None = None,
                   **model_kwargs: Any) -> Path:
    """Convert a Paddle checkpoint into an oarkit model directory.

    Args:
        src: a ``.pdparams`` file, a PaddleNLP model directory, or an inference model folder / prefix.
        model: the registry name it becomes (``clas/pp_lcnet_x1_0``); its card declares the mapping.
        out: the model directory to write (replaced atomically when it exists).
        num_classes: classes of the head; when it differs from the checkpoint's, the backbone is kept and the
            head re-initialised.
        **model_kwargs: the registry model's own keyword arguments.

    Returns:
        ``out``, which :func:`oarkit.core.load_model` rebuilds.

    Raises:
        ConfigError: the model has no Paddle mapping.
        DataError: the source cannot be read.
        WeightsError: the checkpoint does not map onto the model (every offending tensor is listed).
    """
    from oarkit.core.engine.checkpoint import contiguous_state, write_model_dir
    from oarkit.core.registry import create_model, model_info

    card = model_info(model)
    mapping = card.paddle_mapping
    if not isinstance(mapping, PaddleMapping):
        from oarkit.core.registry import list_models

        ported = [n for n in list_models() if isinstance(model_info(n).paddle_mapping, PaddleMapping)]
        raise ConfigError(f"{model} declares no Paddle mapping, so Paddle checkpoints cannot be converted onto it. "
                          f"Models with one: {', '.join(ported) or 'none'}")
    state, nlp_config, fmt = read_paddle_checkpoint(src)
    checkpoint_classes = None
    if mapping.model_kwargs is not None and nlp_config:  # the checkpoint's own depth, widths and head
        from_config = mapping.model_kwargs(nlp_config)
        checkpoint_classes = from_config.pop("num_classes", None)
        model_kwargs = {**from_config, **model_kwargs}
    module = create_model(model, num_classes=checkpoint_classes if num_classes is None else num_classes,
                          **model_kwargs)
    classes = module.oarkit_kwargs["num_classes"]
    # Asking for a number of classes allows a head of another size than the checkpoint's: it starts afresh.
    converted = apply_mapping(state, module, mapping, head=card.classifier, reset_head=num_classes is not None,
                              source=str(src))
    module.load_state_dict(converted, strict=False)  # apply_mapping checked every name against this module
    fresh = sorted(k for k in module.state_dict() if k not in converted and not k.endswith("num_batches_tracked"))
    reset_head = bool(fresh)
    if reset_head:
        logger.info("kept the backbone of %s; the head (%s) is re-initialised for %d classes", src,
                    ", ".join(fresh), classes)

    if mapping.source_meta is not None:  # what the source directory says of itself (task, labels, tokenizer)
        meta = {"task": card.task, **mapping.source_meta(Path(src), nlp_config)}
    else:
        meta = _kit_meta(card)
    meta.update({
        "model": {"name": model, "kwargs": module.oarkit_kwargs},
        "weights": "converted",
        "converted_from": {"source": str(Path(src).resolve()), "format": fmt, "mapping": mapping.source,
                           "head_reinitialised": reset_head},
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    })
    meta.pop("metrics", None)  # the card's reference metrics belong to its registered weights, not these
    if reset_head and "labels" in meta:
        meta["labels"] = [str(i) for i in range(classes)]
    if nlp_config:
        meta["paddle_config"] = nlp_config
    config = {"model": {"name": model, "kwargs": module.oarkit_kwargs}, "converted_from": meta["converted_from"]}
    path = write_model_dir(out, weights=contiguous_state(module.eval()), meta=meta,
                           config_yaml=yaml.safe_dump(config, sort_keys=False))
    logger.info("converted %s (%s, %d tensors) into %s at %s", src, fmt, len(state), model, path)
    return path
