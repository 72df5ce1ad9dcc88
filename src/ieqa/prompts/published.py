"""The prompts of published evaluators, read from their authors' own files.

A released evaluator (EditReward, EditScore, VIEScore, ...) was trained or tuned with its
authors' prompt text, and scores as published only with that text. ieqa does not carry
those texts: each published evaluator names the authors' source files that hold them
(:class:`SourceFile`: repository, pinned commit, path and SHA-256) and the string
constants to take from each (:class:`PublishedText`; for a JSON file, the keys of its
top-level object). :func:`load_texts` fetches each file
once into ieqa's cache (:func:`cache_dir`), checks its SHA-256 and reads the constants by
parsing the file, never by executing it.

Offline, ``prompts_dir`` (``--prompts DIR`` on the command line) points at a local copy
laid out as the authors' repository (the same relative paths); it is used instead of the
cache and the network, and its files must have the pinned hashes too unless
``verify=False`` or the folder holds stand-ins written by
:func:`ieqa.testing.releases.write_prompt_standins` (marked so; a warning says the scores
are then not the published evaluator's).

Examples:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "prompts.py").write_text("GREETING = 'Rate: {text}'\\n")
    >>> source = SourceFile("owner/repo", "0" * 40, "prompts.py", sha256="0" * 64)
    >>> load_texts([PublishedText("greeting", source, "GREETING", ("text",))],
    ...            prompts_dir=folder, verify=False)
    {'greeting': 'Rate: {text}'}
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
import os
import re
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ieqa.errors import IeqaError
from ieqa.testing.releases import STANDIN_MARKER

__all__ = ["SourceFile", "PublishedText", "PublishedPromptError", "cache_dir", "fetch_source",
           "prompts_record",
           "read_constants", "read_json_texts", "load_texts", "is_standin", "RAW_URL"]

log = logging.getLogger(__name__)

#: where a pinned file is downloaded from: ``{repo}``, ``{revision}`` and ``{path}`` are
#: filled in (``IEQA_PUBLISHED_URL`` overrides it, e.g. for a mirror)
RAW_URL = "https://raw.githubusercontent.com/{repo}/{revision}/{path}"

#: seconds a download may take
FETCH_TIMEOUT_S = 30.0


class PublishedPromptError(IeqaError, ValueError):
    """A published evaluator's prompt file is missing, cannot be fetched, has another
    SHA-256 than the pinned one, or lacks a named constant."""


@dataclass(frozen=True)
class SourceFile:
    """One file of an evaluator's published source, pinned.

    Attributes:
        repo: GitHub ``owner/name`` of the authors' repository.
        revision: the commit (40 hex digits) the file is read at.
        path: the file's path inside the repository (``/``-separated).
        sha256: hex SHA-256 of the file's bytes at that commit.
    """

    repo: str
    revision: str
    path: str
    sha256: str

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[0-9a-f]{40}", self.revision):
            raise ValueError(f"revision must be a 40-digit commit hash, got {self.revision!r}")
        if not re.fullmatch(r"[0-9a-f]{64}", self.sha256):
            raise ValueError(f"sha256 must be 64 hex digits, got {self.sha256!r}")
        if self.path.startswith("/") or ".." in Path(self.path).parts:
            raise ValueError(f"path must be relative inside the repository, got {self.path!r}")

    @property
    def url(self) -> str:
        """The download address (:data:`RAW_URL`, or ``IEQA_PUBLISHED_URL`` when set)."""
        template = os.environ.get("IEQA_PUBLISHED_URL") or RAW_URL
        return template.format(repo=self.repo, revision=self.revision, path=self.path)

    def describe(self) -> str:
        """``owner/name@commit:path`` (commit shortened to 12 digits)."""
        return f"{self.repo}@{self.revision[:12]}:{self.path}"

    def to_dict(self) -> dict[str, str]:
        """JSON-serialisable form (recorded in score files)."""
        return {"repo": self.repo, "revision": self.revision, "path": self.path,
                "sha256": self.sha256}


@dataclass(frozen=True)
class PublishedText:
    """A string constant of a published source file, used as (part of) a prompt.

    Attributes:
        name: what ieqa calls the text (a key of :func:`load_texts`' result).
        source: the file that holds it.
        constant: the module-level name it is assigned to (``NAME = "..."``).
        placeholders: the ``{field}`` names the text must contain (checked on load, so
            that a changed file cannot silently drop the instruction).
        markers: literal strings the text must contain (a special token, say).
    """

    name: str
    source: SourceFile
    constant: str
    placeholders: tuple[str, ...] = ()
    markers: tuple[str, ...] = ()


def cache_dir() -> Path:
    """ieqa's download cache: ``IEQA_CACHE_DIR``, else ``$XDG_CACHE_HOME/ieqa``, else
    ``~/.cache/ieqa``."""
    if os.environ.get("IEQA_CACHE_DIR"):
        return Path(os.environ["IEQA_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ieqa"


def is_standin(prompts_dir: str | Path | None) -> bool:
    """True when ``prompts_dir`` holds stand-ins written by
    :func:`ieqa.testing.releases.write_prompt_standins` (not the authors' text)."""
    return prompts_dir is not None and (Path(prompts_dir) / STANDIN_MARKER).is_file()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _mismatch(source: SourceFile, where: str, got: str) -> PublishedPromptError:
    return PublishedPromptError(
        f"{where} has SHA-256 {got}, but {source.describe()} is pinned at {source.sha256}. "
        "Point --prompts at a copy of the authors' repository at that commit, or delete the "
        "file so that it is fetched again")


def fetch_source(source: SourceFile, *, prompts_dir: str | Path | None = None,
                 verify: bool = True) -> Path:
    """The local path of ``source``, checked against its SHA-256.

    With ``prompts_dir``, the file is ``prompts_dir / source.path`` (never downloaded).
    Without, it is read from the cache, or downloaded into it first.

    Args:
        source: the pinned file.
        prompts_dir: a local copy laid out as the authors' repository (``--prompts``).
        verify: check the SHA-256 (only a ``prompts_dir`` copy may skip it).

    Raises:
        PublishedPromptError: the file is missing, cannot be downloaded, or has another hash.
    """
    if prompts_dir is not None:
        path = Path(prompts_dir) / source.path
        if not path.is_file():
            raise PublishedPromptError(
                f"{path} not found: --prompts {prompts_dir} must hold the authors' repository "
                f"{source.repo} at {source.revision} laid out as published (this file is "
                f"{source.path}, SHA-256 {source.sha256})")
        if verify and is_standin(prompts_dir):
            log.warning("%s: stand-in prompt files (ieqa.testing.write_prompt_standins), not "
                        "the authors' text: the scores are not the published evaluator's",
                        prompts_dir)
        elif verify:
            got = _sha256(path.read_bytes())
            if got != source.sha256:
                raise _mismatch(source, str(path), got)
        return path
    if not verify:
        raise ValueError("verify=False needs prompts_dir: downloaded files are always checked")
    path = cache_dir() / "published" / source.repo.replace("/", "+") / source.revision / source.path
    if path.is_file():
        got = _sha256(path.read_bytes())
        if got != source.sha256:
            raise _mismatch(source, f"the cached {path}", got)
        return path
    url = source.url
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT_S) as response:  # noqa: S310
            data = response.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise PublishedPromptError(
            f"cannot download {url} ({exc}). Without network, pass --prompts DIR: a copy of "
            f"{source.repo} at {source.revision} (this file is {source.path})") from exc
    got = _sha256(data)
    if got != source.sha256:
        raise _mismatch(source, url, got)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
        try:
            tmp.write(data)
        except OSError:
            Path(tmp.name).unlink(missing_ok=True)
            raise
    os.chmod(tmp.name, 0o644)  # readable by others sharing the cache, like any download
    os.replace(tmp.name, path)  # atomic: a concurrent reader never sees half a file
    return path


def read_constants(path: str | Path, names: Sequence[str]) -> dict[str, str]:
    """Module-level string constants of a Python file, by parsing it (never executed).

    ``NAME = "..."`` (any quoting, implicit concatenation of literals included) is read, and
    so is a ``+`` of literals and f-strings whose fields are bare names
    (``"..." + f"{instruction}\n"``): each field is kept as ``{name}``, to be filled with
    ``str.replace`` (the literal text may hold other braces); a field ``str(name).strip()`` or
    ``name.strip()`` is kept as ``{name|strip}`` (fill it with the stripped value). A name
    assigned twice takes its last value, as the module would. ``"NAME()"`` reads what the
    module-level function ``NAME`` returns when its body is one ``return`` of such text (a
    prompt built by a function of the instruction), ``"CLASS.NAME()"`` the same of a method,
    ``"NAME(PARAM=VALUE)"`` the text the function assigns in its ``if PARAM == "VALUE":``
    branch (and returns), and ``"NAME(VAR)"`` the first assignment to ``VAR`` in the body of
    function ``NAME``, a call in it kept as ``{call:FUNCTION}``.

    Raises:
        PublishedPromptError: the file does not parse, or a name is missing or not a string
            literal.
    """
    path = Path(path)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError) as exc:
        raise PublishedPromptError(f"{path} is not a Python file ieqa can parse: {exc}") from exc
    found: dict[str, object] = {}
    functions = [(node, "") for node in tree.body]
    functions += [(item, f"{node.name}.") for node in tree.body if isinstance(node, ast.ClassDef)
                  for item in node.body]
    for node, owner in functions:
        if not isinstance(node, ast.FunctionDef):
            continue
        if f"{owner}{node.name}()" in names:
            found[f"{owner}{node.name}()"] = _returned(node)
        for name in names:
            spec = re.fullmatch(rf"{re.escape(node.name)}\((\w+)(?:=(\w+))?\)", name)
            if spec and not owner:
                found[name] = (_branch(node, spec.group(1), spec.group(2)) if spec.group(2)
                               else _assigned(node, spec.group(1)))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id in names:
                found[target.id] = _literal(value)
    out = {}
    for name in names:
        if name not in found:
            what = f"function {name[:-2]}" if name.endswith("()") else name
            what = f"method {name[:-2]}" if "." in name else what
            raise PublishedPromptError(f"{path} defines no module-level {what}")
        if not isinstance(found[name], str):
            raise PublishedPromptError(f"{path}: {name} is not a string literal (or a + of "
                                       "literals and f-strings over bare names)")
        out[name] = str(found[name])
    return out


