"""int8 export of the OCR models: what is quantized, and how an int8 artifact is judged against eager PyTorch.

What is quantized (:func:`int8_export_options`, the tasks' ``DeploySpec.export_options``): convolutions (and a
recognizer's matrix products) only, so that the outputs' last layers, softmax and sigmoid stay float (a uint8
probability moves in steps of 1/255 and crossed the classifier's 0.9 turn threshold), and with 7-bit weights
(``reduce_range``): onnxruntime's u8s8 kernels on CPUs without VNNI (AVX2) saturate 16-bit pair sums with 8-bit
weights, which turned a line the eager classifier gives 0.998 for 180 degrees into 0.71. Saturation depends on
the CPU that runs the artifact, not the one that exports it, so OCR artifacts always use 7-bit weights.

How it is judged: by the decisions its outputs drive.

An int8 artifact cannot match float outputs element by element (a probability map of a text detector moves by up
to 1.0 at a few text-border pixels, and a recognizer's per-step probabilities at the padded ends of lines), yet it
is only wrong where it changes what the post-processing does with them. These comparators (the tasks'
``DeploySpec.quantized_compare``) count exactly that, each with a bound of its own:

- :class:`ThresholdAgreement`: the share of values on the other side of a decision threshold (DB's binarisation
  threshold of the probability map; the orientation classifier's 0.9 on the 180-degree probability);
- :class:`DecodedTextAgreement`: the character error rate of the lines a recognizer's greedy CTC decoding reads
  from the artifact's probabilities, against those it reads from eager's (a step that moves between a character
  and the blank next to it reads the same).

Float artifacts keep the element-wise comparison (``DeploySpec.compare``); the task metric on real data (hmean,
line accuracy) judges both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from oarkit.core.export.compare import Difference, Outputs

from .charset import CharDictionary
from .metrics import edit_distance
from .postprocess.ctc import ctc_greedy_decode


def int8_export_options(op_types: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The ``onnx_int8`` options of an OCR model (see the module): only ``op_types`` quantized, 7-bit weights."""
    return {"onnx_int8": {"op_types": list(op_types), "reduce_range": True}}


def _pair(reference: Outputs, actual: Outputs, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    return reference[name].detach().float().cpu(), actual[name].detach().float().cpu()


class ThresholdAgreement:
    """The share of values that land on the other side of ``threshold`` (``error``), bounded by ``tolerance``.

    Args:
        outputs: the outputs it judges (probabilities).
        threshold: the decision threshold of the post-processing.
        tolerance: the largest accepted share of changed decisions.
        column: judge only this index of the last axis (the ``180`` probability of ``[B, 2]``); ``None``: all.
    """

    def __init__(self, outputs: Sequence[str], *, threshold: float, tolerance: float, column: int | None = None
                 ) -> None:
        self.outputs, self.threshold, self.tolerance, self.column = list(outputs), float(threshold), \
            float(tolerance), column

    def __call__(self, reference: Outputs, actual: Outputs) -> dict[str, Difference]:
        out = {}
        for name in self.outputs:
            ref, act = _pair(reference, actual, name)
            if ref.shape != act.shape:
                out[name] = Difference(1.0, float("inf"), f"shape {tuple(act.shape)}, eager {tuple(ref.shape)}",
                                       self.tolerance)
                continue
            if self.column is not None:
                ref, act = ref[..., self.column], act[..., self.column]
            if not ref.numel():
                out[name] = Difference(0.0, 0.0, tolerance=self.tolerance)
                continue
            changed = float(((ref > self.threshold) != (act > self.threshold)).float().mean())
            out[name] = Difference(changed, float((ref - act).abs().max()),
                                   f"{100 * changed:.3g}% of the values cross {self.threshold:g}", self.tolerance)
        return out


class DecodedTextAgreement:
    """A recognizer's lines as greedy CTC decoding reads them: the character error rate of the artifact's text
    against eager's text (``error``: summed edit distance over eager's characters), bounded by ``tolerance``.

    Args:
        output: the ``[B, T, C]`` probabilities it judges.
        dictionary: the recognizer's classes.
        tolerance: the largest accepted character error rate against eager.
        ignore_space: compare without spaces, as the line-accuracy metric does (PaddleOCR's default): int8 moves
            the spaces a recognizer predicts in the padding at the ends of lines.
        min_score: judge only the lines eager reads with at least this score (the pipeline's ``drop_score``
            leaves the others out; verification's random-noise lines read as low-scoring garbage).
    """

    def __init__(self, output: str, *, dictionary: CharDictionary, tolerance: float, ignore_space: bool = True,
                 min_score: float = 0.5) -> None:
        self.output, self.dictionary, self.tolerance = output, dictionary, float(tolerance)
        self.ignore_space, self.min_score = bool(ignore_space), float(min_score)

    def _read(self, probs: torch.Tensor) -> list[tuple[str, float]]:
        lines = ctc_greedy_decode(probs, self.dictionary)
        return [(d.text.replace(" ", "") if self.ignore_space else d.text, d.score) for d in lines]

    def __call__(self, reference: Outputs, actual: Outputs) -> dict[str, Difference]:
        ref, act = _pair(reference, actual, self.output)
        if ref.shape != act.shape:
            return {self.output: Difference(1.0, float("inf"), f"shape {tuple(act.shape)}, eager {tuple(ref.shape)}",
                                            self.tolerance)}
        if not ref.numel():
            return {self.output: Difference(0.0, 0.0, tolerance=self.tolerance)}
        pairs = [(text, ours) for (text, score), (ours, _) in zip(self._read(ref), self._read(act))
                 if score >= self.min_score]
        errors = sum(edit_distance(a, b) for a, b in pairs)
        cer = errors / max(1, sum(len(a) for a, _ in pairs))
        changed = sum(a != b for a, b in pairs)
        note = f"{changed} of {len(pairs)} lines read otherwise, CER {100 * cer:.3g}% against eager" if changed else ""
        return {self.output: Difference(cer if errors else 0.0, float((ref - act).abs().max()), note,
                                        self.tolerance)}
