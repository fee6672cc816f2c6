"""Every relative link in README.md and docs/*.md names a file that exists, and an anchor a heading it holds.

mkdocs (``make docs``) checks the links between the pages of the site but not README.md's links into docs/; this
test checks both without mkdocs.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def _prose(text: str) -> str:
    """The Markdown without code blocks and inline code, where a bracket is not a link."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension (mkdocs) gives a heading; GitHub's agrees on these pages."""
    text = unicodedata.normalize("NFKD", INLINE_CODE.sub(lambda m: m.group(0)[1:-1], heading))
    text = re.sub(r"[^\w\s-]", "", text.encode("ascii", "ignore").decode()).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", FENCE.sub("", page.read_text(encoding="utf-8")), re.M)
    return {_slug(h) for h in headings}


def _links(page: Path) -> list[str]:
    return [target for target in LINK.findall(_prose(page.read_text(encoding="utf-8")))
            if not re.match(r"[a-z][a-z0-9+.-]*:", target)]  # http:, https:, mailto: are not files


def test_pages_have_links() -> None:
    assert (ROOT / "README.md").is_file() and len(PAGES) > 1, "README.md or docs/*.md is missing"
    assert _links(ROOT / "README.md"), "README.md links to no page of docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in _links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file} does not exist")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target}: no heading of {file.name} gives the anchor #{anchor}")
    assert not broken, f"{page.relative_to(ROOT)} has broken links (fix the path or the heading):\n" + "\n".join(broken)


def test_slug_matches_mkdocs() -> None:
    assert _slug("Post-processing, metrics, export and int8") == "post-processing-metrics-export-and-int8"
    assert _slug("OCR (oarkit.ocr)") == "ocr-oarkitocr"
    assert _slug("`oarkit convert paddle`") == "oarkit-convert-paddle"
