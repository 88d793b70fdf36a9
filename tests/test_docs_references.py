"""The papers the docs build on are cited so a reader can follow them: every citation links to
docs/references.md, whose entries give title, authors, venue and year; no page cites a paper by
the project's internal number ("seed 002") alone."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT

DOCS = ROOT / "docs"
REFERENCES = (DOCS / "references.md").read_text()
PAGES = sorted(p for p in [*DOCS.glob("*.md"), ROOT / "README.md"] if p.name != "references.md")
LINK = re.compile(r"\]\((?:docs/)?references\.md#([\w-]+)\)")
ANCHORS = set(re.findall(r'<a id="([\w-]+)"></a>', REFERENCES))
SEEDS = [f"seed 00{n}" for n in range(5)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_cites_a_paper_by_its_internal_number_alone(page):
    text = page.read_text()
    found = sorted({m.group(0) for m in re.finditer(r"[Ss]eed 00\d", text)})
    assert not found, f"{page.name}: {found}: link to docs/references.md instead"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_citation_link_reaches_an_entry(page):
    for anchor in LINK.findall(page.read_text()):
        assert anchor in ANCHORS, f"{page.name}: references.md#{anchor} does not exist"


def test_the_docs_cite_each_paper():
    cited = {anchor for page in PAGES for anchor in LINK.findall(page.read_text())}
    assert cited == ANCHORS


def test_each_entry_names_the_code_number_title_authors_and_year():
    entries = re.split(r'<a id="[\w-]+"></a>', REFERENCES)[1:]
    assert len(entries) == len(ANCHORS) == len(SEEDS)
    for seed, entry in zip(SEEDS, entries, strict=True):
        assert f"`{seed}` in the code" in entry
        assert re.search(r"\*[A-Z][^*]{20,}\.\*", entry), f"{seed}: no title in italics"
    for entry in entries[:1] + entries[2:]:  # the copy of seed 001 names no authors
        assert re.search(r"\b(19|20)\d\d\b", entry) and " and " in entry
