"""The docs folder: its index names every page."""

from pathlib import Path


def test_docs_readme_indexes_every_doc():
    # docs/README.md is the index: a page added without an entry there is a page nobody finds.
    docs = Path(__file__).resolve().parents[1] / "docs"
    index = (docs / "README.md").read_text()
    missing = [page.name for page in docs.glob("*.md") if page.name != "README.md" and f"]({page.name})" not in index]
    assert missing == []
