"""The studio's SQLite store: one file per study, WAL mode, one transaction per submission.

Tables:

* ``meta(key, value)``: the study's configuration (JSON), its secret and admin token;
* ``items(key, id, kind, role, data, gold)``: what raters judge. ``key`` is the integer
  used in URLs (never a client-given path); ``kind`` is ``sample`` (rate, critique),
  ``group`` (rank) or ``pair`` (pairwise); ``role`` is ``study``, ``gold`` (known
  answer, mixed in to screen raters) or ``training`` (shown first, with the answer);
  ``data`` holds the samples (id, image paths, instruction, editor, bbox, critique);
* ``raters(id, token, created, revoked)`` and ``assignments(rater, item, position,
  done)``: each rater's own ordered list of items; a revoked rater's link opens nothing;
* ``submissions(id, rater, item, created, shown, status, reason)`` and
  ``responses(submission, rater, item, dimension, value, answer, untouched)``: the
  *current* answer of each rater to each item. ``submissions.id`` is the idempotency key
  of one rendered form (UNIQUE), ``UNIQUE(rater, item)`` keeps one current answer per
  item, ``UNIQUE(rater, item, dimension)`` one response per dimension. ``shown`` is when
  the form was rendered (``created - shown`` is the time the answer took); ``status`` is
  ``answer`` or ``skip`` ("cannot judge", with a ``reason`` and no responses);
  ``untouched`` is 1 for a slider the rater never moved or a ranking left in the shown
  order (NULL: not known, e.g. a browser without JavaScript);
* ``revisions``: every answer a revision replaced (its submission row and responses as
  JSON, when and by which submission it was replaced): the history of an item.

:meth:`Store.submit` writes a submission, its responses and the assignment's ``done``
mark (and, for a revision, moves the replaced answer to ``revisions``) in one ``BEGIN
IMMEDIATE`` transaction with ``synchronous=FULL``: once it returns, the answer is on
disk, and the page acknowledges it only then. A study file of schema 1 (before
revisions, skips and times) is upgraded in place when it is opened (:meth:`Store.migrate`).
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
from ieqa.studio.security import study_id_of

__all__ = ["SKIP_REASONS", "Assignment", "Item", "Response", "Store", "StudioError", "SubmitOutcome"]

SCHEMA_VERSION = "2"

_REVISIONS = """
CREATE TABLE IF NOT EXISTS revisions (
    submission TEXT PRIMARY KEY,
    rater TEXT NOT NULL,
    item INTEGER NOT NULL,
    created REAL NOT NULL,
    shown REAL,
    status TEXT NOT NULL,
    reason TEXT,
    responses TEXT NOT NULL,
    replaced REAL NOT NULL,
    replaced_by TEXT NOT NULL
);
"""
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
    created REAL NOT NULL,
    revoked REAL
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
    shown REAL,
    status TEXT NOT NULL DEFAULT 'answer' CHECK (status IN ('answer', 'skip')),
    reason TEXT,
    UNIQUE (rater, item)
);
CREATE TABLE IF NOT EXISTS responses (
    submission TEXT NOT NULL REFERENCES submissions(id),
    rater TEXT NOT NULL,
    item INTEGER NOT NULL,
    dimension TEXT NOT NULL,
    value REAL,
    answer TEXT,
    untouched INTEGER,
    UNIQUE (rater, item, dimension)
);
""" + _REVISIONS
#: columns schema 2 added to the tables of schema 1: (table, column, declaration)
_ADDED = (("raters", "revoked", "REAL"), ("submissions", "shown", "REAL"),
          ("submissions", "status", "TEXT NOT NULL DEFAULT 'answer'"), ("submissions", "reason", "TEXT"),
          ("responses", "untouched", "INTEGER"))
#: why a rater cannot judge an item (the "Cannot judge" choices)
SKIP_REASONS: dict[str, str] = {"image": "an image did not load", "instruction": "the instruction is unclear",
                                "other": "other"}


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
    """What :meth:`Store.submit` did: ``"recorded"`` (new, committed), ``"revised"`` (it
    replaced the earlier answer, kept in ``revisions``), ``"repeat"`` (this form was
    already recorded: nothing written) or ``"already"`` (another form for the same item
    was recorded first, e.g. in a second tab: nothing written)."""

    status: str
    submission: str


