"""The whole timm catalogue as ``timm/<name>``: ``create_model("timm/convnext_atto")``, ``list_models("timm/conv*")``.

Cards are made on demand from timm's pretrained settings (weights of the default tag, or of ``timm/<arch>.<tag>``);
https://github.com/huggingface/pytorch-image-models.
"""

from __future__ import annotations

import functools

import timm
from timm.models import PretrainedCfg

from oarkit.clas.models.timm_backed import timm_card_fields, timm_cfg, timm_factory
from oarkit.core.registry import ModelCard, Namespace, register_namespace


def _paper(cfg: PretrainedCfg) -> str:
    ids = cfg.paper_ids or ()
    ids = [i.strip() for i in (ids.split(",") if isinstance(ids, str) else ids) if i.strip()]
    links = [f"https://arxiv.org/abs/{i.removeprefix('arXiv:')}" if i.startswith("arXiv:") else i for i in ids]
    return ", ".join([cfg.paper_name] * bool(cfg.paper_name) + links)


@functools.cache
def timm_card(name: str) -> ModelCard | None:
    """The card of timm's ``name`` (``arch`` or ``arch.tag``), or ``None`` when timm does not know it."""
    arch = name.split(".", 1)[0]
    cfg = timm_cfg(name) if timm.is_model(arch) else None
    if cfg is None:
        return None
    family = timm.models.model_entrypoint(arch).__module__.rsplit(".", 1)[-1]
    return ModelCard(name=f"timm/{name}", task="clas", factory=timm_factory(arch, __name__),
                     family=f"timm.{family}", paper=_paper(cfg), **timm_card_fields(cfg))


def timm_names(pattern: str) -> list[str]:
    """timm architectures matching an fnmatch ``pattern``; a pattern with a ``.`` lists pretrained tags."""
    return timm.list_models(pattern, pretrained="." in pattern)


register_namespace(Namespace("timm", timm_card, timm_names))
