"""Generated datasets: a marker file, written last, records the settings a folder's finished set was made with.

Generators (the demo and test sets of every kit) call :func:`is_generated` first and return at once when the
folder already holds a set made with the same settings; they call :func:`mark_generated` after the last file is
on disk, so an interrupted run is redone rather than trusted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def is_generated(root: str | os.PathLike, marker: str, settings: dict[str, Any]) -> bool:
    """Whether ``root/marker`` says a finished set with ``settings`` is there; a stale or broken marker is removed.

    Args:
        root: the dataset folder.
        marker: the marker's file name (one per generator, e.g. ``.oarkit_shapes.json``).
        settings: what the set depends on (sizes, counts, seed, class names); JSON-serialisable.
    """
    path = Path(root) / marker
    if not path.is_file():
        return False
    try:
        if json.loads(path.read_text()) == json.loads(json.dumps(settings)):
            return True
    except ValueError:
        pass
    path.unlink()
    return False


def mark_generated(root: str | os.PathLike, marker: str, settings: dict[str, Any]) -> None:
    """Record that ``root`` now holds a finished set made with ``settings`` (atomically: all or nothing)."""
    path = Path(root) / marker
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(settings))
    os.replace(tmp, path)
