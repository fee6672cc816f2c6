"""Models whose backbone folds (PP-LCNetV3): the folded state is part of how the model is rebuilt.

``pretrained=True`` loads Paddle's released inference models, which are folded, so the loaded model is folded;
export folds too. A run directory records the model's ``oarkit_kwargs`` to rebuild it: :class:`FoldableModel`
adds ``reparameterized=True`` there once the model is folded, and the factories accept that keyword and fold the
fresh model, so a fine-tuned or converted folded model comes back with the same layout as it was saved.
"""

from __future__ import annotations

from typing import Any

from torch import nn


class FoldableModel(nn.Module):
    """A model with ``reparameterize()`` that remembers in ``oarkit_kwargs`` whether it is folded."""

    _oarkit_kwargs: dict[str, Any]

    @property
    def is_reparameterized(self) -> bool:
        """Whether any re-parameterizable layer is folded."""
        return any(getattr(m, "is_repped", False) for m in self.modules())

    def reparameterize(self) -> None:
        """Fold the backbone's re-parameterizable branches (PP-LCNetV3), for inference and export; a model
        without such branches is unchanged."""
        if hasattr(self.backbone, "reparameterize"):
            self.backbone.reparameterize()

    @property
    def oarkit_kwargs(self) -> dict[str, Any]:
        """How the registry rebuilds this model (set by ``create_model``), with ``reparameterized=True`` once it is
        folded."""
        kwargs = dict(getattr(self, "_oarkit_kwargs", {}))
        if self.is_reparameterized:
            kwargs["reparameterized"] = True
        return kwargs

    @oarkit_kwargs.setter
    def oarkit_kwargs(self, value: dict[str, Any]) -> None:
        self._oarkit_kwargs = dict(value)


def folded(model: FoldableModel, reparameterized: bool) -> FoldableModel:
    """``model``, folded when ``reparameterized`` (the factories' keyword)."""
    if reparameterized:
        model.reparameterize()
    return model
