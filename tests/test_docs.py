"""The documentation builds warning-free, and every citation of it in the code resolves.

``mkdocs build --strict`` (as ``make docs``) into a temporary directory when
MkDocs and mkdocstrings are installed (the ``docs`` extra, also in ``test``);
the citation check needs nothing beyond the standard library.
"""
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"docs/(\w+)\.md(?:#([\w-]+))?")


def _slug(heading):
    """Python-Markdown's (and GitHub's, for these headings) anchor of a heading."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page):
    return {_slug(line.lstrip("#").strip()) for line in page.read_text().splitlines()
            if line.startswith("#")}


def _sources():
    for folder in ("natcoord", "tests", "benchmarks", "paper", "notebooks"):
        yield from (ROOT / folder).rglob("*.py")
    yield from (ROOT / "notebooks").glob("*.ipynb")
    yield ROOT / "README.md"


def test_citations_of_the_docs_resolve():
    cited = 0
    for path in _sources():
        for page, anchor in CITATION.findall(path.read_text(errors="replace")):
            target = ROOT / "docs" / f"{page}.md"
            assert target.exists(), f"{path.relative_to(ROOT)} cites missing docs/{page}.md"
            if anchor:
                assert anchor in _anchors(target), \
                    f"{path.relative_to(ROOT)} cites docs/{page}.md#{anchor}: no such section"
            cited += 1
    assert cited > 10


def test_no_citation_of_files_outside_the_repository():
    for path in _sources():
        if path.name == Path(__file__).name:
            continue
        text = path.read_text(errors="replace")
        assert "../shared/" not in text, f"{path.relative_to(ROOT)} cites ../shared/"
        assert not re.search(r"\bDESIGN\b(?! *=)|DESIGN\.md|(?<!docs/)BENCHMARKS\.md", text), \
            f"{path.relative_to(ROOT)} cites DESIGN/BENCHMARKS.md instead of docs/"


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    pytest.importorskip("mkdocstrings_handlers.python")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "Integrate the equations of motion" in api        # autodoc ran on simulate
    assert (tmp_path / "site" / "method" / "index.html").exists()


def test_files_the_docs_name_exist():
    """Every repository file the documentation names (``natcoord/…/x.py``,
    ``benchmarks/…``, ``data/….csv``, …) exists: a module that moved leaves no
    dangling path behind. The CHANGELOG is history and keeps the paths of its day."""
    named = re.compile(r"\b(?:natcoord|benchmarks|tests|paper|notebooks|data)/[\w/.-]+"
                       r"\.(?:py|c|h|csv|ipynb|json|md)\b")
    pages = [*(ROOT / "docs").glob("*.md"), ROOT / "README.md",
             ROOT / "benchmarks" / "README.md", ROOT / "notebooks" / "README.md"]
    missing = sorted({f"{page.relative_to(ROOT)}: {name}" for page in pages
                      for name in named.findall(page.read_text())
                      if not (ROOT / name).exists()})
    assert not missing, "the documentation names files that do not exist:\n" + "\n".join(missing)
