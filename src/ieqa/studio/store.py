"""The studio's SQLite store: one file per study, WAL mode, one transaction per submission.

Tables:

* ``meta(key, value)``: the study's configuration (JSON), its secret and admin token;
* ``items(key, id, kind, role, data, gold)``: what raters judge. ``key`` is the integer
  used in URLs (never a client-given path); ``kind`` is ``sample`` (rate, critique),
  ``group`` (rank) or ``pair`` (pairwise); ``role`` is ``study``, ``gold`` (known
  answer, mixed in to screen raters) or ``training`` (shown first, with the answer);
  ``data`` holds the samples (id, image paths, instruction, editor, bbox, critique);
* ``raters(id, token)`` and ``assignments(rater, item, position, done)``: each rater's
  own ordered list of items;
* ``submissions(id, rater, item)`` and ``responses(submission, rater, item, dimension,
  value, answer)``: what raters answered. ``submissions.id`` is the idempotency key of
  one rendered form (UNIQUE), ``UNIQUE(rater, item)`` makes a second form for the same
  item a no-op, and ``UNIQUE(rater, item, dimension)`` keeps one answer per dimension.

:meth:`Store.submit` writes a submission, its responses and the assignment's ``done``
mark in one ``BEGIN IMMEDIATE`` transaction with ``synchronous=FULL``: once it returns,
the answer is on disk, and the page acknowledges it only then.
"""

from __future__ import annotations

import hmac
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ieqa.errors import IeqaError

__all__ = ["Assignment", "Item", "Store", "StudioError", "SubmitOutcome"]

SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    key INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('sample', 'group', 'pair')),
    role TEXT NOT NULL CHECK (role IN ('study', 'gold', 'training')),
    data TEXT NOT NULL,
    gold TEXT
);
CREATE TABLE IF NOT EXISTS raters (
    id TEXT PRIMARY KEY,
    token TEXT NOT NULL UNIQUE,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS assignments (
    rater TEXT NOT NULL REFERENCES raters(id),
    item INTEGER NOT NULL REFERENCES items(key),
    position INTEGER NOT NULL,
    done REAL,
    PRIMARY KEY (rater, item),
    UNIQUE (rater, position)
);
CREATE TABLE IF NOT EXISTS submissions (
    id TEXT PRIMARY KEY,
    rater TEXT NOT NULL REFERENCES raters(id),
    item INTEGER NOT NULL REFERENCES items(key),
    created REAL NOT NULL,
    UNIQUE (rater, item)
);
CREATE TABLE IF NOT EXISTS responses (
    submission TEXT NOT NULL REFERENCES submissions(id),
    rater TEXT NOT NULL,
    item INTEGER NOT NULL,
    dimension TEXT NOT NULL,
    value REAL,
    answer TEXT,
    UNIQUE (rater, item, dimension)
);
"""


class StudioError(IeqaError):
    """A study cannot be created, opened or answered as asked (the message says what to do)."""


@dataclass(frozen=True)
class Item:
    """One thing to judge: a sample, a group of candidates or a pair."""

    key: int
    id: str
    kind: str
    role: str
    data: dict[str, Any]
    gold: dict[str, Any] | None


@dataclass(frozen=True)
class Assignment:
    """Item ``item`` at place ``position`` (0-based) of ``rater``'s list; ``done`` is the
    time of the submission (``None``: not answered yet)."""

    rater: str
    item: int
    position: int
    done: float | None


@dataclass(frozen=True)
class SubmitOutcome:
    """What :meth:`Store.submit` did: ``"recorded"`` (new, committed), ``"repeat"`` (this
    form was already recorded: nothing written) or ``"already"`` (another form for the
    same item was recorded first: nothing written)."""

    status: str
    submission: str


class Store:
    """A study's SQLite file. Every method opens its own connection, so one ``Store`` can
    serve many threads; writes take the database lock with ``BEGIN IMMEDIATE``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    # ------------------------------------------------------------------ connections

    def connect(self) -> sqlite3.Connection:
        """A new connection in autocommit mode (transactions are explicit), with WAL,
        ``synchronous=FULL``, foreign keys and a 30 s busy timeout."""
        con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        con.row_factory = sqlite3.Row
        con.execute("PRAGMA busy_timeout = 30000")
        con.execute("PRAGMA synchronous = FULL")
        con.execute("PRAGMA foreign_keys = ON")
        return con

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any error)."""
        con = self.connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
        finally:
            con.close()

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A connection for reads (a WAL snapshot per statement)."""
        con = self.connect()
        try:
            yield con
        finally:
            con.close()

    # ------------------------------------------------------------------ creation

    def exists(self) -> bool:
        """True when the file holds a study."""
        if not self.path.is_file():
            return False
        try:
            with self.reading() as con:
                row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        except sqlite3.DatabaseError:
            return False
        return row is not None

    def create(self, meta: Mapping[str, Any], items: Sequence[dict[str, Any]],
               raters: Sequence[tuple[str, str]], assignments: Sequence[tuple[str, str, int]]) -> None:
        """Write a new study in one transaction: ``meta`` values (JSON-encoded), items
        (dicts with id, kind, role, data, gold), ``raters`` as ``(id, token)`` and
        ``assignments`` as ``(rater, item id, position)``."""
        if self.path.exists() and self.path.stat().st_size > 0:
            raise StudioError(f"{self.path} already exists; open it to resume the study, or "
                              "pass another --db to start a new one")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)  # it holds the tokens
        try:
            os.fchmod(fd, 0o600)  # an existing (empty) file keeps its mode through os.open
        finally:
            os.close(fd)
        con = self.connect()
        try:
            mode = con.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StudioError(f"{self.path}: SQLite refused WAL mode ({mode}); put the "
                                  "database on a local disk")
            con.executescript(_SCHEMA)
            con.execute("BEGIN IMMEDIATE")
            now = time.time()
            con.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                            [("schema", json.dumps(SCHEMA_VERSION))]
                            + [(k, json.dumps(v)) for k, v in meta.items()])
            keys: dict[str, int] = {}
            for item in items:
                cur = con.execute(
                    "INSERT INTO items (id, kind, role, data, gold) VALUES (?, ?, ?, ?, ?)",
                    (item["id"], item["kind"], item["role"], json.dumps(item["data"]),
                     None if item.get("gold") is None else json.dumps(item["gold"])))
                keys[item["id"]] = int(cur.lastrowid)
            con.executemany("INSERT INTO raters (id, token, created) VALUES (?, ?, ?)",
                            [(rid, token, now) for rid, token in raters])
            con.executemany("INSERT INTO assignments (rater, item, position) VALUES (?, ?, ?)",
                            [(rid, keys[iid], pos) for rid, iid, pos in assignments])
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            con.close()
            self.path.unlink(missing_ok=True)
            raise
        con.close()

    # ------------------------------------------------------------------ reads

    def meta(self) -> dict[str, Any]:
        """All ``meta`` values, decoded."""
        with self.reading() as con:
            return {r["key"]: json.loads(r["value"]) for r in con.execute("SELECT key, value FROM meta")}

    def items(self, role: str | None = None) -> list[Item]:
        """Every item (of one ``role``), in key order."""
        sql = "SELECT * FROM items" + (" WHERE role = ?" if role else "") + " ORDER BY key"
        with self.reading() as con:
            return [_item(r) for r in con.execute(sql, (role,) if role else ())]

    def item(self, key: int) -> Item | None:
        """The item with URL key ``key``, or None."""
        if not _sql_int(key):
            return None
        with self.reading() as con:
            row = con.execute("SELECT * FROM items WHERE key = ?", (key,)).fetchone()
        return None if row is None else _item(row)

    def rater_by_token(self, token: str) -> str | None:
        """The rater id of an invite token, or None. The token is compared with every
        rater's in constant time (:func:`hmac.compare_digest`, no early exit), not by an
        SQL lookup whose time depends on how much of a guess matches a stored token."""
        if not token or len(token) > 200:
            return None
        given = token.encode()
        found = None
        with self.reading() as con:
            for row in con.execute("SELECT id, token FROM raters"):
                if hmac.compare_digest(given, str(row["token"]).encode()):
                    found = str(row["id"])
        return found

    def raters(self) -> list[tuple[str, str]]:
        """``(id, token)`` of every rater, in id order."""
        with self.reading() as con:
            return [(r["id"], r["token"]) for r in con.execute("SELECT id, token FROM raters ORDER BY id")]

    def assignments(self, rater: str | None = None) -> list[Assignment]:
        """A rater's assignments in their order (every rater's when ``rater`` is None)."""
        sql = "SELECT rater, item, position, done FROM assignments"
        sql += " WHERE rater = ? ORDER BY position" if rater else " ORDER BY rater, position"
        with self.reading() as con:
            return [Assignment(r["rater"], int(r["item"]), int(r["position"]), r["done"])
                    for r in con.execute(sql, (rater,) if rater else ())]

    def assignment(self, rater: str, position: int) -> Assignment | None:
        """``rater``'s assignment at ``position``, or None (another rater's is never returned)."""
        if not _sql_int(position):
            return None
        with self.reading() as con:
            r = con.execute("SELECT rater, item, position, done FROM assignments "
                            "WHERE rater = ? AND position = ?", (rater, position)).fetchone()
        return None if r is None else Assignment(r["rater"], int(r["item"]), int(r["position"]), r["done"])

    def is_assigned(self, rater: str, item: int) -> bool:
        """True when ``item`` is on ``rater``'s list."""
        if not _sql_int(item):
            return False
        with self.reading() as con:
            return con.execute("SELECT 1 FROM assignments WHERE rater = ? AND item = ?",
                               (rater, item)).fetchone() is not None

    def responses(self) -> list[dict[str, Any]]:
        """Every response joined with its item: dicts with rater, item (key), item_id,
        role, dimension, value, answer, created, submission."""
        with self.reading() as con:
            rows = con.execute(
                "SELECT r.rater, r.item, i.id AS item_id, i.role, r.dimension, r.value, r.answer, "
                "s.created, r.submission FROM responses r JOIN submissions s ON s.id = r.submission "
                "JOIN items i ON i.key = r.item ORDER BY s.created, r.rater, r.item, r.dimension")
            return [dict(r) for r in rows]

    def response_of(self, rater: str, item: int) -> list[dict[str, Any]]:
        """``rater``'s responses to ``item`` (dimension, value, answer)."""
        with self.reading() as con:
            return [dict(r) for r in con.execute(
                "SELECT dimension, value, answer FROM responses WHERE rater = ? AND item = ? "
                "ORDER BY dimension", (rater, item))]

    def submission_ids(self) -> set[str]:
        """The idempotency keys of every recorded submission."""
        with self.reading() as con:
            return {r[0] for r in con.execute("SELECT id FROM submissions")}

    # ------------------------------------------------------------------ writes

    def submit(self, submission: str, rater: str, item: int,
               responses: Sequence[tuple[str, float | None, str | None]]) -> SubmitOutcome:
        """Record ``rater``'s answer to ``item`` in one transaction.

        ``responses`` are ``(dimension, value, answer)``. A submission id seen before is a
        repeat (double click, retry): nothing is written and the outcome says
        ``"repeat"``. An item the rater already answered through another form gives
        ``"already"``. Raises :class:`StudioError` when the item is not the rater's.
        """
        with self.transaction() as con:
            seen = con.execute("SELECT rater, item FROM submissions WHERE id = ?", (submission,)).fetchone()
            if seen is not None:
                if seen["rater"] != rater or int(seen["item"]) != item:
                    raise StudioError("this form belongs to another item; reload the page")
                return SubmitOutcome("repeat", submission)
            row = con.execute("SELECT done FROM assignments WHERE rater = ? AND item = ?",
                              (rater, item)).fetchone()
            if row is None:
                raise StudioError("this item is not on your list")
            if row["done"] is not None:
                return SubmitOutcome("already", submission)
            now = time.time()
            con.execute("INSERT INTO submissions (id, rater, item, created) VALUES (?, ?, ?, ?)",
                        (submission, rater, item, now))
            con.executemany("INSERT INTO responses (submission, rater, item, dimension, value, answer) "
                            "VALUES (?, ?, ?, ?, ?, ?)",
                            [(submission, rater, item, d, v, a) for d, v, a in responses])
            con.execute("UPDATE assignments SET done = ? WHERE rater = ? AND item = ?", (now, rater, item))
        return SubmitOutcome("recorded", submission)


def _sql_int(value: int) -> bool:
    """True when ``value`` fits SQLite's 64-bit integers (a larger one from a URL would
    raise OverflowError in the query: it names no row)."""
    return -(2**63) <= value < 2**63


def _item(row: sqlite3.Row) -> Item:
    return Item(int(row["key"]), row["id"], row["kind"], row["role"], json.loads(row["data"]),
                None if row["gold"] is None else json.loads(row["gold"]))
