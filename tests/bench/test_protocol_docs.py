from pathlib import Path

from ieqa.bench.protocols import protocol_markdown, published_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocols.md"


def test_protocol_doc_matches_the_code():
    assert protocol_markdown().strip() in DOC.read_text()


def test_published_table_in_the_doc_matches_the_code():
    assert published_markdown().strip() in DOC.read_text()
