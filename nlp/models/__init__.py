"""Registered text models; importing this package runs every registration.

Each family file registers its variants through :func:`~oarkit.nlp.models.builder.register_transformer`; adding a
family is one file here and one line below.
"""

from oarkit.nlp.models import (  # noqa: F401  imported for their registrations
    albert,
    bert,
    deberta,
    electra,
    ernie,
    minilm,
    roberta_wwm,
    uie,
    xlm_roberta,
)
from oarkit.nlp.models.builder import HEADS, encoder_of, transformer_state_filter
from oarkit.nlp.models.uie import UIE

__all__ = ["HEADS", "UIE", "encoder_of", "transformer_state_filter"]
