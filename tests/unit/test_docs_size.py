"""The user docs stay a size a reader gets through, and each page opens with what a user does.

The pages are README.md, CONTRIBUTING.md, docs/*.md and config/README.md: they teach how to run,
configure and read factprobe. History belongs in CHANGELOG.md and measured figures in
benchmarks/RESULTS.md, which are not counted here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Most bytes the pages may hold together: the budget of their size, with room left under 200 KiB.
LIMIT = 200_000


def pages() -> list[Path]:
    return [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        *sorted((ROOT / "docs").glob("*.md")),
        ROOT / "config" / "README.md",
    ]


def test_the_pages_fit_their_budget():
    sizes = {str(p.relative_to(ROOT)): p.stat().st_size for p in pages()}
    total = sum(sizes.values())
    listing = ", ".join(f"{name} {size:,}" for name, size in sorted(sizes.items(), key=lambda kv: -kv[1]))
    assert total <= LIMIT, (
        f"the docs hold {total:,} bytes, over {LIMIT:,}: cut history (CHANGELOG.md), measured figures "
        f"(benchmarks/RESULTS.md) or repetition; bytes per page: {listing}"
    )


def opening(text: str) -> str:
    """The first paragraph after a page's ``# `` title: the lines up to the next blank line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# ")) + 1
    while start < len(lines) and not lines[start].strip():
        start += 1
    paragraph = []
    for line in lines[start:]:
        if not line.strip():
            break
        paragraph.append(line)
    return "\n".join(paragraph)


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_each_page_opens_with_a_paragraph(page):
    text = page.read_text(encoding="utf-8")
    assert re.search(r"(?m)^# \S", text), f"{page.relative_to(ROOT)}: no '# ' title line"
    first = opening(text)
    # A paragraph of prose: not missing, not a heading, a table, a list or a code block.
    assert first and not re.match(r"(#|\||```|- |\d+\. )", first), (
        f"{page.relative_to(ROOT)}: the title is not followed by a paragraph saying what a user "
        f"runs or gets (found {first[:60]!r})"
    )
    assert len(re.findall(r"[A-Za-z]{2,}", first)) >= 8, (
        f"{page.relative_to(ROOT)}: the opening paragraph is too short to say what a user runs or gets"
    )


def test_the_opening_is_read_after_the_title():
    text = "# Title\n\nFirst line of it\nsecond line.\n\n## Section\n"
    assert opening(text) == "First line of it\nsecond line."
    assert opening("# Title\n## Section\n") == "## Section"
