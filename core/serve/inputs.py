"""Request inputs as what the predictors take: image bytes as RGB arrays, JSON text items as texts, pairs, dicts.

An image is checked before it is decoded: PIL reads its header (format, size), an absurd size is refused, a file
that does not end as a complete JPEG or PNG does is decoded once by PIL to catch truncation, and the pixels come
from OpenCV's decoder, the one ``oarkit predict`` uses on a file (EXIF orientation included), so the server
answers what the command line does.
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any

import cv2
import numpy as np

from oarkit.core.serve.errors import RequestError

#: the largest image accepted, in pixels and per side (a bigger header is refused before any decoding)
MAX_IMAGE_PIXELS = 64_000_000
MAX_IMAGE_SIDE = 20_000
_LIMIT = f"the server takes images up to {MAX_IMAGE_SIDE} pixels a side and {MAX_IMAGE_PIXELS:,} pixels: resize it"
#: the keys of a JSON text item and what the predictor gets for them
TEXT_FORMS = ('{"text": "..."}', '{"text_a": "...", "text_b": "..."}', '{"question": "...", "context": "..."}')


def decode_image(data: bytes, what: str) -> np.ndarray:
    """An uploaded image file as RGB uint8 HxWx3.

    Args:
        data: the file's bytes.
        what: the input, for messages (``file 'cat.png'``, ``inputs[2].image``).

    Raises:
        RequestError: empty, not an image, too large, truncated or undecodable; the message says which.
    """
    from PIL import Image, UnidentifiedImageError

    if not data:
        raise RequestError(f"{what} is empty; send the image file's bytes")
    try:
        image = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as err:  # PIL's own limit, met while reading the header
        raise RequestError(f"{what} is too large an image ({err}); {_LIMIT}") from err
    except UnidentifiedImageError as err:
        raise RequestError(f"{what} is not an image file (no known image format: {len(data)} bytes starting "
                           f"{data[:8]!r}); send a PNG, JPEG, BMP or WebP file") from err
    except (OSError, ValueError) as err:
        raise RequestError(f"{what} has an unreadable image header: {err}") from err
    width, height = image.size
    if width < 1 or height < 1 or width > MAX_IMAGE_SIDE or height > MAX_IMAGE_SIDE or \
            width * height > MAX_IMAGE_PIXELS:
        raise RequestError(f"{what} is too large an image ({width}x{height} {image.format}); {_LIMIT}")
    if not _ends_complete(data, image.format):
        try:  # PIL decodes the whole file once: a truncated one fails here by name
            image.load()
        except (OSError, ValueError, SyntaxError) as err:  # PIL: "image file is truncated", broken chunks
            raise RequestError(f"{what} is a damaged {image.format} image ({err}); send the complete file") \
                from err
    array = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if array is None:
        raise RequestError(f"{what}: the {image.format} image cannot be decoded; re-encode it as PNG or JPEG")
    return cv2.cvtColor(array, cv2.COLOR_BGR2RGB)


#: how a complete file of these formats ends: JPEG's end-of-image marker (padding zeros allowed), PNG's IEND chunk
_COMPLETE_ENDINGS = {"JPEG": b"\xff\xd9", "PNG": b"IEND\xaeB`\x82"}


def _ends_complete(data: bytes, image_format: str | None) -> bool:
    """Whether a JPEG or PNG file ends as a complete one does (then OpenCV's decode alone suffices; any other
    file is decoded by PIL first, to catch truncation)."""
    ending = _COMPLETE_ENDINGS.get(image_format or "")
    return ending is not None and data.rstrip(b"\x00").endswith(ending)


def decode_base64(value: Any, what: str) -> bytes:
    """The bytes of a base64 string (standard alphabet, padding optional; a ``data:`` URL prefix is dropped).

    Raises:
        RequestError: not a string, or not base64.
    """
    if not isinstance(value, str):
        raise RequestError(f"{what} must be a base64 string of the image file, not {type(value).__name__}")
    text = value.split(",", 1)[1] if value.startswith("data:") and "," in value else value
    text = "".join(text.split())
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError) as err:
        raise RequestError(f"{what} is not valid base64 ({err}); encode the image file's bytes with base64") from err


def image_item(item: Any, index: int) -> np.ndarray:
    """A JSON input ``{"image": "<base64>"}`` as an RGB array."""
    what = f"inputs[{index}]"
    if not isinstance(item, dict) or "image" not in item:
        raise RequestError(f"{what} must be an object {{\"image\": \"<base64 of the file>\"}} for this image "
                           f"model, got {_short(item)}")
    return decode_image(decode_base64(item["image"], f"{what}.image"), f"{what}.image")


def text_item(item: Any, index: int) -> str | tuple[str, str] | dict[str, str]:
    """A JSON text input as the text predictors take it: a text, a ``(text, text_pair)`` tuple or a
    ``{"question", "context"}`` dict."""
    what = f"inputs[{index}]"
    if isinstance(item, dict):
        keys = set(item)
        if keys == {"text"}:
            return _string(item["text"], f"{what}.text")
        if keys == {"text_a", "text_b"}:
            return _string(item["text_a"], f"{what}.text_a"), _string(item["text_b"], f"{what}.text_b")
        if keys == {"question", "context"}:
            return {k: _string(item[k], f"{what}.{k}") for k in ("question", "context")}
    raise RequestError(f"{what} must be one of {', '.join(TEXT_FORMS)} for this text model, got {_short(item)}")


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise RequestError(f"{what} must be a string, not {type(value).__name__}")
    if not value.strip():
        raise RequestError(f"{what} is empty; send the text to predict")
    return value


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
