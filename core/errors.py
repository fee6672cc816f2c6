"""Exceptions raised by oarkit, each carrying a message that names the problem and the fix."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class OarkitError(Exception):
    """Base class of every error oarkit raises on purpose."""


class UnknownNameError(OarkitError, KeyError):
    """A registry name (model, export format, ...) that does not exist."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class ConfigError(OarkitError, ValueError):
    """A configuration that cannot be run: unknown key, bad type or value, refused target."""


class WeightsError(OarkitError, RuntimeError):
    """Pretrained weights that cannot be found, fetched, verified or loaded."""


class WeightsUnavailableError(WeightsError):
    """Registered weights that are not here and cannot be fetched (offline, download failed, the package that
    ships them is not installed): ``pretrained="auto"`` trains from scratch instead."""


class DataError(OarkitError, ValueError):
    """A dataset that cannot be read: missing folder, malformed list, corrupt image."""


class DataCheckError(DataError):
    """The dataset doctor found problems that stop training; ``report`` holds its full report."""

    def __init__(self, message: str, *, report: object = None) -> None:
        super().__init__(message)
        self.report = report


class TrainingError(OarkitError, RuntimeError):
    """Training cannot go on (for example a non-finite loss)."""


def closest(name: str, choices: Iterable[str], n: int = 3, cutoff: float = 0.5) -> list[str]:
    """The closest matches of ``name`` in ``choices``, best first."""
    choices = list(choices)
    found = difflib.get_close_matches(name, choices, n=n, cutoff=cutoff)
    if not found:
        # Fall back on the part after a namespace prefix ("clas/resnet5" vs "resnet50_vd").
        tail = name.rsplit("/", 1)[-1]
        found = [c for c in choices if tail and tail in c][:n]
    return found


def did_you_mean(name: str, choices: Iterable[str], n: int = 3) -> str:
    """A ``" Did you mean 'a', 'b'?"`` suffix, or an empty string when nothing is close."""
    found = closest(name, choices, n=n)
    return " Did you mean " + ", ".join(repr(f) for f in found) + "?" if found else ""
