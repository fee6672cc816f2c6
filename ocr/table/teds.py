"""TEDS, Tree-Edit-Distance-based Similarity of two HTML tables.

"Image-based table recognition: data, model, and evaluation", Zhong et al., 2020, https://arxiv.org/abs/1911.10683
(PubTabNet): each table is a tree (``table`` -> ``thead`` / ``tbody`` -> ``tr`` -> ``td``); the edit distance
between the trees (APTED, the ``apted`` package) costs 1 per inserted or deleted node and, for a renamed node, 1
when the tags, colspans or rowspans differ, else (two cells) the normalised Levenshtein distance of their contents
(0 with ``structure_only``). ``TEDS = 1 - distance / max(nodes of either tree)``, in [0, 1]. ``ignore_sections``
removes the ``thead`` / ``tbody`` level from both trees (not in the paper; stated wherever a figure uses it).

Cell contents are compared as characters after collapsing whitespace; inline markup inside a cell (``<b>``) is
kept as tokens of the content, as in the paper. The HTML is read with the standard library's parser: only the
first ``<table>`` counts and anything outside it is ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from oarkit.core.errors import DataError

from ..metrics import edit_distance

SECTION_TAGS = ("thead", "tbody", "tfoot")
STRUCTURE_TAGS = ("table", *SECTION_TAGS, "tr", "td", "th")


@dataclass
class TableNode:
    """One node of a table tree: its tag, spans, content tokens (cells) and children."""

    tag: str
    colspan: int = 1
    rowspan: int = 1
    content: list[str] = field(default_factory=list)
    children: list[TableNode] = field(default_factory=list)

    def size(self) -> int:
        return 1 + sum(child.size() for child in self.children)


def _span(attrs: list[tuple[str, str | None]], name: str) -> int:
    for key, value in attrs:
        if key == name and value:
            try:
                return max(1, int(value.strip().strip("'\"")))
            except ValueError:
                return 1
    return 1


class _TableTreeParser(HTMLParser):
    """Builds the tree of the first ``<table>``; ``th`` counts as ``td``; tags inside a cell become content."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root: TableNode | None = None
        self.stack: list[TableNode] = []
        self.cell: TableNode | None = None
        self.text: list[str] = []
        self.finished = False

    def _flush_text(self) -> None:
        if self.cell is not None and self.text:
            text = re.sub(r"\s+", " ", "".join(self.text))
            self.cell.content.extend(text)
        self.text = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.finished:
            return
        if self.cell is not None and tag not in ("td", "th", "tr"):
            self._flush_text()
            self.cell.content.append(f"<{tag}>")
            return
        if tag == "table" and self.root is None:
            self.root = TableNode("table")
            self.stack = [self.root]
        elif self.root is None or tag not in STRUCTURE_TAGS[1:]:
            return
        elif tag in ("td", "th"):
            self._close_cell()
            node = TableNode("td", _span(attrs, "colspan"), _span(attrs, "rowspan"))
            self.stack[-1].children.append(node)
            self.cell = node
        else:
            self._close_cell()
            if tag == "tr":
                while self.stack[-1].tag == "tr":
                    self.stack.pop()
            else:  # a section closes any open row or section
                while self.stack[-1].tag != "table":
                    self.stack.pop()
            node = TableNode(tag)
            self.stack[-1].children.append(node)
            self.stack.append(node)

    def _close_cell(self) -> None:
        self._flush_text()
        if self.cell is not None:
            content = self.cell.content
            while content and content[0] == " ":
                content.pop(0)
            while content and content[-1] == " ":
                content.pop()
            self.cell = None

    def handle_endtag(self, tag: str) -> None:
        if self.root is None or self.finished:
            return
        if self.cell is not None and tag not in ("td", "th", "tr", "table", *SECTION_TAGS):
            self._flush_text()
            self.cell.content.append(f"</{tag}>")
            return
        if tag in ("td", "th"):
            self._close_cell()
        elif tag == "table":
            self._close_cell()
            self.finished = True
        elif tag in ("tr", *SECTION_TAGS):
            self._close_cell()
            while len(self.stack) > 1 and self.stack[-1].tag != tag:
                self.stack.pop()
            if len(self.stack) > 1:
                self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.text.append(data)


def parse_table(html: str) -> TableNode:
    """The tree of the first ``<table>`` in ``html``.

    Raises:
        DataError: ``html`` is not a string or holds no ``<table>``.
    """
    if not isinstance(html, str):
        raise DataError(f"teds takes HTML strings, not {type(html).__name__}")
    parser = _TableTreeParser()
    parser.feed(html)
    parser.close()
    parser._close_cell()
    if parser.root is None:
        raise DataError(f"no <table> in the HTML given to teds: {html[:80]!r}")
    return parser.root


def _config(structure_only: bool):
    from apted import Config

    class TEDSConfig(Config):
        valuecls = float

        def rename(self, node1: TableNode, node2: TableNode) -> float:
            if (node1.tag, node1.colspan, node1.rowspan) != (node2.tag, node2.colspan, node2.rowspan):
                return 1.0
            if node1.tag != "td" or structure_only:
                return 0.0
            if not node1.content and not node2.content:
                return 0.0
            return edit_distance(node1.content, node2.content) / max(len(node1.content), len(node2.content))

        def children(self, node: TableNode) -> list[TableNode]:
            return node.children

    return TEDSConfig()


def _lift_sections(node: TableNode) -> TableNode:
    children: list[TableNode] = []
    for child in node.children:
        children += _lift_sections(child).children if child.tag in SECTION_TAGS else [_lift_sections(child)]
    node.children = children
    return node


def teds(pred_html: str, true_html: str, structure_only: bool = False, *, ignore_sections: bool = False) -> float:
    """TEDS between a predicted and a ground-truth HTML table, 1.0 for identical tables.

    Args:
        pred_html: the prediction (``TableResult.html``; ``<html><body>`` wrappers are fine).
        true_html: the ground truth.
        structure_only: ignore cell contents (TEDS-S).
        ignore_sections: drop ``<thead>`` / ``<tbody>`` / ``<tfoot>`` from both trees (their rows stay), for models
            that do not mark the header: SLANet-plus never emits ``<thead>``, and rapid-table's matcher strips both.

    Raises:
        DataError: either side holds no ``<table>``.
    """
    from apted import APTED

    pred, true = parse_table(pred_html), parse_table(true_html)
    if ignore_sections:
        pred, true = _lift_sections(pred), _lift_sections(true)
    n = max(pred.size(), true.size())
    distance = APTED(pred, true, _config(structure_only)).compute_edit_distance()
    return float(max(0.0, 1.0 - distance / n))
