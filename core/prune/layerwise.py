"""Layer-wise pruning ratios from a sensitivity table (``prune.sensitivity=``), as PaddleSlim's
``get_ratios_by_loss``: under a threshold on the metric loss, every group loses the largest share of its channels
whose loss (interpolated between the ratios the table measured) stays under it; :func:`prune_to_flops
<oarkit.core.prune.channels.prune_to_flops>` bisects the threshold until the model's FLOPs meet the target.

Two choices beyond PaddleSlim's. A layer's loss curve starts at (0, 0) and is made non-decreasing (its running
maximum: a larger ratio never counts as cheaper than a smaller one), plus a tie-breaking slope of 1 % of the
table's largest loss over the ratio, so that layers whose metric does not move are pruned evenly rather than all
at once. A group the table does not name (``--layers`` left it out) keeps its width.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from oarkit.core.errors import ConfigError

#: the tie-breaking slope, as a share of the table's largest loss (see the module docstring)
TIE_SLOPE = 0.01


@dataclasses.dataclass
class SensitivityTable:
    """Per-layer loss curves read from a ``sensitivity.json`` that ``oarkit prune-sensitivity`` wrote.

    Attributes:
        path: the file.
        method: the importance criterion the table was measured with.
        metric: the metric's name.
        curves: per root layer path, the ratios (from 0) and the effective losses at them (see the module
            docstring): both increasing.
    """

    path: str
    method: str
    metric: str
    curves: dict[str, tuple[np.ndarray, np.ndarray]]

    @classmethod
    def load(cls, path: str | Path) -> SensitivityTable:
        """Read a table.

        Raises:
            ConfigError: the file is missing, is not JSON, or holds no per-layer ratios and losses.
        """
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except OSError as err:
            raise ConfigError(f"prune.sensitivity={str(path)!r} cannot be read ({err}); write it with "
                              "`oarkit prune-sensitivity RUN`") from err
        except json.JSONDecodeError as err:
            raise ConfigError(f"prune.sensitivity={str(path)!r} is not JSON ({err})") from err
        layers = data.get("layers") if isinstance(data, dict) else None
        if not isinstance(layers, dict) or not layers:
            raise ConfigError(f"prune.sensitivity={str(path)!r} holds no 'layers'; it must be the sensitivity.json "
                              "that `oarkit prune-sensitivity` writes")
        raw: dict[str, tuple[list[float], list[float]]] = {}
        for name, entry in layers.items():
            ratios, losses = entry.get("ratios"), entry.get("loss")
            if (not isinstance(ratios, list) or not isinstance(losses, list) or len(ratios) != len(losses)
                    or not all(isinstance(v, (int, float)) for v in [*ratios, *losses])
                    or not all(0.0 < r < 1.0 for r in ratios)):
                raise ConfigError(f"prune.sensitivity={str(path)!r}: layer {name!r} needs 'ratios' in (0, 1) and as "
                                  "many numbers in 'loss'")
            raw[name] = ([float(r) for r in ratios], [float(v) for v in losses])
        return cls(str(path), str(data.get("method", "")), str(data.get("metric", "")), _curves(raw))

    @property
    def max_threshold(self) -> float:
        """The threshold at which every layer is at the largest ratio the table measured."""
        return max(float(losses[-1]) for _, losses in self.curves.values())

    def ratios_at(self, threshold: float, layers: Iterable[str] | None = None) -> dict[str, float]:
        """Each layer's share of channels to remove under ``threshold`` (only those in ``layers`` when given)."""
        names = self.curves if layers is None else [n for n in layers if n in self.curves]
        return {n: float(np.interp(threshold, self.curves[n][1], self.curves[n][0])) for n in names}


def _curves(raw: dict[str, tuple[list[float], list[float]]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The effective curves: from (0, 0), sorted by ratio, running maximum of the loss, plus the tie slope."""
    largest = max([0.0, *(max(losses, default=0.0) for _, losses in raw.values())])
    slope = TIE_SLOPE * largest if largest > 0 else 1.0
    curves = {}
    for name, (ratios, losses) in raw.items():
        order = np.argsort(ratios)
        r = np.concatenate([[0.0], np.asarray(ratios)[order]])
        loss = np.maximum.accumulate(np.concatenate([[0.0], np.asarray(losses)[order]]))
        curves[name] = (r, loss + slope * r)
    return curves


def table_record(table: SensitivityTable, ratios: dict[str, float], threshold: float) -> dict[str, Any]:
    """What meta.json's ``prune`` records of a layer-wise pruning: the table, the threshold, each group's ratio."""
    return {"sensitivity": table.path, "sensitivity_method": table.method, "loss_threshold": round(threshold, 6),
            "layer_ratios": {n: round(r, 6) for n, r in ratios.items()}}
