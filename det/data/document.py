"""A rendered document page for the layout model: a title, paragraphs, a figure with its caption and a table,
drawn with the DejaVu fonts Debian ships (``fonts-dejavu-core``), so the layout demo needs nothing downloaded."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from oarkit.core.errors import DataError

FONT_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu", "/usr/local/share/fonts")
WORDS = ("the", "model", "detects", "regions", "of", "a", "page", "such", "as", "text", "blocks", "titles", "figures",
         "tables", "and", "captions", "while", "reading", "order", "structure", "follow", "from", "where", "each",
         "region", "lies", "on", "layout", "analysis", "turns", "scanned", "document", "into", "parts", "that",
         "recognition", "extraction", "handle", "one", "by")


def _font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont:
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    for folder in FONT_DIRS:
        path = Path(folder) / name
        if path.is_file():
            return ImageFont.truetype(str(path), size)
    raise DataError(f"font {name} not found in {', '.join(FONT_DIRS)}; install Debian's fonts-dejavu-core")


def _paragraph(draw: ImageDraw.ImageDraw, rng: np.random.Generator, x: int, y: int, width: int, lines: int,
               font: ImageFont.FreeTypeFont) -> int:
    """Lines of random words filling ``width`` from ``(x, y)``; returns the y below them."""
    step = int(font.size * 1.45)
    for i in range(lines):
        words, text = list(rng.choice(WORDS, 40)), ""
        while words and draw.textlength(f"{text} {words[0]}".strip(), font=font) < width:
            text = f"{text} {words.pop(0)}".strip()
        if i == lines - 1:  # a paragraph's last line is shorter
            text = " ".join(text.split()[: max(2, len(text.split()) // 2)])
        draw.text((x, y), text.capitalize() if i == 0 else text, fill=(20, 20, 20), font=font)
        y += step
    return y


def render_document_page(size: tuple[int, int] = (1000, 760), seed: int = 0) -> np.ndarray:
    """An RGB uint8 page ``(height, width)``: title, two paragraphs, a bar chart with a caption, a table, a
    closing paragraph."""
    rng = np.random.default_rng(seed)
    h, w = size
    page = Image.new("RGB", (w, h), (252, 252, 250))
    draw = ImageDraw.Draw(page)
    margin, body = int(w * 0.08), _font(max(10, w // 56))
    y = int(h * 0.06)
    draw.text((margin, y), "Layout Analysis of Rendered Pages", fill=(0, 0, 0), font=_font(max(16, w // 26), True))
    y += int(h * 0.07)
    for lines in (5, 4):
        y = _paragraph(draw, rng, margin, y, w - 2 * margin, lines, body) + int(h * 0.02)
    # a bar chart and its caption
    fig_w, fig_h = int(w * 0.55), int(h * 0.2)
    fx = (w - fig_w) // 2
    draw.rectangle([fx, y, fx + fig_w, y + fig_h], outline=(60, 60, 60), width=2)
    bars = rng.uniform(0.2, 0.95, 7)
    bw = fig_w // (2 * len(bars) + 1)
    for i, v in enumerate(bars):
        bx = fx + bw * (2 * i + 1)
        draw.rectangle([bx, y + fig_h - int(v * (fig_h - 10)), bx + bw, y + fig_h - 2],
                       fill=tuple(int(c) for c in rng.integers(40, 200, 3)))
    y += fig_h + 8
    draw.text((fx, y), "Figure 1: Regions found per page type.", fill=(40, 40, 40), font=_font(max(9, w // 64)))
    y += int(h * 0.05)
    # a table
    rows, cols = 5, 4
    tw, row_h = w - 2 * margin, int(body.size * 1.8)
    for r in range(rows + 1):
        draw.line([margin, y + r * row_h, margin + tw, y + r * row_h], fill=(30, 30, 30), width=2 if r < 2 else 1)
    for c in range(cols + 1):
        draw.line([margin + c * tw // cols, y, margin + c * tw // cols, y + rows * row_h], fill=(30, 30, 30), width=1)
    for r in range(rows):
        for c in range(cols):
            cell = str(rng.choice(WORDS)) if c == 0 else f"{rng.uniform(0.5, 1):.2f}" if c < 3 else str(
                rng.integers(9, 999))
            text = ("Class", "Precision", "Recall", "Count")[c] if r == 0 else cell
            draw.text((margin + c * tw // cols + 6, y + r * row_h + 4), text, fill=(10, 10, 10),
                      font=_font(body.size, r == 0))
    y += rows * row_h + int(h * 0.04)
    _paragraph(draw, rng, margin, y, w - 2 * margin, 4, body)
    return np.asarray(page)


def prepare_document_page(root: str | os.PathLike, seed: int = 0) -> Path:
    """Write :func:`render_document_page` to ``root/page.png`` and return ``root``."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    Image.fromarray(render_document_page(seed=seed)).save(root / "page.png")
    return root
