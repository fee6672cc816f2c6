"""DB training targets (PaddleOCR's ``MakeShrinkMap`` and ``MakeBorderMap``).

The shrink map marks each text polygon shrunk by ``D = A (1 - r^2) / L`` (area ``A``, perimeter ``L``, ratio
``r``, pyclipper offsets); its mask leaves out ignored and too-small regions. The threshold map rises from
``thresh_min`` to ``thresh_max`` towards each polygon's border over a band of width ``D`` on either side; its
mask covers the band.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
import pyclipper
from shapely.geometry import Polygon


def _offset(points: np.ndarray, distance: float) -> list[np.ndarray]:
    offset = pyclipper.PyclipperOffset()
    offset.AddPath([tuple(p) for p in points.tolist()], pyclipper.JT_ROUND, pyclipper.ET_CLOSEDPOLYGON)
    return [np.asarray(p, dtype=np.float32) for p in offset.Execute(distance)]


def valid_polygons(polygons: Sequence[np.ndarray], ignores: Sequence[bool], height: int,
                   width: int) -> tuple[list[np.ndarray], list[bool]]:
    """Polygons clipped to the image and ordered one way round; degenerate ones (area < 1) become ignored."""
    out, tags = [], []
    for poly, ignore in zip(polygons, ignores):
        poly = np.asarray(poly, dtype=np.float32).copy()
        poly[:, 0] = np.clip(poly[:, 0], 0, width - 1)
        poly[:, 1] = np.clip(poly[:, 1], 0, height - 1)
        x, y = poly[:, 0], poly[:, 1]
        signed = float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) / 2
        if abs(signed) < 1:
            ignore = True
        if signed > 0:
            poly = poly[::-1].copy()
        out.append(poly)
        tags.append(bool(ignore))
    return out, tags


def make_shrink_map(polygons: Sequence[np.ndarray], ignores: Sequence[bool], height: int, width: int, *,
                    shrink_ratio: float = 0.4, min_text_size: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """``(shrink_map, shrink_mask)``, both ``[H, W]`` float32."""
    polygons, ignores = valid_polygons(polygons, ignores, height, width)
    gt = np.zeros((height, width), np.float32)
    mask = np.ones((height, width), np.float32)
    for poly, ignore in zip(polygons, ignores):
        h = poly[:, 1].max() - poly[:, 1].min()
        w = poly[:, 0].max() - poly[:, 0].min()
        if ignore or min(h, w) < min_text_size:
            cv2.fillPoly(mask, [poly.astype(np.int32)], 0)
            continue
        shape = Polygon(poly)
        shrunk: list[np.ndarray] = []
        for ratio in [*np.arange(shrink_ratio, 1, shrink_ratio), 1.0]:
            shrunk = _offset(poly, -shape.area * (1 - ratio ** 2) / shape.length)
            if len(shrunk) == 1:
                break
        if not shrunk:
            cv2.fillPoly(mask, [poly.astype(np.int32)], 0)
            continue
        for piece in shrunk:
            cv2.fillPoly(gt, [piece.reshape(-1, 2).astype(np.int32)], 1)
    return gt, mask


def _segment_distance(xs: np.ndarray, ys: np.ndarray, p1: np.ndarray, p2: np.ndarray) -> np.ndarray:
    """Distance of every ``(xs, ys)`` to the segment ``p1 p2`` (to the nearer end beyond it)."""
    d1 = np.square(xs - p1[0]) + np.square(ys - p1[1])
    d2 = np.square(xs - p2[0]) + np.square(ys - p2[1])
    d = np.square(p1[0] - p2[0]) + np.square(p1[1] - p2[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        cosine = (d - d1 - d2) / (2 * np.sqrt(d1 * d2))
        sine2 = np.nan_to_num(1 - np.square(cosine))
        result = np.sqrt(d1 * d2 * sine2 / max(d, 1e-6))
    outside = cosine < 0
    result[outside] = np.sqrt(np.fmin(d1, d2))[outside]
    return np.nan_to_num(result)


def _draw_border(poly: np.ndarray, canvas: np.ndarray, mask: np.ndarray, shrink_ratio: float) -> None:
    shape = Polygon(poly)
    if shape.area <= 0:
        return
    distance = shape.area * (1 - shrink_ratio ** 2) / shape.length
    padded = _offset(poly, distance)
    if not padded:
        return
    padded_poly = padded[0].reshape(-1, 2)
    cv2.fillPoly(mask, [padded_poly.astype(np.int32)], 1.0)
    xmin, xmax = int(padded_poly[:, 0].min()), int(padded_poly[:, 0].max())
    ymin, ymax = int(padded_poly[:, 1].min()), int(padded_poly[:, 1].max())
    width, height = xmax - xmin + 1, ymax - ymin + 1
    local = poly - np.array([xmin, ymin], np.float32)
    xs = np.broadcast_to(np.arange(width, dtype=np.float32)[None, :], (height, width))
    ys = np.broadcast_to(np.arange(height, dtype=np.float32)[:, None], (height, width))
    dist = np.ones((height, width), np.float32)
    for i in range(len(local)):
        seg = _segment_distance(xs, ys, local[i], local[(i + 1) % len(local)])
        dist = np.minimum(dist, np.clip(seg / distance, 0, 1))
    h, w = canvas.shape
    x0, x1 = min(max(0, xmin), w - 1), min(max(0, xmax), w - 1)
    y0, y1 = min(max(0, ymin), h - 1), min(max(0, ymax), h - 1)
    region = 1 - dist[y0 - ymin:y1 - ymin + 1, x0 - xmin:x1 - xmin + 1]
    canvas[y0:y1 + 1, x0:x1 + 1] = np.fmax(region, canvas[y0:y1 + 1, x0:x1 + 1])


def make_border_map(polygons: Sequence[np.ndarray], ignores: Sequence[bool], height: int, width: int, *,
                    shrink_ratio: float = 0.4, thresh_min: float = 0.3,
                    thresh_max: float = 0.7) -> tuple[np.ndarray, np.ndarray]:
    """``(threshold_map, threshold_mask)``, both ``[H, W]`` float32."""
    polygons, ignores = valid_polygons(polygons, ignores, height, width)
    canvas = np.zeros((height, width), np.float32)
    mask = np.zeros((height, width), np.float32)
    for poly, ignore in zip(polygons, ignores):
        if not ignore:
            _draw_border(poly, canvas, mask, shrink_ratio)
    return canvas * (thresh_max - thresh_min) + thresh_min, mask


def db_targets(polygons: Sequence[np.ndarray], ignores: Sequence[bool], height: int, width: int, *,
               shrink_ratio: float = 0.4, min_text_size: int = 8, thresh_min: float = 0.3,
               thresh_max: float = 0.7) -> dict[str, np.ndarray]:
    """All four DB targets of one image: ``shrink_map``, ``shrink_mask``, ``threshold_map``, ``threshold_mask``."""
    shrink, shrink_mask = make_shrink_map(polygons, ignores, height, width, shrink_ratio=shrink_ratio,
                                          min_text_size=min_text_size)
    thresh, thresh_mask = make_border_map(polygons, ignores, height, width, shrink_ratio=shrink_ratio,
                                          thresh_min=thresh_min, thresh_max=thresh_max)
    return {"shrink_map": shrink, "shrink_mask": shrink_mask, "threshold_map": thresh, "threshold_mask": thresh_mask}
