"""A parsed page as Markdown and as HTML: titles as headings, paragraphs, figures and equations as images of
their crops, tables as pipe tables where they are plain grids and as HTML (merged cells kept) otherwise."""

from __future__ import annotations

import html
from collections.abc import Sequence

from .blocks import DocBlock


def _escape_markdown(text: str) -> str:
    """Text that Markdown would read as markup where a line starts (``# ``, ``- ``, ``1. ``) kept as text."""
    if text[:1] in "#>-+*|" or (text.split(".")[0].isdigit() and text[len(text.split(".")[0]):][:2] == ". "):
        return "\\" + text
    return text


def block_markdown(block: DocBlock) -> str:
    """One body block as Markdown ('' for an empty one)."""
    if block.kind == "title" and block.text:
        return "#" * max(1, block.level or 2) + " " + block.text
    if block.kind == "table" and block.table is not None:
        return block.table.to_markdown()
    if block.kind in ("figure", "equation"):
        alt = block.text.replace("]", " ").replace("[", " ") or block.kind
        return f"![{alt}]({block.image})" if block.image else (block.text if block.kind == "equation" else "")
    return _escape_markdown(block.text) if block.text else ""


def page_markdown(blocks: Sequence[DocBlock]) -> str:
    """The body of a page, block after block in reading order, as Markdown."""
    parts = [block_markdown(b) for b in sorted((b for b in blocks if b.order is not None), key=lambda b: b.order)]
    return "\n\n".join(p for p in parts if p)


def block_html(block: DocBlock) -> str:
    """One body block as an HTML element ('' for an empty one)."""
    text = html.escape(block.text)
    if block.kind == "title" and text:
        level = max(1, block.level or 2)
        return f"<h{level}>{text}</h{level}>"
    if block.kind == "table" and block.table is not None:
        return block.table.html
    if block.kind in ("figure", "equation") and block.image:
        return f'<figure><img src="{html.escape(block.image)}" alt="{text or block.kind}"></figure>'
    if block.kind in ("figure_caption", "table_caption") and text:
        return f"<figcaption>{text}</figcaption>"
    return f"<p>{text}</p>" if text else ""


def document_html(pages: Sequence[Sequence[DocBlock]], title: str) -> str:
    """A standalone HTML document of the pages' bodies."""
    body = "\n".join(part for blocks in pages
                     for part in (block_html(b) for b in sorted((b for b in blocks if b.order is not None),
                                                                key=lambda b: b.order)) if part)
    style = ("body{font-family:sans-serif;max-width:52em;margin:2em auto;line-height:1.5}"
             "table{border-collapse:collapse}td,th{border:1px solid #999;padding:.2em .5em}img{max-width:100%}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head>\n<body>\n{body}\n</body></html>\n")
