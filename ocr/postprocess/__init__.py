"""Post-processing outside the models: DB boxes from probability maps, greedy CTC decoding."""

from .ctc import Decoded, ctc_greedy_decode
from .db import DBPostProcess, box_score_fast, filter_boxes, mini_box, order_points_clockwise, unclip

__all__ = ["DBPostProcess", "Decoded", "box_score_fast", "ctc_greedy_decode", "filter_boxes", "mini_box",
           "order_points_clockwise", "unclip"]