def _literal(node: ast.expr, *, calls: bool = False) -> str | None:
    """The text of a string literal, an f-string over bare names (fields kept as
    ``{name}``) or a ``+`` of those (with ``calls``: a call of a named function too, kept as
    ``{call:NAME}``); ``None`` for anything else."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if calls and isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return "{call:" + node.func.id + "}"
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append(value.value)
            elif (isinstance(value, ast.FormattedValue) and value.conversion == -1
                  and value.format_spec is None and _field(value.value) is not None):
                parts.append("{" + str(_field(value.value)) + "}")
            else:
                return None
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left, calls=calls), _literal(node.right, calls=calls)
        return None if left is None or right is None else left + right
    return None


def _returned(node: ast.FunctionDef) -> str | None:
    """The text a function returns when its body (a docstring aside) is one ``return``."""
    body = [n for n in node.body
            if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return _literal(body[0].value)
    return None


def _branch(node: ast.FunctionDef, param: str, value: str) -> str | None:
    """The text a function assigns to a name in its ``if param == "value":`` branch (an
    if/elif chain at the top of its body), when the function then returns that name."""
    returned = node.body[-1] if node.body and isinstance(node.body[-1], ast.Return) else None
    target = returned.value.id if returned is not None and isinstance(returned.value, ast.Name) \
        else None
    for statement in node.body:
        branch: ast.stmt | None = statement
        while isinstance(branch, ast.If):
            test = branch.test
            if (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
                    and test.left.id == param and len(test.ops) == 1
                    and isinstance(test.ops[0], ast.Eq)
                    and isinstance(test.comparators[0], ast.Constant)
                    and test.comparators[0].value == value):
                assigns = [n for n in branch.body if isinstance(n, ast.Assign)]
                if len(assigns) == 1 and isinstance(assigns[0].targets[0], ast.Name) \
                        and assigns[0].targets[0].id == target:
                    return _literal(assigns[0].value)
                return None
            branch = branch.orelse[0] if len(branch.orelse) == 1 else None
    return None


def _assigned(node: ast.FunctionDef, var: str) -> str | None:
    """The first assignment to ``var`` in a function's body, calls kept as
    ``{call:FUNCTION}``."""
    for statement in node.body:
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == var):
            return _literal(statement.value, calls=True)
    return None


def _field(node: ast.expr) -> str | None:
    """``name`` for an f-string field ``{name}``, ``name|strip`` for ``{str(name).strip()}``
    or ``{name.strip()}``; ``None`` for any other expression."""
    if isinstance(node, ast.Name):
        return node.id
    if (isinstance(node, ast.Call) and not node.args and not node.keywords
            and isinstance(node.func, ast.Attribute) and node.func.attr == "strip"):
        inner = node.func.value
        if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)
                and inner.func.id == "str" and len(inner.args) == 1 and not inner.keywords):
            inner = inner.args[0]
        if isinstance(inner, ast.Name):
            return f"{inner.id}|strip"
    return None


def read_json_texts(path: str | Path, names: Sequence[str]) -> dict[str, str]:
    """String values of a JSON file's top-level object, by key (a prompt file published
    as JSON, e.g. ImgEdit-Bench's ``prompts.json``: one prompt per edit type).

    Raises:
        PublishedPromptError: the file is not a JSON object, or a key is missing or not a
            string.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PublishedPromptError(f"{path} is not a JSON file ieqa can read: {exc}") from exc
    if not isinstance(data, dict):
        raise PublishedPromptError(f"{path}: expected a JSON object of prompt texts, got "
                                   f"{type(data).__name__}")
    out = {}
    for name in names:
        if not isinstance(data.get(name), str):
            raise PublishedPromptError(f"{path} has no text under the key {name!r}; is this "
                                       "the file at the pinned commit?")
        out[name] = data[name]
    return out


