"""How verification compares an artifact's outputs with eager PyTorch's, output by output.

A comparator takes one batch's outputs of both, by output name, and returns a :class:`Difference` for each output
it judges. The number it reports (``error``) is held against the export format's tolerance (``1e-4`` for float
formats, ``0.5`` for int8) unless the comparator states a bound of its own (``Difference.tolerance``: a comparator
that knows what its number means, a score difference say), so each comparator states its error as a fraction:

- :class:`RangeRelative` (the default): equal shapes, ``max |artifact - eager| / max |eager|``.
- :class:`RaggedRows`: outputs whose row count depends on the data (rows above a threshold); equal counts, rows
  optionally put in order by a column first, then as the default.
- :class:`MatchedBoxes`: detections matched by IoU (the count may differ): ``1 - IoU`` of the worst match, or the
  fraction of boxes left unmatched; scores and labels compared on the matched pairs.
- :class:`Probabilities`: probability maps, ``max |artifact - eager|`` in probability units (their range is 1
  whatever the map holds), with the share of elements that cross the decision threshold in the note.

A task puts its comparators on :attr:`DeploySpec.compare <oarkit.core.engine.deploy_spec.DeploySpec.compare>`;
outputs none of them reports go through :class:`RangeRelative`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch

from oarkit.core.errors import ConfigError

Outputs = Mapping[str, torch.Tensor]


@dataclass
class Difference:
    """How far one output of the artifact is from eager's.

    Attributes:
        error: the number held against the format's tolerance (see the module docstring).
        max_abs: the largest absolute difference of compared values.
        note: what a failure message adds to the number (``3 rows, eager 4``).
        tolerance: the bound the comparator holds ``error`` to, in place of the format's (``None``: the format's).
    """

    error: float
    max_abs: float = 0.0
    note: str = ""
    tolerance: float | None = None

    def worse(self, other: Difference) -> Difference:
        """The worse of two differences (the larger error, with its note), keeping the larger ``max_abs``."""
        worst = other if other.error > self.error or math.isnan(other.error) else self
        return Difference(worst.error, max(self.max_abs, other.max_abs), worst.note, worst.tolerance)

    def within(self, format_tolerance: float) -> bool:
        """Whether ``error`` is within its own tolerance, or the format's when it states none (NaN is not)."""
        return self.error <= (format_tolerance if self.tolerance is None else self.tolerance)


@runtime_checkable
class OutputComparator(Protocol):
    """Compares outputs of one batch: ``(eager, artifact) -> {output name: Difference}`` for the outputs it judges."""

    def __call__(self, reference: Outputs, actual: Outputs) -> dict[str, Difference]: ...


def _float(t: torch.Tensor) -> torch.Tensor:
    return t.detach().float().cpu()


def range_relative(reference: torch.Tensor, actual: torch.Tensor) -> Difference:
    """``max |actual - reference| / max |reference|``; shapes must agree (an infinite error otherwise)."""
    if reference.shape != actual.shape:
        return Difference(math.inf, math.inf, f"shape {tuple(actual.shape)}, eager {tuple(reference.shape)}")
    ref, act = _float(reference), _float(actual)
    if not ref.numel():
        return Difference(0.0)
    diff = float((ref - act).abs().max())
    scale = float(ref.abs().max())
    return Difference(diff / scale if scale > 0 else diff, diff)


class RangeRelative:
    """Element-wise, relative to the output's range, equal shapes (the default comparator).

    Args:
        outputs: the outputs it judges (default: every output).
    """

    def __init__(self, outputs: Sequence[str] | None = None) -> None:
        self.outputs = None if outputs is None else list(outputs)

    def __call__(self, reference: Outputs, actual: Outputs) -> dict[str, Difference]:
        names = self.outputs if self.outputs is not None else list(reference)
        return {n: range_relative(reference[n], actual[n]) for n in names}


class RaggedRows:
    """Outputs with a data-dependent number of rows: the counts must agree, then rows compare as the default.

    Args:
        outputs: the ragged outputs; with ``order_by``, all must have the same rows (one row per detection).
        order_by: ``(output, column)`` whose values put the rows in order first (an index column, when the
            graph's row order is not defined); ``None``: the rows are compared in the order they come.
    """

    def __init__(self, outputs: Sequence[str], *, order_by: tuple[str, int] | None = None) -> None:
        self.outputs = list(outputs)
        self.order_by = order_by

    def _order(self, out: Outputs) -> torch.Tensor | None:
        if self.order_by is None:
            return None
        name, column = self.order_by
        key = _float(out[name])
        key = key[:, column] if key.ndim > 1 else key
        return torch.argsort(key, stable=True)

    def __call__(self, reference: Outputs, actual: Outputs) -> dict[str, Difference]:
        counts = {n: (int(reference[n].shape[0]), int(actual[n].shape[0])) for n in self.outputs}
        if any(r != a for r, a in counts.values()):
            return {n: Difference(math.inf, math.inf, f"{a} rows, eager {r}") for n, (r, a) in counts.items()}
        ref_order, act_order = self._order(reference), self._order(actual)
        out = {}
        for n in self.outputs:
            ref, act = reference[n], actual[n]
            if ref_order is not None and act_order is not None:
                ref, act = ref[ref_order], act[act_order]
            out[n] = range_relative(ref, act)
        return out


