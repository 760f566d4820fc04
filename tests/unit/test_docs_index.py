"""The docs a reader can find: every page under docs/ is listed in README.md, and every relative
Markdown link in README.md and docs/ points at a file of this repository (the repository stands
on its own: issue 18)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: [text](target) with a relative target (no scheme, no in-page anchor only)
LINK = re.compile(r"\[[^\]]*\]\((?!https?:|mailto:|#)([^)\s]+)\)")


def relative_links(text: str):
    return [m.group(1).split("#", 1)[0] for m in LINK.finditer(text)]


def broken_links(page: Path):
    return [t for t in relative_links(page.read_text(encoding="utf-8"))
            if t and not (page.parent / t).resolve().is_file()]


def test_every_docs_page_is_listed_in_the_readme():
    listed = {(ROOT / t).resolve() for t in relative_links((ROOT / "README.md").read_text(encoding="utf-8"))}
    missing = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.resolve() not in listed)
    assert missing == [], f"docs pages README.md does not list: {missing}"


def test_relative_links_in_the_readme_and_docs_resolve():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = {p.name: b for p in pages if (b := broken_links(p))}
    assert broken == {}


def test_the_link_check_finds_a_link_to_a_missing_file(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("x")
    page.write_text("[ok](there.md) [anchor](there.md#a) [web](https://example.com/x) "
                    "[gone](missing.md) [self](#top)")
    assert broken_links(page) == ["missing.md"]


#: what only a build machine has: the briefing folder beside the repository, and its work tree
OUTSIDE = re.compile("|".join([re.escape("../" + "shared/"), r"(?<![\w.])/" + "work/"]))
#: not ours to edit (upstream files kept verbatim as contracts), or not the repository's
SKIP_DIRS = {".git", ".venv", "out", "__pycache__", ".kimi-k3", "contracts", ".pytest_cache", ".hypothesis",
             "mutants", ".ruff_cache", "tmp"}


def outside_references(root: Path):
    found = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or SKIP_DIRS & set(path.relative_to(root).parts):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found += [f"{path.relative_to(root)}:{m.group(0)}" for m in OUTSIDE.finditer(text)]
    return found


def test_nothing_refers_to_a_path_outside_the_repository():
    assert outside_references(ROOT) == []


def test_the_outside_check_finds_both_kinds(tmp_path):
    (tmp_path / "a.md").write_text("see ../" + "shared/REFERENCE.md and /" + "work/main/x, not ." + "/" + "work/y")
    assert outside_references(tmp_path) == ["a.md:../" + "shared/", "a.md:/" + "work/"]
