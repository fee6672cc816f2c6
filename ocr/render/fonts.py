"""The fonts text is rendered and drawn in: the OFL Noto fonts that ``make install`` installs from the registry
(``manimgx-fonts``: Noto Sans; ``manimgx-fonts-cjk``: Noto Sans CJK), never whatever a machine happens to have."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from PIL import ImageFont

from oarkit.core.errors import ConfigError

from ..packaged import package_file

#: font name -> (package, file, collection index, variation); Noto Sans CJK's collection: 2 is Simplified Chinese
FONTS = {
    "latin": ("manimgx_fonts", "NotoSans[wght].ttf", 0, b"Regular"),
    "latin-bold": ("manimgx_fonts", "NotoSans[wght].ttf", 0, b"Bold"),
    "latin-italic": ("manimgx_fonts", "NotoSans-Italic[wght].ttf", 0, b"Regular"),
    "cjk": ("manimgx_fonts_cjk", "NotoSansCJK-VF.otf.ttc", 2, b"Regular"),
    "cjk-bold": ("manimgx_fonts_cjk", "NotoSansCJK-VF.otf.ttc", 2, b"Bold"),
}


def font_path(name: str) -> Path:
    """The file of a font by name (see :data:`FONTS`).

    Raises:
        ConfigError: an unknown name, or its package is not installed (the message gives the pip command).
    """
    if name not in FONTS:
        raise ConfigError(f"unknown font {name!r}; fonts: {', '.join(FONTS)}")
    package, file, _, _ = FONTS[name]
    return package_file(package, file, what=f"the font {name!r}")


@lru_cache(maxsize=64)
def load_font(name: str, size: int) -> ImageFont.FreeTypeFont:
    """A PIL font by name and pixel size, at its named variation (variable fonts default to their thinnest)."""
    _, _, index, variation = FONTS.get(name, (None, None, 0, None))
    font = ImageFont.truetype(str(font_path(name)), int(size), index=index)
    if variation is not None:
        font.set_variation_by_name(variation)
    return font


def font_for(text: str, *, bold: bool = False) -> str:
    """The font that has glyphs for ``text``: ``cjk`` when it holds a character beyond Latin scripts."""
    cjk = any(ord(c) > 0x2E7F for c in text)
    return ("cjk" if cjk else "latin") + ("-bold" if bold else "")