def box_iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """IoU of every box of ``a`` [N, 4] with every box of ``b`` [M, 4], both ``x1, y1, x2, y2``: [N, M]."""
    area_a = (a[:, 2] - a[:, 0]).clamp(min=0) * (a[:, 3] - a[:, 1]).clamp(min=0)
    area_b = (b[:, 2] - b[:, 0]).clamp(min=0) * (b[:, 3] - b[:, 1]).clamp(min=0)
    top_left = torch.maximum(a[:, None, :2], b[None, :, :2])
    bottom_right = torch.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = (bottom_right - top_left).clamp(min=0).prod(-1)
    union = area_a[:, None] + area_b[None, :] - inter
    return torch.where(union > 0, inter / union.clamp(min=1e-12), torch.zeros_like(inter))


class MatchedBoxes:
    """Detections of a variable count, matched greedily by IoU (eager boxes by descending score).

    A box matches the unmatched box of its own label that overlaps it most, when one reaches ``min_iou``, else
    the one of any label that does (a label change). ``boxes``' error is ``1 - IoU`` of the worst matched pair, or
    the share of boxes (of both sides) left unmatched when that is larger; ``scores``' error is the largest score
    difference of matched pairs (scores are probabilities: absolute), ``labels``' the share of matched pairs whose
    labels differ.

    Args:
        boxes: the output of ``x1, y1, x2, y2`` boxes, [N, 4].
        scores: the output of their scores [N], when there is one.
        labels: the output of their class ids [N], when there is one.
        batch_index: the output saying which image each box belongs to [N] (boxes only match within an image).
        min_iou: pairs below this IoU do not match.
        optional: the output flagging rows [N] that may stay unmatched (detections whose score sits near a cut,
            which a rounding difference keeps on one side only); a pair of two such rows is not judged.
        min_side: boxes thinner than this (in the boxes' units) are compared as if they were this wide or tall about
            their centre: the IoU of a box clipped flat at the image border, or of a random model's sliver, swings
            with float rounding (1e-4 px moves a 0.002 px box's IoU by 5%) while nobody could see the difference.
    """

    def __init__(self, boxes: str = "boxes", *, scores: str | None = None, labels: str | None = None,
                 batch_index: str | None = None, min_iou: float = 0.5, optional: str | None = None,
                 min_side: float = 0.0) -> None:
        if not 0 < min_iou <= 1:
            raise ConfigError(f"MatchedBoxes(min_iou={min_iou}) must lie in (0, 1]")
        if min_side < 0:
            raise ConfigError(f"MatchedBoxes(min_side={min_side}) must be >= 0")
        self.boxes, self.scores, self.labels, self.batch_index = boxes, scores, labels, batch_index
        self.min_iou, self.optional, self.min_side = float(min_iou), optional, float(min_side)

    def _widened(self, boxes: torch.Tensor) -> torch.Tensor:
        """``boxes`` with each side at least ``min_side`` long, about the same centre."""
        if not self.min_side:
            return boxes
        centre = (boxes[:, :2] + boxes[:, 2:]) / 2
        half = (boxes[:, 2:] - boxes[:, :2]).clamp(min=self.min_side) / 2
        return torch.cat([centre - half, centre + half], dim=1)

    def _match(self, reference: Outputs, actual: Outputs) -> list[tuple[int, int, float]]:
        ref = self._widened(_float(reference[self.boxes]).reshape(-1, 4))
        act = self._widened(_float(actual[self.boxes]).reshape(-1, 4))
        iou = box_iou(ref, act)
        if self.batch_index is not None:
            same = _float(reference[self.batch_index]).reshape(-1)[:, None] == _float(
                actual[self.batch_index]).reshape(-1)[None, :]
            iou = torch.where(same, iou, torch.full_like(iou, -1.0))
        same_label = None if self.labels is None else (
            reference[self.labels].reshape(-1).cpu()[:, None] == actual[self.labels].reshape(-1).cpu()[None, :])
        order = range(len(ref)) if self.scores is None else torch.argsort(
            _float(reference[self.scores]).reshape(-1), descending=True, stable=True).tolist()
        taken: set[int] = set()
        pairs = []
        for i in order:
            if not iou.shape[1]:
                break
            candidates = iou[i].clone()
            candidates[list(taken)] = -1.0
            if same_label is not None:
                own = torch.where(same_label[i], candidates, torch.full_like(candidates, -1.0))
                if float(own.max()) >= self.min_iou:
                    candidates = own
            j = int(candidates.argmax())
            if float(candidates[j]) >= self.min_iou:
                taken.add(j)
                pairs.append((i, j, float(candidates[j])))
        return pairs

    def _optional(self, out: Outputs) -> torch.Tensor:
        count = int(out[self.boxes].shape[0])
        if self.optional is None:
            return torch.zeros(count, dtype=torch.bool)
        return out[self.optional].reshape(-1).cpu().bool()

    def __call__(self, reference: Outputs, actual: Outputs) -> dict[str, Difference]:
        n_ref, n_act = int(reference[self.boxes].shape[0]), int(actual[self.boxes].shape[0])
        opt_ref, opt_act = self._optional(reference), self._optional(actual)
        matched = self._match(reference, actual)
        pairs = [(i, j, iou) for i, j, iou in matched if not (opt_ref[i] and opt_act[j])]
        hit_ref, hit_act = {i for i, _, _ in matched}, {j for _, j, _ in matched}
        unmatched = sum(1 for i in range(n_ref) if i not in hit_ref and not opt_ref[i]) + sum(
            1 for j in range(n_act) if j not in hit_act and not opt_act[j])
        share = unmatched / max(1, int((~opt_ref).sum()) + int((~opt_act).sum()))
        worst_iou = min((iou for _, _, iou in pairs), default=1.0)
        ref_idx = torch.tensor([i for i, _, _ in pairs], dtype=torch.long)
        act_idx = torch.tensor([j for _, j, _ in pairs], dtype=torch.long)
        box_abs = float((_float(reference[self.boxes])[ref_idx] - _float(actual[self.boxes])[act_idx]).abs().max()
                        ) if pairs else 0.0
        note = f"{n_act} boxes, eager {n_ref}, {len(matched)} matched at IoU >= {self.min_iou:g}" if unmatched else ""
        out = {self.boxes: Difference(max(1.0 - worst_iou, share), box_abs, note)}
        if self.scores is not None:
            diff = float((_float(reference[self.scores])[ref_idx] - _float(actual[self.scores])[act_idx]).abs().max()
                         ) if pairs else 0.0
            out[self.scores] = Difference(diff, diff)
        if self.labels is not None:
            differ = int((reference[self.labels][ref_idx].cpu() != actual[self.labels][act_idx].cpu()).sum()
                         ) if pairs else 0
            out[self.labels] = Difference(differ / max(1, len(pairs)), float(differ > 0),
                                          f"{differ} of {len(pairs)} matched boxes change class" if differ else "")
        if self.batch_index is not None:
            out[self.batch_index] = Difference(0.0, 0.0, "boxes are matched within each image")
        if self.optional is not None:
            out[self.optional] = Difference(0.0, 0.0, "rows near a cut may stay unmatched")
        return out


