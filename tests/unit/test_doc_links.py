"""Every relative link of the user docs (README.md and the pages under docs/) leads somewhere:
the file it names exists, and its `#anchor`, if any, is a heading of that page (GitHub's
anchors: the heading in lower case, punctuation dropped, spaces as hyphens). Links inside
code blocks, images and absolute URLs are not checked. The check runs over a small tree
written by the tests below too, so that it can fail."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def anchor_of(heading: str) -> str:
    text = heading.lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {anchor_of(line) for line in text.splitlines() if line.startswith("#")}


def broken_links(root: Path) -> list[str]:
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    found = []
    for page in (p for p in pages if p.exists()):
        for match in LINK.finditer(FENCE.sub("", page.read_text(encoding="utf-8"))):
            target = match[1]
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue  # an absolute URL (https:, mailto:)
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(root)}: {target}"
            if not dest.exists():
                found.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                found.append(f"{where}: no heading with that anchor")
    return found


def test_every_relative_link_of_the_docs_leads_to_a_file_and_heading() -> None:
    assert broken_links(ROOT) == []


def test_a_missing_page_and_a_missing_heading_are_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## How to measure it\n")
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md#how-to-measure-it) [top](#readme) [web](https://example.com)\n"
        "[gone](docs/b.md) [nowhere](docs/a.md#figures)\n\n# Readme\n"
        "```\n[inside code](docs/c.md)\n```\n"
    )
    assert broken_links(tmp_path) == [
        "README.md: docs/b.md: no such file",
        "README.md: docs/a.md#figures: no heading with that anchor",
    ]
