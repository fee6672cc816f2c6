"""Pictures of detections: labelled boxes drawn on the image, one colour per class."""

from __future__ import annotations

import colorsys
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np


def class_color(class_id: int) -> tuple[int, int, int]:
    """A bright RGB colour per class, spread around the hue circle by the golden ratio."""
    hue = (class_id * 0.618033988749895) % 1.0
    r, g, b = colorsys.hsv_to_rgb(hue, 0.85, 0.95)
    return int(r * 255), int(g * 255), int(b * 255)


def draw_detections(image: np.ndarray, boxes: np.ndarray, scores: np.ndarray, class_ids: np.ndarray,
                    labels: Sequence[str], *, thickness: int | None = None) -> np.ndarray:
    """A copy of the RGB uint8 ``image`` with each box drawn and captioned ``label score``."""
    canvas = np.ascontiguousarray(image.copy())
    h, w = canvas.shape[:2]
    thickness = thickness or max(1, round(min(h, w) / 300))
    font_scale = max(0.3, min(h, w) / 1600)
    for box, score, cls in sorted(zip(boxes.tolist(), scores.tolist(), class_ids.tolist()), key=lambda t: t[1]):
        color = class_color(int(cls))
        x1, y1, x2, y2 = (int(round(v)) for v in box)
        cv2.rectangle(canvas, (x1, y1), (x2, y2), color, thickness)
        name = labels[int(cls)] if 0 <= int(cls) < len(labels) else str(int(cls))
        text = f"{name} {score:.2f}"
        (tw, th), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, font_scale, 1)
        top = y1 - th - base - 2 if y1 - th - base - 2 >= 0 else y1
        cv2.rectangle(canvas, (x1, top), (x1 + tw + 2, top + th + base + 2), color, -1)
        cv2.putText(canvas, text, (x1 + 1, top + th + 1), cv2.FONT_HERSHEY_SIMPLEX, font_scale, (0, 0, 0), 1,
                    cv2.LINE_AA)
    return canvas


def save_image(image: np.ndarray, path: str | Path) -> Path:
    """Write an RGB uint8 image (PNG, JPEG, ... by suffix; PNG when there is none) and return its path."""
    path = Path(path)
    if not path.suffix:
        path = path.with_suffix(".png")
    path.parent.mkdir(parents=True, exist_ok=True)
    ok, data = cv2.imencode(path.suffix, cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    if not ok:
        raise ValueError(f"cannot encode an image as {path.suffix}; use .png or .jpg")
    data.tofile(str(path))
    return path
