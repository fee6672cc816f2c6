"""Document parsing: reading order, text assembly, and DocParser on rendered pages with known content (CER,
reading order, headers and footers, captions, a PDF, the command line and the saved outputs)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from oarkit.core.cli import main
from oarkit.core.errors import DataError
from oarkit.ocr.doc import DocBlock, DocParser, kind_of, xy_cut
from oarkit.ocr.doc.assemble import group_orphans, join_text
from oarkit.ocr.doc.metrics import normalised_edit_distance, reading_order_distance, text_cer
from oarkit.ocr.doc.order import order_blocks
from oarkit.ocr.pipeline import OCRLine
from oarkit.ocr.render.document import render_document
from oarkit.ocr.table import teds


def _quad(x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
    return np.float32([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])


def test_xy_cut_reads_columns_under_a_full_width_title() -> None:
    boxes = [[50, 20, 950, 60],  # 0 title across both columns
             [50, 100, 480, 300], [520, 100, 950, 300],  # 1, 2 first row of each column (gaps aligned)
             [50, 320, 480, 500], [520, 320, 950, 500]]  # 3, 4
    assert xy_cut(boxes) == [0, 1, 3, 2, 4]


def test_xy_cut_cuts_at_a_full_width_figure_between_two_column_bands() -> None:
    boxes = [[50, 20, 480, 200], [520, 20, 950, 200],  # 0, 1
             [50, 220, 950, 400],  # 2 a figure across the page
             [50, 420, 480, 600], [520, 420, 950, 600]]  # 3, 4
    assert xy_cut(boxes) == [0, 1, 2, 3, 4]


def test_xy_cut_single_column_and_overlaps() -> None:
    assert xy_cut([[50, 300, 900, 400], [50, 20, 900, 100], [80, 150, 600, 250]]) == [1, 2, 0]
    assert xy_cut([[0, 0, 100, 100], [50, 50, 150, 150]]) == [0, 1]
    assert xy_cut([]) == []


def test_order_keeps_headers_out_and_captions_with_their_figure() -> None:
    blocks = [DocBlock("footer", [400, 980, 500, 995]), DocBlock("figure_caption", [100, 420, 400, 440]),
              DocBlock("text", [100, 500, 900, 600]), DocBlock("figure", [100, 200, 900, 400]),
              DocBlock("header", [100, 5, 400, 20]), DocBlock("table_caption", [100, 620, 400, 640]),
              DocBlock("table", [100, 650, 900, 900])]
    ordered = order_blocks(blocks)
    assert [b.kind for b in ordered] == ["figure", "figure_caption", "text", "table_caption", "table", "header",
                                         "footer"]
    assert [b.order for b in ordered] == [0, 1, 2, 3, 4, None, None]


def test_labels_of_other_layout_models_map_to_kinds() -> None:
    assert kind_of("paragraph_title") == "title" and kind_of("doc_title") == "title"
    assert kind_of("Table") == "table" and kind_of("formula") == "equation" and kind_of("image") == "figure"
    assert kind_of("something new") == "text"


def test_join_text_mends_hyphenation_and_joins_chinese_without_spaces() -> None:
    assert join_text(["layout ana-", "lysis of pages"]) == "layout analysis of pages"
    assert join_text(["state-", "Of the art"]) == "state- Of the art"
    assert join_text(["文字识别", "深度学习"]) == "文字识别深度学习"
    assert join_text(["", " a ", "b"]) == "a b"


def test_lines_no_layout_box_holds_become_paragraphs_and_titles() -> None:
    lines = [OCRLine(_quad(50, 10, 500, 50), "A Big Title", 0.99),  # 40 px tall: a title
             OCRLine(_quad(50, 100, 800, 118), "first line of a paragraph", 0.99),
             OCRLine(_quad(50, 124, 780, 142), "and its second line", 0.99),
             OCRLine(_quad(50, 400, 700, 418), "a paragraph far below", 0.99)]
    blocks = group_orphans(lines, body_height=18)
    assert [b.kind for b in blocks] == ["title", "text", "text"]
    assert [len(b.lines) for b in blocks] == [1, 2, 1]


def test_normalised_edit_distance() -> None:
    assert normalised_edit_distance([0, 1, 2, 3], [0, 1, 2, 3]) == 0.0
    assert normalised_edit_distance([1, 0, 2, 3], [0, 1, 2, 3]) == 0.5
    assert normalised_edit_distance([], []) == 0.0


@pytest.fixture(scope="module")
def parser() -> DocParser:
    return DocParser()


@pytest.mark.parametrize("seed,columns,table", [(0, 2, "ruled"), (1, 1, "borderless")])
def test_parser_reads_rendered_pages(parser: DocParser, seed: int, columns: int, table: str) -> None:
    page = render_document(seed, columns=columns, table=table)
    result = parser(page.image)
    blocks = result.pages[0].blocks
    cer, order = text_cer(blocks, page.blocks), reading_order_distance(blocks, page.blocks)
    assert cer <= 0.01, f"title and text CER {cer:.4f}"
    assert order <= 0.10, f"reading-order edit distance {order:.3f}"
    # the header and footer are found and kept out of the body and the Markdown
    outside = [b for b in blocks if b.order is None]
    assert {b.kind for b in outside} == {"header", "footer"}
    header = next(b for b in page.blocks if b.kind == "header")
    assert header.text not in result.markdown
    # the document title is the one level-1 heading, the section headings are level 2
    title = page.body[0]
    assert result.markdown.startswith(f"# {title.text}\n") or result.markdown.startswith("# ")
    assert result.markdown.count("\n# ") == 0 and "\n## " in result.markdown
    # the caption follows its figure
    kinds = [b.kind for b in blocks if b.order is not None]
    assert kinds[kinds.index("figure") + 1] == "figure_caption"
    assert "![" in result.markdown and "imgs/" in result.markdown
    # the table: its structure and cell texts against the rendered one, a pipe table in the Markdown (a plain grid)
    truth = next(b for b in page.blocks if b.kind == "table")
    found = [b for b in blocks if b.kind == "table"]
    assert len(found) == 1 and found[0].table is not None
    score = teds(found[0].table.html, truth.html)
    assert score >= 0.9, f"TEDS {score:.3f}: {found[0].table.html}"
    assert "| " + " | ".join(truth.cells[0]) + " |" in result.markdown


def test_pdf_pages_cli_and_saved_outputs(tmp_path) -> None:
    pages = [render_document(2, columns=2, table="borderless"), render_document(3, columns=1, table=None,
                                                                                 figure=False)]
    pdf = tmp_path / "paper.pdf"
    Image.fromarray(pages[0].image).save(pdf, save_all=True, append_images=[Image.fromarray(pages[1].image)],
                                         resolution=72)
    out = tmp_path / "out"
    assert main(["doc", str(pdf), "--out", str(out), "--format", "markdown,json,html", "--no-table",
                 "--dpi", "72"]) == 0
    data = json.loads((out / "paper.json").read_text())
    assert [p["page"] for p in data["pages"]] == [0, 1]
    assert data["pages"][0]["size"] == [1300, 1000]
    first = data["pages"][0]["blocks"][0]
    assert set(first) >= {"class", "box", "order", "text", "score", "label"}
    markdown = (out / "paper.md").read_text()
    squeezed = markdown.replace(" ", "")  # the recognizer may drop the space after a section number
    for page in pages:  # every page's section headings are in the Markdown, in order
        headings = [b.text.replace(" ", "") for b in page.body if b.kind == "title"][1:]
        positions = [squeezed.find(h) for h in headings]
        assert all(p >= 0 for p in positions) and positions == sorted(positions), headings
    figure = next(b for b in data["pages"][0]["blocks"] if b["class"] == "figure")
    assert (out / figure["image"]).is_file() and figure["image"] in markdown
    assert (out / "paper_p1_layout.png").is_file() and (out / "paper_p2_layout.png").is_file()
    assert "<h1>" in (out / "paper.html").read_text()


def test_clear_errors(tmp_path, parser: DocParser, capsys) -> None:
    with pytest.raises(DataError, match="does not exist"):
        parser(str(tmp_path / "missing.pdf"))
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.4 not really a pdf")
    with pytest.raises(DataError, match="PDFium cannot open it"):
        parser(str(bad))
    assert main(["doc", str(bad), "--out", str(tmp_path), "--format", "docx"]) != 0
    assert "the formats are markdown, json, html" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown output format"):
        parser(np.full((64, 64, 3), 255, np.uint8)).save(tmp_path, ["docx"])


def test_a_blank_page_parses_to_nothing(parser: DocParser) -> None:
    result = parser(np.full((400, 300, 3), 255, np.uint8))
    assert result.markdown.strip() == "" and result.pages[0].blocks == []


def test_layout_labels_of_a_pp_doclayout_model_are_filed_by_kind() -> None:
    """A det model with PP-DocLayout's labels drives DocParser's layout stage as the CDLA model does."""
    from oarkit.ocr.doc import LayoutDetector

    class Found:  # what a det predictor returns, with PP-DocLayout's label names
        boxes = np.float32([[10, 10, 500, 40], [10, 60, 500, 300], [10, 320, 500, 500], [12, 62, 498, 298]])
        scores = np.float32([0.9, 0.95, 0.8, 0.6])
        labels = ["doc_title", "text", "image", "paragraph_title"]

    blocks = LayoutDetector(lambda page: Found(), threshold=0.5)(np.zeros((600, 600, 3), np.uint8))
    assert [(b.kind, b.label) for b in blocks] == [("title", "doc_title"), ("text", "text"), ("figure", "image")]


def test_served_as_doc_answers_what_the_parser_gives(parser: DocParser) -> None:
    pytest.importorskip("fastapi")
    import cv2
    from fastapi.testclient import TestClient

    from oarkit.core.serve import ServeConfig, create_app

    page = render_document(4, columns=1, table="ruled", size=(900, 700), body_size=15)
    png = cv2.imencode(".png", cv2.cvtColor(page.image, cv2.COLOR_RGB2BGR))[1].tobytes()
    with TestClient(create_app(ServeConfig(sources=("doc",)), background_load=False)) as client:
        answer = client.post("/v1/models/doc/predict", files={"file": ("page.png", png, "image/png")})
    assert answer.status_code == 200, answer.text
    got = answer.json()["results"][0]
    wanted = parser(page.image).to_dict()
    for result in (got, wanted):
        result.pop("source")
        for p in result["pages"]:
            p.pop("seconds")
    assert got == wanted
    assert any(b["class"] == "table" and "<td" in b["table"]["html"] for b in got["pages"][0]["blocks"])
