"""A text renderer: detection pages whose text boxes and transcriptions are known, and recognition lines.

Pages and lines are drawn with PIL in the installed Noto fonts (:mod:`oarkit.ocr.render.fonts`), seeded so the
same arguments give the same pixels. They serve the tests, the demo and users who want synthetic data of their own
(``oarkit prepare-data ocr_det`` / ``ocr_rec``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageDraw

from .corpus import random_line
from .fonts import font_for, load_font


@dataclass
class TextInstance:
    """One text region: its transcription, its quad (4x2 points, clockwise from the top-left) and whether it is
    ignored in training and evaluation (PaddleOCR's ``###``)."""

    text: str
    points: np.ndarray
    ignore: bool = False

    def to_label(self) -> dict[str, object]:
        """The entry of a PaddleOCR detection label."""
        return {"transcription": "###" if self.ignore else self.text,
                "points": np.round(self.points).astype(int).tolist()}


@dataclass
class RenderedPage:
    """A rendered page: the RGB image and its text regions."""

    image: np.ndarray
    lines: list[TextInstance] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The page's text, line by line, top to bottom."""
        return "\n".join(line.text for line in self.lines)

    def label_json(self) -> str:
        """The page's PaddleOCR detection label (the part after the tab)."""
        return json.dumps([line.to_label() for line in self.lines], ensure_ascii=False)


@dataclass
class LineStyle:
    """How a line looks: colours, noise, blur, slant and letter spacing (a domain of lines)."""

    background: tuple[int, int] = (200, 255)   # grey-level range of the background
    foreground: tuple[int, int] = (0, 80)      # grey-level range of the text
    noise: float = 4.0                         # std of Gaussian pixel noise
    blur: float = 0.0                          # Gaussian blur sigma (0: none)
    color: bool = True                         # random hues rather than greys
    spacing: int = 0                           # extra pixels between characters
    dots: int = 0                              # dot-matrix print: the dot pitch in pixels (0: solid strokes)


def _colours(rng: random.Random, style: LineStyle) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    def pick(lo_hi: tuple[int, int]) -> tuple[int, int, int]:
        base = rng.randint(*lo_hi)
        if not style.color:
            return (base, base, base)
        return tuple(int(np.clip(base + rng.randint(-25, 25), 0, 255)) for _ in range(3))  # type: ignore[return-value]

    return pick(style.background), pick(style.foreground)


def _finish(image: np.ndarray, rng: random.Random, style: LineStyle) -> np.ndarray:
    out = image.astype(np.float32)
    if style.blur > 0:
        out = cv2.GaussianBlur(out, (0, 0), style.blur)
    if style.noise > 0:
        out += np.random.default_rng(rng.getrandbits(32)).normal(0, style.noise, out.shape)
    return np.clip(out, 0, 255).astype(np.uint8)


def _draw_text(draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, font, fill, spacing: int) -> None:
    if spacing <= 0:
        draw.text(xy, text, font=font, fill=fill)
        return
    x, y = xy
    for ch in text:
        draw.text((x, y), ch, font=font, fill=fill)
        x += font.getlength(ch) + spacing


def _text_extent(text: str, font, spacing: int) -> tuple[int, int, int, int]:
    """The ink box ``(left, top, right, bottom)`` of ``text`` drawn at the origin."""
    left, top, right, bottom = font.getbbox(text)
    if spacing > 0:
        right += spacing * max(len(text) - 1, 0)
    return int(left), int(top), int(np.ceil(right)), int(np.ceil(bottom))


def render_line(text: str, *, height: int = 48, seed: int = 0, style: LineStyle | None = None,
                bold: bool = False) -> np.ndarray:
    """A recognition line: ``text`` on a background, ``height`` pixels tall, as wide as the text needs.

    Args:
        text: the transcription (Latin, Chinese or both; the font is chosen to cover it).
        height: the image height; the text is about three quarters of it.
        seed: randomises colours, margins and noise.
        style: the line's look (default: dark text on light, mild noise).
        bold: bold type.
    """
    rng = random.Random(seed)
    style = style or LineStyle()
    size = max(8, int(height * rng.uniform(0.62, 0.78)))
    font = load_font(font_for(text, bold=bold), size)
    left, top, right, bottom = _text_extent(text, font, style.spacing)
    margin_x = rng.randint(2, max(3, height // 4))
    width = right - left + 2 * margin_x
    background, foreground = _colours(rng, style)
    image = Image.new("RGB", (max(width, height // 2), height), background)
    y = (height - (bottom - top)) / 2 - top + rng.uniform(-1.5, 1.5)
    if style.dots > 0:
        mask = Image.new("L", image.size, 0)
        _draw_text(ImageDraw.Draw(mask), (margin_x - left, y), text, font, 255, style.spacing)
        _dot_matrix(image, np.asarray(mask), style.dots, foreground)
    else:
        _draw_text(ImageDraw.Draw(image), (margin_x - left, y), text, font, foreground, style.spacing)
    return _finish(np.asarray(image), rng, style)


def _dot_matrix(image: Image.Image, mask: np.ndarray, pitch: int, colour: tuple[int, int, int]) -> None:
    """Draw ``mask``'s strokes as round dots on a grid of ``pitch`` pixels (a dot-matrix printer's marks)."""
    draw = ImageDraw.Draw(image)
    h, w = mask.shape
    radius = max(1.0, pitch * 0.42)
    for gy in range(0, h - pitch + 1, pitch):
        for gx in range(0, w - pitch + 1, pitch):
            if mask[gy:gy + pitch, gx:gx + pitch].mean() > 255 * 0.3:
                cx, cy = gx + pitch / 2, gy + pitch / 2
                draw.ellipse((cx - radius, cy - radius, cx + radius, cy + radius), fill=colour)


def render_page(texts: Sequence[str] | int = 6, *, size: tuple[int, int] = (480, 640), language: str = "en",
                seed: int = 0, font_size: tuple[int, int] = (22, 40), angle: float = 0.0,
                style: LineStyle | None = None) -> RenderedPage:
    """A page of text lines in rows, each with its exact quad.

    Args:
        texts: the lines, or how many random lines in ``language`` to draw (those too wide are shortened).
        size: ``(height, width)``.
        language: ``en``, ``ch`` or ``mixed`` for random lines.
        seed: randomises text, positions, sizes, colours.
        font_size: the range of type sizes in pixels.
        angle: rotate the page by up to this many degrees (quads follow).
        style: colours and noise (default: dark text on a light page).
    """
    rng = random.Random(seed)
    style = style or LineStyle()
    h, w = size
    lines = list(texts) if not isinstance(texts, int) else [random_line(rng, language) for _ in range(texts)]
    background, _ = _colours(rng, style)
    image = Image.new("RGB", (w, h), background)
    draw = ImageDraw.Draw(image)
    instances: list[TextInstance] = []
    y = rng.randint(8, 24)
    margin = 12
    for text in lines:
        fsize = rng.randint(*font_size)
        font = load_font(font_for(text), fsize)
        while True:
            left, top, right, bottom = _text_extent(text, font, 0)
            if right - left <= w - 2 * margin or len(text) <= 1:
                break
            text = text[:-1].rstrip()
        tw, th = right - left, bottom - top
        if y + th + margin > h:
            break
        x = rng.randint(margin, max(margin, w - margin - tw))
        _, fg = _colours(rng, style)
        draw.text((x - left, y - top), text, font=font, fill=fg)
        pad = max(1, th // 8)
        quad = np.array([[x - pad, y - pad], [x + tw + pad, y - pad], [x + tw + pad, y + th + pad],
                         [x - pad, y + th + pad]], dtype=np.float32)
        instances.append(TextInstance(text=text, points=quad))
        y += th + rng.randint(max(6, th // 2), th + 12)
    array = np.asarray(image)
    if angle:
        theta = rng.uniform(-angle, angle)
        matrix = cv2.getRotationMatrix2D((w / 2, h / 2), theta, 1.0)
        array = cv2.warpAffine(array, matrix, (w, h), borderMode=cv2.BORDER_REPLICATE, flags=cv2.INTER_LINEAR)
        for inst in instances:
            pts = np.concatenate([inst.points, np.ones((4, 1), np.float32)], axis=1) @ matrix.T
            inst.points = pts.astype(np.float32)
    return RenderedPage(image=_finish(array, rng, style), lines=instances)


def write_det_set(root: str | Path, *, train: int = 16, val: int = 4, size: tuple[int, int] = (320, 320),
                  language: str = "en", lines: int = 5, seed: int = 0, angle: float = 0.0) -> Path:
    """Write a detection set in PaddleOCR's layout: ``images/`` and ``train.txt`` / ``val.txt`` label files
    (``path\\t[{"transcription": ..., "points": ...}]``). Returns ``root``."""
    root = Path(root)
    (root / "images").mkdir(parents=True, exist_ok=True)
    for split, count, offset in (("train", train, 0), ("val", val, 100_000)):
        rows = []
        for i in range(count):
            page = render_page(lines, size=size, language=language, seed=seed + offset + i, angle=angle)
            name = f"images/{split}_{i:05d}.jpg"
            cv2.imwrite(str(root / name), cv2.cvtColor(page.image, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 95])
            rows.append(f"{name}\t{page.label_json()}")
        (root / f"{split}.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root


def write_rec_set(root: str | Path, *, train: int = 64, val: int = 16, height: int = 48, language: str = "en",
                  seed: int = 0, style: LineStyle | None = None, texts: Sequence[str] | None = None) -> Path:
    """Write a recognition set in PaddleOCR's layout: ``images/`` and ``train.txt`` / ``val.txt`` lists
    (``path\\tlabel``). ``texts`` (cycled) replaces the random lines. Returns ``root``."""
    root = Path(root)
    (root / "images").mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    for split, count, offset in (("train", train, 0), ("val", val, 100_000)):
        rows = []
        for i in range(count):
            text = texts[(i + offset) % len(texts)] if texts else random_line(rng, language)
            image = render_line(text, height=height, seed=seed + offset + i, style=style)
            name = f"images/{split}_{i:05d}.png"
            cv2.imwrite(str(root / name), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
            rows.append(f"{name}\t{text}")
        (root / f"{split}.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root
