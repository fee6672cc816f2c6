"""What ``OCR()`` returns per image: the lines in reading order, each with its box, text and score, and a picture
of the boxes on the image beside the recognised text."""

from __future__ import annotations

import colorsys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from ..render.fonts import font_for, load_font


@dataclass
class OCRLine:
    """One recognised line.

    Attributes:
        box: its quad, 4x2 float32 pixels, clockwise from the top-left.
        text: the recognised text.
        score: the recognizer's confidence (mean probability of its characters).
        box_score: the detector's mean probability inside the box.
    """

    box: np.ndarray
    text: str
    score: float
    box_score: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"box": np.round(self.box, 1).tolist(), "text": self.text, "score": round(float(self.score), 5),
                "box_score": round(float(self.box_score), 5)}


@dataclass
class OCRResult:
    """The OCR of one image.

    Attributes:
        lines: the lines in reading order (top to bottom, left to right).
        source: the image's path, when it came from a file.
        image: the RGB uint8 input.
    """

    lines: list[OCRLine] = field(default_factory=list)
    source: str | None = None
    image: np.ndarray | None = field(default=None, repr=False)

    @property
    def text(self) -> str:
        """The lines' texts in reading order, one per line."""
        return "\n".join(line.text for line in self.lines)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "text": self.text, "lines": [line.to_dict() for line in self.lines]}

    def plot(self) -> Image.Image:
        """The image with each line's box drawn in a colour of its own, beside a white panel that writes each
        recognised text inside the same box (Noto Sans CJK covers Chinese)."""
        image = self.image if self.image is not None else np.full((64, 64, 3), 255, np.uint8)
        h, w = image.shape[:2]
        left = Image.fromarray(image).convert("RGB")
        overlay = Image.new("RGBA", (w, h), (0, 0, 0, 0))
        right = Image.new("RGB", (w, h), (255, 255, 255))
        draw_overlay, draw_right = ImageDraw.Draw(overlay), ImageDraw.Draw(right)
        for i, line in enumerate(self.lines):
            r, g, b = (int(255 * c) for c in colorsys.hsv_to_rgb((i * 0.618) % 1.0, 0.8, 0.9))
            points = [tuple(map(float, p)) for p in line.box]
            draw_overlay.polygon(points, fill=(r, g, b, 70), outline=(r, g, b, 255), width=2)
            draw_right.polygon(points, outline=(r, g, b), width=1)
            box_h = max(float(np.linalg.norm(line.box[0] - line.box[3])), 8.0)
            box_w = max(float(np.linalg.norm(line.box[0] - line.box[1])), 8.0)
            size = max(8, int(box_h * 0.8))
            font = load_font(font_for(line.text), size)
            while size > 8 and font.getlength(line.text) > box_w * 1.1:
                size -= 1
                font = load_font(font_for(line.text), size)
            x, y = (float(v) for v in line.box[0])
            draw_right.text((x + 2, y + (box_h - size) / 2 - size * 0.15), line.text, font=font, fill=(0, 0, 0))
        left = Image.alpha_composite(left.convert("RGBA"), overlay).convert("RGB")
        canvas = Image.new("RGB", (2 * w + 8, h), (235, 235, 235))
        canvas.paste(left, (0, 0))
        canvas.paste(right, (w + 8, 0))
        return canvas

    def save(self, path: str | Path) -> Path:
        """Save :meth:`plot` as an image file (the suffix picks the format); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.plot().save(path)
        return path