class Probabilities:
    """Probability maps: the largest absolute difference, and how many elements cross ``threshold``.

    Args:
        outputs: the probability outputs (values in [0, 1]).
        threshold: the decision threshold whose crossings the note counts (DB's binarisation threshold).
    """

    def __init__(self, outputs: Sequence[str], *, threshold: float = 0.5) -> None:
        self.outputs = list(outputs)
        self.threshold = float(threshold)

    def __call__(self, reference: Outputs, actual: Outputs) -> dict[str, Difference]:
        out = {}
        for n in self.outputs:
            if reference[n].shape != actual[n].shape:
                out[n] = range_relative(reference[n], actual[n])
                continue
            ref, act = _float(reference[n]), _float(actual[n])
            diff = float((ref - act).abs().max()) if ref.numel() else 0.0
            flips = float(((ref > self.threshold) != (act > self.threshold)).float().mean()) if ref.numel() else 0.0
            out[n] = Difference(diff, diff, f"{100 * flips:.3g}% cross {self.threshold:g}" if flips else "")
        return out


def comparators_of(compare: OutputComparator | Sequence[OutputComparator] | None) -> list[OutputComparator]:
    """A deploy spec's ``compare`` as a list."""
    if compare is None:
        return []
    return [compare] if callable(compare) else list(compare)


def compare_batch(names: Sequence[str], reference: Sequence[torch.Tensor], actual: Sequence[torch.Tensor],
                  compare: OutputComparator | Sequence[OutputComparator] | None = None) -> dict[str, Difference]:
    """Every output's :class:`Difference` on one batch: the given comparators first, then :class:`RangeRelative`.

    Raises:
        ValueError: the artifact returns another number of outputs than eager.
        ConfigError: a comparator reports an output the graph does not have.
    """
    if len(reference) != len(actual):
        raise ValueError(f"the artifact returns {len(actual)} outputs, eager returns {len(reference)}")
    ref, act = dict(zip(names, reference)), dict(zip(names, actual))
    out: dict[str, Difference] = {}
    for comparator in comparators_of(compare):
        for name, diff in comparator(ref, act).items():
            if name not in ref:
                raise ConfigError(f"{type(comparator).__name__} judges an output {name!r} the graph does not have; "
                                  f"outputs: {', '.join(names)}")
            out.setdefault(name, diff)
    rest = [n for n in names if n not in out]
    out.update(RangeRelative(rest)(ref, act))
    return {n: out[n] for n in names}
