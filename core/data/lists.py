"""List files (PaddleClas / PaddleSeg ``train.txt``): finding them relative to a dataset root."""

from __future__ import annotations

import os
from pathlib import Path

from oarkit.core.errors import DataError


def resolve_list_file(root: str | os.PathLike, list_file: str | os.PathLike, *, line_form: str) -> Path:
    """Find a list file: absolute as given, otherwise inside ``root`` first, then relative to the working dir.

    Args:
        root: the dataset root.
        list_file: the list file's path as configured.
        line_form: the form of its lines, for the error message (``"relative/path.jpg label"``).

    Raises:
        DataError: no candidate exists; the message names every path tried.
    """
    path = Path(list_file)
    candidates = [path] if path.is_absolute() else [Path(root) / path, path]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise DataError(f"List file {' or '.join(map(str, candidates))} does not exist; expected a text file of lines "
                    f"{line_form}")
