"""PDF pages as images, rendered with pypdfium2 (PDFium, the engine of Chrome's viewer)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from oarkit.core.deploy.optional import require
from oarkit.core.errors import DataError


def is_pdf(path: str | Path) -> bool:
    """Whether a path names a PDF (by its first bytes, whatever its suffix)."""
    try:
        with open(path, "rb") as f:
            return f.read(5) == b"%PDF-"
    except OSError:
        return False


def pdf_pages(path: str | Path, *, dpi: float = 144.0) -> Iterator[np.ndarray]:
    """Each page of a PDF as an RGB uint8 array rendered at ``dpi``.

    Raises:
        DataError: the file is not a PDF PDFium can open (encrypted, damaged), named.
    """
    pdfium = require("pypdfium2", purpose="reading PDF pages (oarkit doc)")
    try:
        document = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as error:
        raise DataError(f"{path}: PDFium cannot open it ({error}); is it a damaged or password-protected PDF?") \
            from error
    try:
        if len(document) == 0:
            raise DataError(f"{path} has no pages")
        for index in range(len(document)):
            bitmap = document[index].render(scale=dpi / 72.0)
            yield np.asarray(bitmap.to_pil().convert("RGB"))  # PDFium draws BGR(A); PIL's conversion reads it right
    finally:
        document.close()
