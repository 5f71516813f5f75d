"""The README is read in minutes and the docs state the design, not its history: the README
at most 400 lines, each page of docs/ at most 600, no line of either over 600 characters
(a table row that long is a paragraph in the wrong place)."""

from pathlib import Path

import pytest

pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parents[2]
README_LINES = 400
DOC_LINES = 600
LINE_CHARS = 600


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_readme_is_at_most_400_lines():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines"


def test_each_doc_is_at_most_600_lines():
    long = {
        str(page.relative_to(ROOT)): n
        for page in sorted((ROOT / "docs").glob("*.md"))
        if (n := len(page.read_text().splitlines())) > DOC_LINES
    }
    assert long == {}


def test_no_line_is_over_600_characters():
    long = [
        f"{page.relative_to(ROOT)}:{number}: {len(line)} characters"
        for page in _pages()
        for number, line in enumerate(page.read_text().splitlines(), 1)
        if len(line) > LINE_CHARS
    ]
    assert long == []