#: one response of an answer: (dimension, value for sliders, answer for rankings and
#: verdicts, untouched: True/False, None when not known)
Response = tuple[str, float | None, str | None, bool | None]


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

    def migrate(self) -> bool:
        """Upgrade a study file of schema 1 to :data:`SCHEMA_VERSION` in place (new columns,
        the ``revisions`` table, a ``study_id``); True when it changed anything. The
        cookie names change with it (they carry the study id): raters signed in before
        the upgrade open their invite links again. A newer schema is refused."""
        with self.reading() as con:
            row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        version = None if row is None else json.loads(row["value"])
        if version is None or version == SCHEMA_VERSION:
            return False
        if version != "1":
            raise StudioError(f"{self.path} is a study file of schema {version}, newer than this ieqa "
                              f"reads ({SCHEMA_VERSION}); upgrade ieqa to open it")
        with self.transaction() as con:
            row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if json.loads(row["value"]) == SCHEMA_VERSION:  # another process upgraded it meanwhile
                return False
            for table, column, decl in _ADDED:
                have = {r["name"] for r in con.execute(f"PRAGMA table_info({table})")}
                if column not in have:
                    con.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
            con.execute(_REVISIONS)
            secret = json.loads(con.execute("SELECT value FROM meta WHERE key = 'secret'").fetchone()["value"])
            con.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('study_id', ?)",
                        (json.dumps(study_id_of(secret)),))
            con.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (json.dumps(SCHEMA_VERSION),))
        return True

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
            for row in con.execute("SELECT id, token, revoked FROM raters"):
                if hmac.compare_digest(given, str(row["token"]).encode()) and row["revoked"] is None:
                    found = str(row["id"])
        return found

    def raters(self, *, revoked: bool = False) -> list[tuple[str, str]]:
        """``(id, token)`` of every active rater (with ``revoked``, the revoked ones too),
        in id order."""
        sql = "SELECT id, token FROM raters" + ("" if revoked else " WHERE revoked IS NULL") + " ORDER BY id"
        with self.reading() as con:
            return [(r["id"], r["token"]) for r in con.execute(sql)]

    def revoked(self) -> dict[str, float]:
        """Revoked raters: id -> when."""
        with self.reading() as con:
            return {r["id"]: r["revoked"] for r in con.execute(
                "SELECT id, revoked FROM raters WHERE revoked IS NOT NULL")}

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
        """Every current response joined with its item: dicts with rater, item (key),
        item_id, role, dimension, value, answer, untouched (True/False/None), created (time
        of the answer), shown (time the form was rendered, or None), duration (seconds,
        or None), submission. Skips ("cannot judge") have no responses: see
        :meth:`submissions`."""
        with self.reading() as con:
            rows = con.execute(
                "SELECT r.rater, r.item, i.id AS item_id, i.role, r.dimension, r.value, r.answer, r.untouched, "
                "s.created, s.shown, r.submission FROM responses r JOIN submissions s ON s.id = r.submission "
                "JOIN items i ON i.key = r.item ORDER BY s.created, r.rater, r.item, r.dimension")
            return [_timed(dict(r)) for r in rows]

    def submissions(self) -> list[dict[str, Any]]:
        """Every current answer and skip: dicts with submission, rater, item (key), item_id,
        role, status (``answer`` | ``skip``), reason, created, shown, duration, revision (how
        many earlier answers it replaced)."""
        with self.reading() as con:
            rows = con.execute(
                "SELECT s.id AS submission, s.rater, s.item, i.id AS item_id, i.role, s.status, s.reason, "
                "s.created, s.shown, (SELECT COUNT(*) FROM revisions v WHERE v.rater = s.rater AND "
                "v.item = s.item) AS revision FROM submissions s JOIN items i ON i.key = s.item "
                "ORDER BY s.created, s.rater, s.item")
            return [_timed(dict(r)) for r in rows]

    def revisions(self) -> list[dict[str, Any]]:
        """Every answer a revision replaced: dicts with submission, rater, item, item_id,
        role, status, reason, created, shown, duration, responses (list of dicts), replaced
        (when), replaced_by (the submission that replaced it)."""
        with self.reading() as con:
            rows = con.execute(
                "SELECT v.*, i.id AS item_id, i.role FROM revisions v JOIN items i ON i.key = v.item "
                "ORDER BY v.created, v.rater, v.item")
            return [_timed({**dict(r), "responses": json.loads(r["responses"])}) for r in rows]

    def response_of(self, rater: str, item: int) -> list[dict[str, Any]]:
        """``rater``'s current responses to ``item`` (dimension, value, answer)."""
        with self.reading() as con:
            return [dict(r) for r in con.execute(
                "SELECT dimension, value, answer FROM responses WHERE rater = ? AND item = ? "
                "ORDER BY dimension", (rater, item))]

    def untouched_of(self, rater: str, item: int) -> dict[str, bool | None]:
        """Per dimension, whether ``rater``'s current answer to ``item`` was left untouched."""
        with self.reading() as con:
            return {r["dimension"]: None if r["untouched"] is None else bool(r["untouched"]) for r in con.execute(
                "SELECT dimension, untouched FROM responses WHERE rater = ? AND item = ?", (rater, item))}

    def submission_of(self, rater: str, item: int) -> dict[str, Any] | None:
        """``rater``'s current submission for ``item`` (id, status, reason, created,
        shown), or None."""
        with self.reading() as con:
            row = con.execute("SELECT id, status, reason, created, shown FROM submissions "
                              "WHERE rater = ? AND item = ?", (rater, item)).fetchone()
        return None if row is None else dict(row)

    def submission_ids(self) -> set[str]:
        """The idempotency keys of every recorded submission (current and replaced)."""
        with self.reading() as con:
            return {r[0] for r in con.execute("SELECT id FROM submissions UNION SELECT submission FROM revisions")}

    def closed(self) -> float | None:
        """When the study was closed (:meth:`close`), or None while it is open."""
        with self.reading() as con:
            row = con.execute("SELECT value FROM meta WHERE key = 'closed'").fetchone()
        return None if row is None else json.loads(row["value"])

    # ------------------------------------------------------------------ writes

    def submit(self, submission: str, rater: str, item: int, responses: Sequence[Response], *,
               shown: float | None = None, skip: str | None = None, revise: bool = False,
               now: float | None = None) -> SubmitOutcome:
        """Record ``rater``'s answer to ``item`` in one transaction.

        ``responses`` are ``(dimension, value, answer, untouched)`` (``untouched`` may be
        left out: not known); ``shown`` is when the
        form was rendered (seconds since the epoch; the answer's duration is ``now -
        shown``). ``skip`` (a key of :data:`SKIP_REASONS`, or ``other: TEXT``) records
        "cannot judge" instead, with no responses. A submission id seen before is a repeat
        (double click, retry): nothing is written and the outcome says ``"repeat"``. An
        item the rater already answered gives ``"already"`` unless ``revise``: then the
        earlier answer moves to the history (``revisions``) and this one replaces it
        (``"revised"``). Raises :class:`StudioError` when the item is not the rater's, the
        rater was revoked or the study is closed.
        """
        if skip is not None and responses:
            raise StudioError("a skipped item has no responses")
        if skip is None and not responses:
            raise StudioError("an answer needs at least one response")
        with self.transaction() as con:
            seen = con.execute("SELECT rater, item FROM submissions WHERE id = ? UNION ALL "
                               "SELECT rater, item FROM revisions WHERE submission = ?",
                               (submission, submission)).fetchone()
            if seen is not None:
                if seen["rater"] != rater or int(seen["item"]) != item:
                    raise StudioError("this form belongs to another item; reload the page")
                return SubmitOutcome("repeat", submission)
            if con.execute("SELECT 1 FROM meta WHERE key = 'closed'").fetchone() is not None:
                raise StudioError("the study is closed: no answers are taken any more")
            who = con.execute("SELECT revoked FROM raters WHERE id = ?", (rater,)).fetchone()
            if who is None or who["revoked"] is not None:
                raise StudioError("this invite link was revoked; ask the study's organiser for a new one")
            row = con.execute("SELECT done FROM assignments WHERE rater = ? AND item = ?",
                              (rater, item)).fetchone()
            if row is None:
                raise StudioError("this item is not on your list")
            now = time.time() if now is None else now
            status = "recorded"
            if row["done"] is not None:
                if not revise:
                    return SubmitOutcome("already", submission)
                self._retire(con, rater, item, submission, now)
                status = "revised"
            con.execute("INSERT INTO submissions (id, rater, item, created, shown, status, reason) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (submission, rater, item, now, shown, "answer" if skip is None else "skip", skip))
            con.executemany("INSERT INTO responses (submission, rater, item, dimension, value, answer, untouched) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?)",
                            [(submission, rater, item, d, v, a, None if not u or u[0] is None else int(bool(u[0])))
                             for d, v, a, *u in responses])
            con.execute("UPDATE assignments SET done = ? WHERE rater = ? AND item = ?", (now, rater, item))
        return SubmitOutcome(status, submission)

    @staticmethod
    def _retire(con: sqlite3.Connection, rater: str, item: int, by: str, now: float) -> None:
        """Move ``rater``'s current answer to ``item`` into ``revisions`` (inside a transaction)."""
        old = con.execute("SELECT * FROM submissions WHERE rater = ? AND item = ?", (rater, item)).fetchone()
        if old is None:
            return
        rows = [{"dimension": r["dimension"], "value": r["value"], "answer": r["answer"],
                 "untouched": None if r["untouched"] is None else bool(r["untouched"])}
                for r in con.execute("SELECT * FROM responses WHERE submission = ? ORDER BY dimension", (old["id"],))]
        con.execute("INSERT INTO revisions (submission, rater, item, created, shown, status, reason, responses, "
                    "replaced, replaced_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (old["id"], rater, item, old["created"], old["shown"], old["status"], old["reason"],
                     json.dumps(rows), now, by))
        con.execute("DELETE FROM responses WHERE submission = ?", (old["id"],))
        con.execute("DELETE FROM submissions WHERE id = ?", (old["id"],))

    # ------------------------------------------------------------------ organiser actions

    def close(self) -> float:
        """Close the study: no answer, skip or revision is taken from now on; returns when."""
        now = time.time()
        with self.transaction() as con:
            con.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('closed', ?)", (json.dumps(now),))
            return json.loads(con.execute("SELECT value FROM meta WHERE key = 'closed'").fetchone()["value"])

    def set_meta(self, key: str, value: Any) -> None:
        """Set one ``meta`` value (JSON-encoded)."""
        with self.transaction() as con:
            con.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                        "value = excluded.value", (key, json.dumps(value)))

    def revoke(self, rater: str) -> None:
        """Revoke ``rater``'s invite link: it opens nothing any more; their answers stay,
        and their unanswered items count as needing ratings (:meth:`add_raters`)."""
        with self.transaction() as con:
            if con.execute("UPDATE raters SET revoked = ? WHERE id = ? AND revoked IS NULL",
                           (time.time(), rater)).rowcount == 0:
                known = con.execute("SELECT revoked FROM raters WHERE id = ?", (rater,)).fetchone()
                raise StudioError(f"no rater {rater!r} in this study" if known is None else
                                  f"{rater} is revoked already; re-issue their link to let them back in")

    def reissue(self, rater: str, token: str) -> None:
        """Give ``rater`` a new invite token (the old link stops working); a revoked
        rater is let back in, with their answers and the unanswered items of their list
        that no other rater took over meanwhile (:meth:`add_raters` gives a revoked
        rater's items to new raters: those leave the list, so no item gets more than
        ``per_item`` ratings)."""
        with self.transaction() as con:
            row = con.execute("SELECT revoked FROM raters WHERE id = ?", (rater,)).fetchone()
            if row is None:
                raise StudioError(f"no rater {rater!r} in this study")
            if row["revoked"] is not None:
                con.execute(
                    "DELETE FROM assignments WHERE rater = :r AND done IS NULL AND item IN ("
                    "SELECT a.item FROM assignments a JOIN raters o ON o.id = a.rater WHERE a.rater != :r "
                    "AND o.created > :revoked)", {"r": rater, "revoked": row["revoked"]})
            con.execute("UPDATE raters SET token = ?, revoked = NULL WHERE id = ?", (token, rater))

    def needed(self) -> dict[int, int]:
        """Study items that still need ratings: key -> ratings missing, i.e. ``per_item``
        minus the answers recorded ("cannot judge" skips are not ratings) minus the
        assignments pending with active raters."""
        per_item = int(self.meta()["config"]["per_item"])
        with self.reading() as con:
            rows = con.execute(
                "SELECT i.key, SUM(s.status = 'answer') AS done, SUM(a.done IS NULL AND r.revoked IS NULL) AS pending "
                "FROM items i LEFT JOIN assignments a ON a.item = i.key LEFT JOIN raters r ON r.id = a.rater "
                "LEFT JOIN submissions s ON s.rater = a.rater AND s.item = a.item "
                "WHERE i.role = 'study' GROUP BY i.key ORDER BY i.key").fetchall()
        return {int(r["key"]): per_item - int(r["done"] or 0) - int(r["pending"] or 0)
                for r in rows if per_item - int(r["done"] or 0) - int(r["pending"] or 0) > 0}

    def add_raters(self, n: int, seed: int = 0) -> list[tuple[str, str, int]]:
        """Add ``n`` raters, each with a new invite token, the training items first, then
        (shuffled with the gold items) the study items that still need ratings
        (:meth:`needed`), shared out least-loaded first; returns ``(id, token, items)``
        of each new rater."""
        import random

        from ieqa.studio.security import new_token

        if n < 1:
            raise StudioError(f"add at least one rater, got {n}")
        needed = self.needed()
        training = [it.key for it in self.items("training")]
        gold = [it.key for it in self.items("gold")]
        with self.transaction() as con:
            ids = {r["id"] for r in con.execute("SELECT id FROM raters")}
            new_ids: list[str] = []
            k = len(ids)
            while len(new_ids) < n:
                k += 1
                rid = f"rater-{k:02d}"
                if rid not in ids:
                    new_ids.append(rid)
            rng = random.Random(f"{seed}:{','.join(new_ids)}")
            lists: dict[str, list[int]] = {rid: [] for rid in new_ids}
            for key, missing in sorted(needed.items()):
                for rid in sorted(new_ids, key=lambda r: (len(lists[r]), rng.random()))[:missing]:
                    lists[rid].append(key)
            now, out = time.time(), []
            for rid in new_ids:
                token = new_token()
                mine = lists[rid] + gold
                rng.shuffle(mine)
                con.execute("INSERT INTO raters (id, token, created) VALUES (?, ?, ?)", (rid, token, now))
                con.executemany("INSERT INTO assignments (rater, item, position) VALUES (?, ?, ?)",
                                [(rid, key, pos) for pos, key in enumerate(training + mine)])
                out.append((rid, token, len(training + mine)))
        return out


def _sql_int(value: int) -> bool:
    """True when ``value`` fits SQLite's 64-bit integers (a larger one from a URL would
    raise OverflowError in the query: it names no row)."""
    return -(2**63) <= value < 2**63


def _timed(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with ``duration`` (seconds from ``shown`` to ``created``, or None) and
    ``untouched`` as a bool (or None)."""
    shown = row.get("shown")
    row["duration"] = None if shown is None else max(0.0, float(row["created"]) - float(shown))
    if "untouched" in row:
        row["untouched"] = None if row["untouched"] is None else bool(row["untouched"])
    return row


def _item(row: sqlite3.Row) -> Item:
    return Item(int(row["key"]), row["id"], row["kind"], row["role"], json.loads(row["data"]),
                None if row["gold"] is None else json.loads(row["gold"]))