def load_texts(texts: Sequence[PublishedText], *, prompts_dir: str | Path | None = None,
               verify: bool = True) -> dict[str, str]:
    """The texts, by :attr:`PublishedText.name` (each file fetched and parsed once).

    Raises:
        PublishedPromptError: a file cannot be had (see :func:`fetch_source`), a constant is
            missing, or a text lacks one of its placeholders.
    """
    by_file: dict[SourceFile, list[PublishedText]] = {}
    for text in texts:
        by_file.setdefault(text.source, []).append(text)
    out: dict[str, str] = {}
    for source, wanted in by_file.items():
        path = fetch_source(source, prompts_dir=prompts_dir, verify=verify)
        names = [t.constant for t in wanted]
        values = read_json_texts(path, names) if path.suffix == ".json" else \
            read_constants(path, names)
        for text in wanted:
            value = values[text.constant]
            needed = [*("{" + p + "}" for p in text.placeholders), *text.markers]
            missing = [m for m in needed if m not in value]
            if missing:
                raise PublishedPromptError(
                    f"{path}: {text.constant} lacks {', '.join(missing)}, which ieqa needs "
                    "in it; is this the file at the pinned commit?")
            out[text.name] = value
    return out


def prompts_record(texts: Sequence[PublishedText],
                   prompts_dir: str | Path | None = None) -> dict[str, Any]:
    """What a score file records of a published scorer's prompts: the pinned ``files``
    (each once) and whether they were ``standin`` files. Where they were read from (the
    cache or a ``--prompts`` copy with the same hashes) is not part of it: scorers record
    that under their config's ``provenance``, which does not identify a configuration."""
    files = list(dict.fromkeys(t.source for t in texts))
    return {"files": [f.to_dict() for f in files], "standin": is_standin(prompts_dir)}
