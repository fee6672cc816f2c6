"""DB post-processing (Liao et al., "Real-time Scene Text Detection with Differentiable Binarization", AAAI 2020,
https://arxiv.org/abs/1911.08947; PaddleOCR's ``DBPostProcess``): the probability map thresholded, each connected
region's minimum-area box scored on the map, expanded by the unclip ratio with pyclipper (the inverse of the
shrink the targets were made with), boxed again and scaled to the source image.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import cv2
import numpy as np
import pyclipper

from oarkit.core.errors import ConfigError


@dataclass
class DBPostProcess:
    """Boxes from a DB probability map.

    Attributes:
        thresh: the binarisation threshold of the probability map.
        box_thresh: a box's mean probability must reach this.
        unclip_ratio: how far a box is expanded: ``area * ratio / perimeter``.
        max_candidates: at most this many regions are considered.
        min_size: boxes with a shorter side (before unclipping) are dropped.
        use_dilation: dilate the binary map with a 2x2 kernel first (PP-OCR's inference setting).
        score_mode: ``fast`` (mean over the box) or ``slow`` (mean over the region's polygon).
    """

    thresh: float = 0.3
    box_thresh: float = 0.6
    unclip_ratio: float = 1.5
    max_candidates: int = 1000
    min_size: int = 3
    use_dilation: bool = False
    score_mode: str = "fast"

    def __post_init__(self) -> None:
        if self.score_mode not in ("fast", "slow"):
            raise ConfigError(f"score_mode={self.score_mode!r} must be 'fast' or 'slow'")
        if not 0 < self.thresh < 1 or not 0 <= self.box_thresh <= 1:
            raise ConfigError(f"thresh={self.thresh} must lie in (0, 1) and box_thresh={self.box_thresh} in [0, 1]")
        if self.unclip_ratio <= 0:
            raise ConfigError(f"unclip_ratio={self.unclip_ratio} must be positive")

    def to_dict(self) -> dict[str, float | int | bool | str]:
        return asdict(self)

    def __call__(self, prob: np.ndarray, source_size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """Boxes of one probability map.

        Args:
            prob: the map, ``[H, W]`` (or ``[1, H, W]``), values in [0, 1].
            source_size: ``(height, width)`` of the image the boxes are scaled to.

        Returns:
            ``(boxes [N, 4, 2] float32, scores [N])``; each box clockwise from its top-left corner.
        """
        prob = np.asarray(prob, dtype=np.float32)
        prob = prob[0] if prob.ndim == 3 else prob
        mask = (prob > self.thresh).astype(np.uint8)
        if self.use_dilation:
            mask = cv2.dilate(mask, np.ones((2, 2), np.uint8))
        return self.boxes_from_bitmap(prob, mask, source_size)

    def boxes_from_bitmap(self, prob: np.ndarray, bitmap: np.ndarray,
                          source_size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        height, width = bitmap.shape
        dest_h, dest_w = source_size
        contours, _ = cv2.findContours(bitmap * 255, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
        boxes, scores = [], []
        for contour in contours[: self.max_candidates]:
            points, short_side = mini_box(contour)
            if short_side < self.min_size:
                continue
            score = box_score_fast(prob, points) if self.score_mode == "fast" else box_score_slow(prob, contour)
            if score < self.box_thresh:
                continue
            expanded = unclip(points, self.unclip_ratio)
            if len(expanded) == 0:
                continue
            box, short_side = mini_box(expanded.reshape(-1, 1, 2))
            if short_side < self.min_size + 2:
                continue
            box[:, 0] = np.clip(np.round(box[:, 0] / width * dest_w), 0, dest_w)
            box[:, 1] = np.clip(np.round(box[:, 1] / height * dest_h), 0, dest_h)
            boxes.append(box)
            scores.append(score)
        if not boxes:
            return np.zeros((0, 4, 2), np.float32), np.zeros((0,), np.float32)
        return np.stack(boxes).astype(np.float32), np.asarray(scores, np.float32)


def mini_box(contour: np.ndarray) -> tuple[np.ndarray, float]:
    """The minimum-area rectangle of ``contour`` as 4 points clockwise from the top-left, and its short side."""
    rect = cv2.minAreaRect(contour.astype(np.float32))
    points = sorted(cv2.boxPoints(rect).tolist(), key=lambda p: p[0])
    first, fourth = (0, 1) if points[1][1] > points[0][1] else (1, 0)
    second, third = (2, 3) if points[3][1] > points[2][1] else (3, 2)
    box = np.array([points[first], points[second], points[third], points[fourth]], dtype=np.float32)
    return box, float(min(rect[1]))


def box_score_fast(prob: np.ndarray, box: np.ndarray) -> float:
    """The mean probability inside ``box`` (a polygon, ``[N, 2]``)."""
    h, w = prob.shape[:2]
    box = np.asarray(box, dtype=np.float32).reshape(-1, 2).copy()
    xmin = int(np.clip(np.floor(box[:, 0].min()), 0, w - 1))
    xmax = int(np.clip(np.ceil(box[:, 0].max()), 0, w - 1))
    ymin = int(np.clip(np.floor(box[:, 1].min()), 0, h - 1))
    ymax = int(np.clip(np.ceil(box[:, 1].max()), 0, h - 1))
    mask = np.zeros((ymax - ymin + 1, xmax - xmin + 1), dtype=np.uint8)
    box[:, 0] -= xmin
    box[:, 1] -= ymin
    cv2.fillPoly(mask, box.reshape(1, -1, 2).astype(np.int32), 1)
    return float(cv2.mean(prob[ymin:ymax + 1, xmin:xmax + 1], mask)[0])


def box_score_slow(prob: np.ndarray, contour: np.ndarray) -> float:
    """The mean probability inside the region's own contour."""
    return box_score_fast(prob, np.asarray(contour).reshape(-1, 2))


def unclip(box: np.ndarray, ratio: float) -> np.ndarray:
    """``box`` grown by ``area * ratio / perimeter`` (rounded joins), as an ``[N, 2]`` polygon (empty if it
    vanished)."""
    box = np.asarray(box, dtype=np.float64).reshape(-1, 2)
    area, length = polygon_area(box), float(cv2.arcLength(box.astype(np.float32), True))
    if length == 0:
        return np.zeros((0, 2), np.float32)
    offset = pyclipper.PyclipperOffset()
    offset.AddPath(box.tolist(), pyclipper.JT_ROUND, pyclipper.ET_CLOSEDPOLYGON)
    paths = offset.Execute(area * ratio / length)
    if not paths:
        return np.zeros((0, 2), np.float32)
    return np.asarray(max(paths, key=len), dtype=np.float32)


def polygon_area(points: np.ndarray) -> float:
    """The area of a simple polygon (shoelace formula)."""
    x, y = points[:, 0], points[:, 1]
    return float(abs(np.dot(x, np.roll(y, 1)) - np.dot(y, np.roll(x, 1))) / 2)


def order_points_clockwise(points: np.ndarray) -> np.ndarray:
    """Four points ordered top-left, top-right, bottom-right, bottom-left (PaddleOCR's ``order_points_clockwise``)."""
    points = np.asarray(points, dtype=np.float32).reshape(4, 2)
    by_x = points[np.argsort(points[:, 0], kind="stable")]
    left, right = by_x[:2], by_x[2:]
    tl, bl = left[np.argsort(left[:, 1], kind="stable")]
    tr, br = right[np.argsort(right[:, 1], kind="stable")]
    return np.array([tl, tr, br, bl], dtype=np.float32)


def filter_boxes(boxes: np.ndarray, scores: np.ndarray, image_size: tuple[int, int], *,
                 min_side: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """Boxes ordered clockwise, clipped to the image, without those whose sides are ``min_side`` or shorter."""
    h, w = image_size
    kept, kept_scores = [], []
    for box, score in zip(boxes, scores):
        box = order_points_clockwise(box)
        box[:, 0] = np.clip(box[:, 0], 0, w - 1)
        box[:, 1] = np.clip(box[:, 1], 0, h - 1)
        width = np.linalg.norm(box[0] - box[1])
        height = np.linalg.norm(box[0] - box[3])
        if width <= min_side or height <= min_side:
            continue
        kept.append(box)
        kept_scores.append(score)
    if not kept:
        return np.zeros((0, 4, 2), np.float32), np.zeros((0,), np.float32)
    return np.stack(kept), np.asarray(kept_scores, np.float32)
