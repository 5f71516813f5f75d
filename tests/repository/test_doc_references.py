"""Every document the code and the docs point at is in the repository: ``docs/<page>.md`` paths
(and their ``#section`` anchors) named in source files, relative links between the Markdown
pages, and no reference to a document that lives elsewhere (the contract is docs/api.md,
the design docs/design.md)."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parents[2]
SOURCES = (
    "config",
    "transactions",
    "brokers",
    "pubsub",
    "dashboard",
    "ingest",
    "analytics",
    "spark_jobs",
    "bench",
    "stomp_server",
    "workflows",
    "clients",
    "platform",
    "tests",
    "docs",
)
SUFFIXES = {".py", ".html", ".js", ".mjs", ".sh", ".md", ".toml", ".yml"}
DOC_PATH = re.compile(r"(?<![\w/.-])((?:docs|clients/python)/[\w./-]*?\.md)(?:#([\w-]+))?")
MD_LINK = re.compile(r"\]\(([^)\s#:]+\.md)(?:#([\w-]+))?\)")
ELSEWHERE = re.compile(r"(?<![\w/.\[(-])(?:API\.md|DESIGN\.md|NOTES\.md|DESIGN §)")


def _files() -> list[Path]:
    found = [ROOT / "README.md", ROOT / "pyproject.toml"]
    for top in SOURCES:
        found += [
            p
            for p in (ROOT / top).rglob("*")
            if p.suffix in SUFFIXES and p.is_file() and "node_modules" not in p.parts and "dist" not in p.parts
        ]
    return found


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_slug(line.lstrip("#")) for line in page.read_text().splitlines() if line.startswith("#")}


def _broken(page: Path, anchor: str | None) -> str | None:
    if not page.is_file():
        return "no such file"
    if anchor and anchor not in _anchors(page):
        return f"no section #{anchor}"
    return None


def test_every_document_named_in_the_code_and_docs_exists():
    problems = []
    for path in _files():
        text = path.read_text(errors="replace")
        where = path.relative_to(ROOT)
        for target, anchor in DOC_PATH.findall(text):
            if why := _broken(ROOT / target, anchor):
                problems.append(f"{where}: {target}#{anchor}: {why}")
        if path.suffix == ".md":
            for target, anchor in MD_LINK.findall(text):
                if why := _broken((path.parent / target), anchor):
                    problems.append(f"{where}: ({target}#{anchor}): {why}")
    assert problems == []


def test_no_reference_to_a_document_outside_the_repository():
    hits = [
        f"{p.relative_to(ROOT)}: {m.group(0)}"
        for p in _files()
        if p != Path(__file__).resolve()
        for m in ELSEWHERE.finditer(p.read_text(errors="replace"))
    ]
    assert hits == []


def test_the_slug_is_githubs():
    assert _slug(" Sessions: the fast path (WebSocket)") == "sessions-the-fast-path-websocket"
    assert _slug(" 1. Layout") == "1-layout"
