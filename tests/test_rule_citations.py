"""Every rule the repository cites is a section of its rules pages that exists.

Rejections carry a ``rule`` (``docs/rules/hoola.md §1.2``), the contract's comments and the docs
cite sections too; a citation is good when the page exists and has a heading that starts with the
section (``## §1.2 A turn``). Users have only the repository: nothing may point at a rules text
outside it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "docs" / "rules"
#: Which page holds each part of the rules (§1 Hoola … §5 what every game shares).
PAGE_OF_PART = {"1": "hoola", "2": "koikoi", "3": "rummy", "4": "gin", "5": "common"}
#: ``docs/rules/gin.md §4.2``, ``docs/rules/gin.md, §4``, or a page alone.
PAGE_CITATION = re.compile(r"docs/rules/(\w+)\.md,? (?:§(\d+(?:\.\d+)*))?")
#: ``docs/rules §4`` (the part names the page).
PART_CITATION = re.compile(r"docs/rules §(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#+ §(\d+(?:\.\d+)*)\b", re.MULTILINE)
#: What the code, the contract and the docs are made of (the recorded corpus is data).
CITING = ("*.py", "*.proto", "*.md")


def _files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--", *CITING],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    here = Path(__file__).resolve()
    return [
        ROOT / name
        for name in listed
        if "/corpus/" not in name and "node_modules" not in name and ROOT / name != here
    ]


def _sections(page: str) -> set[str]:
    return set(HEADING.findall((RULES / f"{page}.md").read_text(encoding="utf-8")))


def _citations() -> list[tuple[str, str, str]]:
    """(where, page, section or "") of every citation in the repository's files."""
    found = []
    for path in _files():
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(ROOT))
        for match in PAGE_CITATION.finditer(text):
            found.append((where, match.group(1), match.group(2) or ""))
        for match in PART_CITATION.finditer(text):
            section = match.group(1)
            found.append((where, PAGE_OF_PART[section.split(".")[0]], section))
    return found


def test_the_repository_cites_its_rules_pages() -> None:
    citations = _citations()
    # The engines' rejections alone cite dozens; a scan that finds none is broken, not clean.
    assert len({(page, section) for _, page, section in citations if section}) >= 20
    assert {page for _, page, _ in citations} >= set(PAGE_OF_PART.values())


@pytest.mark.parametrize("page", sorted(set(PAGE_OF_PART.values())))
def test_every_cited_section_is_a_heading_of_its_page(page: str) -> None:
    sections = _sections(page)
    missing = sorted(
        {
            f"{where}: docs/rules/{cited}.md §{section}"
            for where, cited, section in _citations()
            if cited == page and section and section not in sections
        }
    )
    assert not missing, "cited sections with no heading:\n" + "\n".join(missing)


def test_every_cited_page_exists() -> None:
    missing = sorted(
        {f"{w}: docs/rules/{p}.md" for w, p, _ in _citations() if not (RULES / f"{p}.md").exists()}
    )
    assert not missing, "\n".join(missing)


def test_every_rejection_cites_a_section_that_exists() -> None:
    """The engines' rule constants, read from the modules themselves (what a rejection carries)."""
    from croupier.engine.gin import moves as gin_moves
    from croupier.engine.hoola import moves as hoola_moves
    from croupier.engine.koikoi import moves as koikoi_moves
    from croupier.engine.rummy import moves as rummy_moves

    rules = {
        (module.__name__, name): value
        for module in (gin_moves, hoola_moves, koikoi_moves, rummy_moves)
        for name, value in vars(module).items()
        if name.startswith("R_") and isinstance(value, str)
    }
    assert len(rules) >= 15
    for (module, name), rule in rules.items():
        match = PAGE_CITATION.fullmatch(rule)
        assert match is not None and match.group(2), f"{module}.{name} = {rule!r}"
        assert match.group(2) in _sections(match.group(1)), f"{module}.{name} = {rule!r}"


def test_nothing_points_outside_the_repository_for_the_rules() -> None:
    outside = re.compile(r"RULES\.md|\.\./shared")
    pointing = [
        str(path.relative_to(ROOT))
        for path in _files()
        if outside.search(path.read_text(encoding="utf-8"))
    ]
    assert not pointing, pointing
