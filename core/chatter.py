"""Keeping third-party chatter down: libraries that log every internal pass at INFO."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator


@contextlib.contextmanager
def quiet_loggers(*names: str, level: int = logging.WARNING) -> Iterator[None]:
    """Raise the level of the loggers ``names`` (and their children) for the duration of the block."""
    saved = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(level)
    try:
        yield
    finally:
        for n, lvl in saved.items():
            logging.getLogger(n).setLevel(lvl)
