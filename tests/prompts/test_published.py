"""Published prompt files: fetched once at a pinned revision, checked by SHA-256, parsed
(never executed); ``--prompts`` copies used instead of the network."""

from __future__ import annotations

import hashlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ieqa.prompts.published import (
    PublishedPromptError,
    PublishedText,
    SourceFile,
    fetch_source,
    load_texts,
    read_constants,
)

BODY = (b'raise SystemExit("never executed")\n'
        b'FIRST = """Rate the edit for: {text_prompt}"""\n'
        b"SECOND = ('implicit ' 'concatenation <|Reward|>')\n"
        b"NOT_TEXT = 3\n"
        b'FIRST = """Later wins: {text_prompt}"""\n')
REV = "a" * 40


def _source(body: bytes = BODY, path: str = "pkg/prompts.py") -> SourceFile:
    return SourceFile("owner/repo", REV, path, hashlib.sha256(body).hexdigest())


@pytest.fixture
def server(tmp_path, monkeypatch) -> Iterator[dict]:
    """A 127.0.0.1 file server laid out as raw.githubusercontent.com, counting requests."""
    root = tmp_path / "www"
    (root / "owner/repo" / REV / "pkg").mkdir(parents=True)
    (root / "owner/repo" / REV / "pkg/prompts.py").write_bytes(BODY)
    hits: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args) -> None:
            hits.append(self.path)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("IEQA_PUBLISHED_URL",
                       f"http://127.0.0.1:{httpd.server_port}/{{repo}}/{{revision}}/{{path}}")
    monkeypatch.setenv("IEQA_CACHE_DIR", str(tmp_path / "cache"))
    try:
        yield {"root": root, "hits": hits}
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_fetched_once_checked_and_cached(server, tmp_path) -> None:
    source = _source()
    path = fetch_source(source)
    assert path.read_bytes() == BODY and str(tmp_path / "cache") in str(path)
    assert path.stat().st_mode & 0o777 == 0o644  # readable by others sharing the cache
    assert fetch_source(source) == path
    assert len(server["hits"]) == 1  # the second call read the cache
    texts = load_texts([PublishedText("first", source, "FIRST", ("text_prompt",)),
                        PublishedText("second", source, "SECOND", markers=("<|Reward|>",))])
    assert texts == {"first": "Later wins: {text_prompt}",
                     "second": "implicit concatenation <|Reward|>"}
    # a cached file that changed is refused, not used
    path.write_bytes(BODY + b"# edited\n")
    with pytest.raises(PublishedPromptError, match="cached"):
        fetch_source(source)


def test_a_download_with_another_hash_is_refused_and_not_cached(server, tmp_path) -> None:
    wrong = SourceFile("owner/repo", REV, "pkg/prompts.py", "0" * 64)
    with pytest.raises(PublishedPromptError) as info:
        fetch_source(wrong)
    assert "0" * 64 in str(info.value) and "--prompts" in str(info.value)
    assert not list((tmp_path / "cache").rglob("prompts.py"))


