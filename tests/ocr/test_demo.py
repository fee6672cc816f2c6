"""The OCR demo's data: rendered pages with their texts and a dot-matrix code set with unseen validation codes."""

from __future__ import annotations

import random
import re

from oarkit.ocr.data import read_rec_list
from oarkit.ocr.demo import code_line, prepare


def test_demo_data(tmp_path):
    root = prepare(tmp_path / "demo", train=6, val=3)
    assert sorted(p.name for p in (root / "pages").iterdir()) == ["page_ch.png", "page_ch.txt", "page_en.png",
                                                                  "page_en.txt"]
    train = read_rec_list(root / "dotmatrix" / "train.txt")
    val = read_rec_list(root / "dotmatrix" / "val.txt")
    assert len(train) == 6 and len(val) == 3
    pattern = re.compile(r"LOT [A-Z0-9]{3}-\d{3}|EXP \d{4}/\d{2}/\d{2}|[A-Z]{2}\d{3} \d{2}:\d{2}")
    assert all(pattern.fullmatch(label) for _, label in train + val)
    assert all(pattern.fullmatch(code_line(random.Random(i))) for i in range(30))
