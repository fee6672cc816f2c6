"""Discovery of the task kits, so that registry look-ups see every kit's models."""

from __future__ import annotations

import importlib
import importlib.util

KITS = ("clas", "seg", "det", "ocr", "nlp")
_loaded = False


def load_all() -> None:
    """Import every installed kit once (their imports register their models and namespaces)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for kit in KITS:
        if importlib.util.find_spec(f"oarkit.{kit}") is not None:
            importlib.import_module(f"oarkit.{kit}")
