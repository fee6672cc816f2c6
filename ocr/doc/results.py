"""What :class:`~oarkit.ocr.doc.DocParser` returns: the pages of a document with their blocks in reading order,
as Markdown, HTML and JSON, saved with the figure crops and a picture of each page's numbered blocks."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from ..render.fonts import load_font
from .blocks import KINDS, DocBlock
from .markdown import document_html, page_markdown

#: a colour per block kind for the pictures
KIND_COLOURS = {
    "title": (214, 39, 40), "text": (31, 119, 180), "figure": (44, 160, 44), "figure_caption": (152, 223, 138),
    "table": (255, 127, 14), "table_caption": (255, 187, 120), "header": (127, 127, 127), "footer": (127, 127, 127),
    "reference": (148, 103, 189), "equation": (227, 119, 194),
}
FORMATS = ("markdown", "json", "html")


@dataclass
class DocPage:
    """One page: its blocks (body in reading order, then headers and footers) and its pixels."""

    index: int
    blocks: list[DocBlock]
    image: np.ndarray = field(repr=False)
    seconds: float = 0.0

    @property
    def size(self) -> tuple[int, int]:
        return int(self.image.shape[0]), int(self.image.shape[1])

    @property
    def markdown(self) -> str:
        return page_markdown(self.blocks)

    def to_dict(self) -> dict[str, Any]:
        return {"page": self.index, "size": list(self.size), "seconds": round(self.seconds, 3),
                "blocks": [b.to_dict() for b in self.blocks]}

    def plot(self) -> Image.Image:
        """The page with each block framed in its kind's colour and numbered in reading order (headers and
        footers unnumbered), and a legend of the kinds present."""
        page = Image.fromarray(self.image).convert("RGB")
        overlay = Image.new("RGBA", page.size, (0, 0, 0, 0))
        draw = ImageDraw.Draw(overlay)
        font = load_font("latin-bold", max(12, page.size[0] // 70))
        for block in self.blocks:
            r, g, b = KIND_COLOURS.get(block.kind, (0, 0, 0))
            draw.rectangle(block.box, fill=(r, g, b, 40), outline=(r, g, b, 255), width=2)
            tag = str(block.order + 1) if block.order is not None else block.kind
            x, y = block.box[0], block.box[1]
            tw = draw.textlength(tag, font=font)
            draw.rectangle([x, y - font.size - 4, x + tw + 8, y], fill=(r, g, b, 230))
            draw.text((x + 4, y - font.size - 3), tag, font=font, fill=(255, 255, 255, 255))
        page = Image.alpha_composite(page.convert("RGBA"), overlay).convert("RGB")
        kinds = [k for k in KINDS if any(b.kind == k for b in self.blocks)]
        legend_font = load_font("latin", max(12, page.size[0] // 70))
        row = legend_font.size + 10
        canvas = Image.new("RGB", (page.size[0], page.size[1] + row * ((len(kinds) + 3) // 4) + 10), "white")
        canvas.paste(page, (0, 0))
        draw = ImageDraw.Draw(canvas)
        for i, kind in enumerate(kinds):
            x, y = 10 + (i % 4) * (page.size[0] // 4), page.size[1] + 8 + (i // 4) * row
            draw.rectangle([x, y + 2, x + legend_font.size, y + 2 + legend_font.size], fill=KIND_COLOURS[kind])
            draw.text((x + legend_font.size + 6, y), kind, font=legend_font, fill=(30, 30, 30))
        return canvas


@dataclass
class DocResult:
    """A parsed document (an image is a document of one page).

    Attributes:
        pages: the pages in order.
        source: the file it came from, when it came from one.
    """

    pages: list[DocPage]
    source: str | None = None

    @property
    def stem(self) -> str:
        return Path(self.source).stem if self.source else "document"

    @property
    def blocks(self) -> list[DocBlock]:
        """Every page's blocks, page after page."""
        return [b for page in self.pages for b in page.blocks]

    @property
    def markdown(self) -> str:
        """The document's body as Markdown, page after page."""
        return "\n\n".join(m for m in (page.markdown for page in self.pages) if m) + "\n"

    @property
    def html(self) -> str:
        return document_html([page.blocks for page in self.pages], self.stem)

    def to_dict(self) -> dict[str, Any]:
        """``{"source", "pages": [{"page", "size", "seconds", "blocks": [{"class", "label", "box", "score",
        "order", "text", ("level"), ("table": {"html", "cells", ...}), ("image")}]}]}``."""
        return {"source": self.source, "pages": [page.to_dict() for page in self.pages]}

    def save(self, out: str | Path, formats: tuple[str, ...] | list[str] = FORMATS) -> dict[str, Path]:
        """Write ``<stem>.md`` / ``.json`` / ``.html`` (those in ``formats``), the figure and equation crops the
        Markdown links to (``imgs/``), and ``<stem>_layout.png`` (``<stem>_p<n>_layout.png`` per page of a
        multi-page document) into ``out``; returns the written files by role."""
        unknown = sorted(set(formats) - set(FORMATS))
        if unknown:
            raise ValueError(f"unknown output format(s) {', '.join(unknown)}; the formats are {', '.join(FORMATS)}")
        out = Path(out)
        (out / "imgs").mkdir(parents=True, exist_ok=True)
        written: dict[str, Path] = {}
        for page in self.pages:
            for block in page.blocks:
                if block.image:
                    Image.fromarray(block.crop(page.image)).save(out / block.image)
            suffix = f"_p{page.index + 1}" if len(self.pages) > 1 else ""
            picture = out / f"{self.stem}{suffix}_layout.png"
            page.plot().save(picture)
            written[f"layout{suffix}"] = picture
        texts = {"markdown": (".md", self.markdown), "html": (".html", self.html),
                 "json": (".json", json.dumps(self.to_dict(), ensure_ascii=False, indent=1))}
        for fmt in formats:
            suffix, text = texts[fmt]
            path = out / f"{self.stem}{suffix}"
            tmp = path.with_suffix(suffix + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
            written[fmt] = path
        return written
