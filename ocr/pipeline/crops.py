"""Between detection and recognition: reading order, perspective crops of text boxes, tall crops turned upright,
and the recognizer's batches (PaddleOCR's ``sorted_boxes``, ``get_rotate_crop_image`` and ``resize_norm_img``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import cv2
import numpy as np


def reading_order(boxes: np.ndarray, *, line_tolerance: float = 10.0) -> list[int]:
    """Indices of ``boxes`` ([N, 4, 2], top-left first) top to bottom, left to right within a line: boxes whose
    top-left corners differ by less than ``line_tolerance`` pixels vertically count as one line."""
    order = sorted(range(len(boxes)), key=lambda i: (float(boxes[i][0][1]), float(boxes[i][0][0])))
    for i in range(len(order) - 1):
        for j in range(i, -1, -1):
            a, b = boxes[order[j]][0], boxes[order[j + 1]][0]
            if abs(float(b[1]) - float(a[1])) < line_tolerance and float(b[0]) < float(a[0]):
                order[j], order[j + 1] = order[j + 1], order[j]
            else:
                break
    return order


def crop_box(image: np.ndarray, box: np.ndarray, *, tall_ratio: float = 1.5) -> np.ndarray:
    """The text in ``box`` (4 points clockwise from the top-left) warped to an upright rectangle; a crop at least
    ``tall_ratio`` times taller than wide is turned 90 degrees (vertical text read left to right)."""
    points = np.asarray(box, dtype=np.float32)
    width = int(max(np.linalg.norm(points[0] - points[1]), np.linalg.norm(points[2] - points[3])))
    height = int(max(np.linalg.norm(points[0] - points[3]), np.linalg.norm(points[1] - points[2])))
    width, height = max(width, 1), max(height, 1)
    target = np.float32([[0, 0], [width, 0], [width, height], [0, height]])
    matrix = cv2.getPerspectiveTransform(points, target)
    crop = cv2.warpPerspective(image, matrix, (width, height), borderMode=cv2.BORDER_REPLICATE,
                               flags=cv2.INTER_CUBIC)
    if crop.shape[0] / max(crop.shape[1], 1) >= tall_ratio:
        crop = np.ascontiguousarray(np.rot90(crop))
    return crop


def padded_width(crops: Sequence[np.ndarray], *, height: int, min_width: int, multiple: int = 8) -> int:
    """The width a batch of crops is padded to: the widest crop at ``height`` (at least ``min_width``), rounded
    up to ``multiple`` (an exported recognizer's width axis is declared in multiples of 8)."""
    ratio = max([min_width / height] + [c.shape[1] / max(c.shape[0], 1) for c in crops])
    return int(math.ceil(int(height * ratio) / multiple) * multiple)


def batch_tensor(crops: Sequence[np.ndarray], *, height: int, width: int, mean: Sequence[float],
                 std: Sequence[float], bgr: bool = True) -> np.ndarray:
    """``[B, 3, height, width]`` float32: each crop resized to ``height`` keeping its aspect ratio (at most
    ``width`` wide), normalised, zero-padded on the right."""
    out = np.zeros((len(crops), 3, height, width), np.float32)
    mean_a, std_a = np.asarray(mean, np.float32), np.asarray(std, np.float32)
    for i, crop in enumerate(crops):
        w = max(1, min(width, int(math.ceil(height * crop.shape[1] / max(crop.shape[0], 1)))))
        resized = cv2.resize(crop, (w, height))
        resized = resized[..., ::-1] if bgr else resized
        out[i, :, :, :w] = ((resized.astype(np.float32) / 255.0 - mean_a) / std_a).transpose(2, 0, 1)
    return out
