"""Synthetic OCR data: pages with known text boxes and recognition lines, in the installed Noto fonts."""

from .corpus import CHINESE_PHRASES, ENGLISH_WORDS, random_line
from .fonts import FONTS, font_for, font_path, load_font
from .renderer import (
    LineStyle,
    RenderedPage,
    TextInstance,
    render_line,
    render_page,
    write_det_set,
    write_rec_set,
)

__all__ = ["CHINESE_PHRASES", "ENGLISH_WORDS", "FONTS", "LineStyle", "RenderedPage", "TextInstance", "font_for",
           "font_path", "load_font", "random_line", "render_line", "render_page", "write_det_set", "write_rec_set"]
