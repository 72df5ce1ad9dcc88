from pathlib import Path

from ieqa.bench.protocols import protocol_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocols.md"


def test_protocol_doc_matches_the_code():
    assert protocol_markdown().strip() in DOC.read_text()