def test_no_network_says_to_use_prompts(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("IEQA_PUBLISHED_URL", "http://127.0.0.1:9/{repo}/{revision}/{path}")
    monkeypatch.setenv("IEQA_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(PublishedPromptError, match="pass --prompts DIR"):
        fetch_source(_source())


def test_a_local_copy_is_used_and_checked(tmp_path) -> None:
    copy = tmp_path / "repo"
    (copy / "pkg").mkdir(parents=True)
    (copy / "pkg/prompts.py").write_bytes(BODY)
    assert fetch_source(_source(), prompts_dir=copy) == copy / "pkg/prompts.py"
    (copy / "pkg/prompts.py").write_bytes(BODY.replace(b"edit", b"EDIT"))
    with pytest.raises(PublishedPromptError, match="SHA-256"):
        fetch_source(_source(), prompts_dir=copy)
    assert fetch_source(_source(), prompts_dir=copy, verify=False).is_file()


def test_a_sum_of_literals_and_fstrings_keeps_its_fields(tmp_path) -> None:
    path = tmp_path / "script.py"
    path.write_text('instruction = ""\n'
                    'problem = "Rules {\\"score\\": [...]}\\nEdit:" + f"{instruction}\\n"\n'
                    'plain = f"{instruction}"\n'
                    'called = "a" + str(1)\n'
                    'formatted = f"{instruction!r}"\n'
                    'attribute = f"{args.instruction}"\n')
    got = read_constants(path, ["problem", "plain"])
    assert got == {"problem": 'Rules {"score": [...]}\nEdit:{instruction}\n',
                   "plain": "{instruction}"}
    for name in ("called", "formatted", "attribute"):
        with pytest.raises(PublishedPromptError, match=f"{name} is not a string literal"):
            read_constants(path, [name])


def test_a_prompt_returned_by_a_function_is_read(tmp_path) -> None:
    path = tmp_path / "prompting.py"
    path.write_text(
        "def build_prompt(instruction: str) -> str:\n"
        "    # a comment\n"
        "    return (\n"
        "        'Rate the edit. '\n"
        "        f'Instruction: {str(instruction).strip()}\\n'\n"
        "        f'Again: {instruction.strip()} and {instruction}'\n"
        "    )\n"
        "def two_steps(x):\n"
        "    y = 1\n"
        "    return f'{x}'\n"
        "def computed(x):\n"
        "    return f'{x.upper()}'\n"
        "class Model:\n"
        "    def build_prompt(self, instruction, critique_text):\n"
        "        return ('Judge. ' f'{instruction.strip()} / {critique_text.strip()}')\n")
    got = read_constants(path, ["build_prompt()"])
    assert got == {"build_prompt()": "Rate the edit. Instruction: {instruction|strip}\n"
                                     "Again: {instruction|strip} and {instruction}"}
    for name in ("two_steps()", "computed()"):
        with pytest.raises(PublishedPromptError, match="is not a string literal"):
            read_constants(path, [name])
    with pytest.raises(PublishedPromptError, match="no module-level function missing"):
        read_constants(path, ["missing()"])
    assert read_constants(path, ["Model.build_prompt()"]) == {
        "Model.build_prompt()": "Judge. {instruction|strip} / {critique_text|strip}"}
    with pytest.raises(PublishedPromptError, match="no module-level method Model.other"):
        read_constants(path, ["Model.other()"])


def test_constants_are_parsed_and_checked(tmp_path) -> None:
    path = tmp_path / "p.py"
    path.write_bytes(BODY)
    assert read_constants(path, ["SECOND"]) == {"SECOND": "implicit concatenation <|Reward|>"}
    with pytest.raises(PublishedPromptError, match="no module-level MISSING"):
        read_constants(path, ["MISSING"])
    with pytest.raises(PublishedPromptError, match="NOT_TEXT is not a string literal"):
        read_constants(path, ["NOT_TEXT"])
    source = SourceFile("owner/repo", REV, "p.py", hashlib.sha256(BODY).hexdigest())
    with pytest.raises(PublishedPromptError, match=r"lacks \{instruction\}"):
        load_texts([PublishedText("x", source, "FIRST", ("instruction",))], prompts_dir=tmp_path)
    with pytest.raises(PublishedPromptError, match="lacks <|Other|>"):
        load_texts([PublishedText("x", source, "SECOND", markers=("<|Other|>",))],
                   prompts_dir=tmp_path)


def test_pins_are_validated() -> None:
    with pytest.raises(ValueError, match="40-digit"):
        SourceFile("owner/repo", "main", "a.py", "0" * 64)
    with pytest.raises(ValueError, match="relative"):
        SourceFile("owner/repo", REV, "../a.py", "0" * 64)
    assert Path(SourceFile("o/r", REV, "a/b.py", "0" * 64).path).name == "b.py"


def test_branch_and_assignment_texts_of_a_function_are_read(tmp_path) -> None:
    path = tmp_path / "inference.py"
    path.write_text(
        "def build_query(instruction, mode='a'):\n"
        "    if mode == 'a':\n"
        "        query = (f'A [{instruction}] <image> then <image>.' ' Reply.')\n"
        "    elif mode == 'b':\n"
        "        query = f'B {instruction}'\n"
        "    else:\n"
        "        raise ValueError(mode)\n"
        "    return query\n"
        "def infer(x, mode):\n"
        "    device = 'cpu'\n"
        "    query = build_query(x, mode) + ' The score is 00.00'\n"
        "    query = 'replaced later'\n"
        "    return query\n"
        "def other(mode):\n"
        "    if mode == 'a':\n"
        "        q = 'x'\n"
        "    return 'y'\n")
    got = read_constants(path, ["build_query(mode=a)", "build_query(mode=b)", "infer(query)"])
    assert got == {"build_query(mode=a)": "A [{instruction}] <image> then <image>. Reply.",
                   "build_query(mode=b)": "B {instruction}",
                   "infer(query)": "{call:build_query} The score is 00.00"}
    for name in ("build_query(mode=c)", "other(mode=a)", "infer(device2)"):
        with pytest.raises(PublishedPromptError):
            read_constants(path, [name])


def test_texts_of_a_json_prompt_file_are_read_by_key(tmp_path) -> None:
    from ieqa.prompts.published import PublishedPromptError, read_json_texts
    from ieqa.scorers.published.imgedit_judge import PROMPT_SOURCES
    from ieqa.testing.releases import write_prompt_standins

    (tmp_path / "p.json").write_text('{"add": "Rate <edit_prompt>.", "n": 3}')
    assert read_json_texts(tmp_path / "p.json", ["add"]) == {"add": "Rate <edit_prompt>."}
    with pytest.raises(PublishedPromptError, match="no text under the key 'n'"):
        read_json_texts(tmp_path / "p.json", ["n"])
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(PublishedPromptError, match="JSON object"):
        read_json_texts(tmp_path / "bad.json", ["add"])
    folder = write_prompt_standins(tmp_path / "standins", PROMPT_SOURCES)
    texts = load_texts(PROMPT_SOURCES, prompts_dir=folder)
    assert set(texts) == {t.name for t in PROMPT_SOURCES} and len(texts) == 9
    assert all("<edit_prompt>" in v for v in texts.values())
