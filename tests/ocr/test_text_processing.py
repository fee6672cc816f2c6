"""Character dictionaries, greedy CTC decoding, DB post-processing, reading order and crops."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from oarkit.core.errors import ConfigError, DataError
from oarkit.ocr.charset import EN_CHARACTERS, CharDictionary
from oarkit.ocr.pipeline.crops import crop_box, padded_width, reading_order
from oarkit.ocr.postprocess import DBPostProcess, ctc_greedy_decode, filter_boxes, order_points_clockwise


def test_builtin_dictionaries():
    keys = CharDictionary.load("ppocr_keys_v1", use_space_char=True)
    assert keys.num_classes == 6625  # PP-OCRv4 rec's output width: blank + 6623 characters + space
    assert keys.characters[-1] == " " and keys.encode("中文") == [keys.index["中"], keys.index["文"]]
    en = CharDictionary.load("en")
    assert en.num_classes == 96 and en.characters == list(EN_CHARACTERS)
    # PaddleOCR appends the space even to en_dict.txt, which ends with one: its English models have 97 classes
    assert CharDictionary.load("en", use_space_char=True).num_classes == 97
    assert CharDictionary.load("ic15").num_classes == 37


def test_custom_dictionary_file(tmp_path):
    path = tmp_path / "dict.txt"
    path.write_text("a\nb\nc\n", encoding="utf-8")
    d = CharDictionary.load(path, use_space_char=True)
    assert d.characters == ["a", "b", "c", " "] and d.num_classes == 5
    assert d.encode("ab x") == [1, 2, 4]  # x is not in the dictionary: dropped, as PaddleOCR does
    assert CharDictionary.from_dict(d.to_dict()).characters == d.characters
    (tmp_path / "flags.txt").write_text("a\n\U0001F1E8\U0001F1F3\nb\n", encoding="utf-8")  # a flag: two code points
    flags = CharDictionary.load(tmp_path / "flags.txt")
    assert flags.encode("a\U0001F1E8\U0001F1F3b") == [1, 2, 3] and flags.decode([2, 3]) == "\U0001F1E8\U0001F1F3b"
    (tmp_path / "bad.txt").write_text("a\n\nb\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2"):
        CharDictionary.load(tmp_path / "bad.txt")
    with pytest.raises(ConfigError, match="ppocr_keys_v1"):
        CharDictionary.load("ppocr_keys_v2")


def test_ctc_greedy_decode_collapses_repeats_and_blanks():
    d = CharDictionary(list("abc"))
    steps = [1, 1, 0, 1, 2, 2, 0, 0, 3]  # a a - a b b - - c -> "aabc"
    probs = torch.full((1, len(steps), 4), 0.1)
    for t, c in enumerate(steps):
        probs[0, t, c] = 0.7
    decoded = ctc_greedy_decode(probs, d)[0]
    assert decoded.text == "aabc"
    assert decoded.score == pytest.approx(0.7)
    assert ctc_greedy_decode(torch.zeros(1, 3, 4).index_fill_(2, torch.tensor([0]), 1.0), d)[0].text == ""
    with pytest.raises(ValueError, match="dictionary"):
        ctc_greedy_decode(torch.zeros(1, 3, 9), d)


def test_db_postprocess_finds_boxes_scaled_to_the_source():
    prob = np.zeros((64, 128), np.float32)
    prob[10:20, 10:60] = 0.9   # a text line
    prob[40:50, 70:120] = 0.8  # another
    prob[30:32, 5:7] = 0.9     # a speck: too small
    post = DBPostProcess(thresh=0.3, box_thresh=0.6, unclip_ratio=1.5)
    boxes, scores = post(prob, (128, 256))  # the source is twice the map's size
    boxes, scores = filter_boxes(boxes, scores, (128, 256))
    assert len(boxes) == 2 and np.all(scores > 0.75)
    first = boxes[np.argmin(boxes[:, 0, 1])]
    # the shrunk region grows back by unclipping: about 50x10 map pixels become ~ (50+d)x(10+d), times 2
    assert 100 < first[1, 0] - first[0, 0] < 140 and 20 < first[3, 1] - first[0, 1] < 45
    assert first[0, 0] < 20 and first[0, 1] < 20


def test_order_points_and_reading_order():
    pts = np.array([[10, 20], [0, 0], [10, 0], [0, 20]], np.float32)
    assert order_points_clockwise(pts).tolist() == [[0, 0], [10, 0], [10, 20], [0, 20]]
    boxes = np.array([[[50, 5], [90, 5], [90, 15], [50, 15]],     # right, line 1
                      [[0, 60], [40, 60], [40, 70], [0, 70]],     # line 2
                      [[0, 8], [40, 8], [40, 18], [0, 18]]], np.float32)  # left, line 1 (3 px lower)
    assert reading_order(boxes) == [2, 0, 1]


def test_crop_box_warps_and_turns_tall_crops():
    image = np.zeros((100, 100, 3), np.uint8)
    image[20:30, 10:90] = 255
    crop = crop_box(image, np.array([[10, 20], [90, 20], [90, 30], [10, 30]], np.float32))
    assert crop.shape[:2] == (10, 80) and crop.mean() > 200
    tall = crop_box(image, np.array([[10, 10], [20, 10], [20, 90], [10, 90]], np.float32))
    assert tall.shape[:2] == (10, 80)  # turned to read left to right
    assert padded_width([crop], height=48, min_width=320) == 384  # 80/10 * 48 = 384, a multiple of 8
