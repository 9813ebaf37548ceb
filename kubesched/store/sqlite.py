"""SQLite store backend for `serve`: every acknowledged write is on disk, and a restart resumes.

The file is the truth; an in-memory copy of every object (loaded when the file is opened) serves
`get` and `list`, so reads never touch SQLite and only writes pay for it. Each write is one
transaction committed before the call returns and before any watcher hears of it, so whatever a
client or a watcher has seen survives a restart.

Durability: the file is in WAL mode with `synchronous=NORMAL`. A commit appends the transaction to
the write-ahead log with write(2), which puts it in the operating system's page cache before the
call returns, so it survives the process dying in any way, SIGKILL included; the log is fsynced
only when it is checkpointed into the database. What this does not cover is the machine losing
power or the kernel crashing: the transactions since the last checkpoint may then be lost (the file
stays consistent, it just ends at an earlier version). `synchronous=FULL` would close that gap at
the price of an fsync per write, which is what bounds a server's write rate.

Tables: `objects` keyed by the resourceVersion that created the object (so `list` keeps creation
order across a reopen and an update keeps an object's place), `events` (the window `events_since`
replays, pruned in batches), `state` (one row: the version up to which events are gone, and the
latest resourceVersion, which deletes advance too, for when no event row carries it) and `meta`
(the server's own key/value bits). Each of these costs a page written per commit, so a write
touches no more of them than it must: keys are unique in memory (no index on them), and `state`
is written only when the event window moves.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from kubesched.api.jsonbytes import dumps
from kubesched.store.base import ADDED, MODIFIED, Obj, WatchEvent
from kubesched.store.memory import MemoryStore

# PRAGMA application_id ("ksch"): tells our files from other SQLite databases.
APPLICATION_ID = 0x6B736368
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE objects (
    seq INTEGER PRIMARY KEY,  -- the resourceVersion of the object's creation
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    rv INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE events (
    rv INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    kind TEXT NOT NULL,
    obj TEXT NOT NULL
);
CREATE TABLE state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    resource_version INTEGER NOT NULL,  -- the latest version unless a later event row says more
    events_floor INTEGER NOT NULL  -- every event after this version is in `events`
);
INSERT INTO state VALUES (1, 0, 0);
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""


class StoreFileError(Exception):
    """The data file cannot be opened or read as a store; the message names the file."""


class SQLiteStore(MemoryStore):
    def __init__(self, path: str, window: int = 100_000) -> None:
        """Open (or create) the store in `path`. `window`: how many past events `events_since`
        can replay (0: none). Raises StoreFileError when the file is unusable."""
        super().__init__()  # objects in memory; the event window is in the file
        self.path = path
        self._keep = window
        # The events table holds up to window + batch rows: pruning a row at a time costs a
        # statement per write for nothing.
        self._prune_batch = max(1, min(window // 4, 1000))
        self._seqs: dict[tuple[str, str, str], int] = {}
        try:
            # One thread uses the store (base.py), but not necessarily the one that opened it.
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
        except sqlite3.Error as e:
            raise StoreFileError(f"{path}: cannot open the data file: {e}") from e
        try:
            self._open()
            self._load()
        except StoreFileError:
            self._db.close()
            raise
        except (sqlite3.Error, ValueError, TypeError) as e:
            self._db.close()
            raise StoreFileError(f"{path}: cannot read the data file: {e}") from e

    def _open(self) -> None:
        db = self._db
        if db.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID and db.execute(
                "SELECT 1 FROM sqlite_master").fetchone():
            raise StoreFileError(f"{self.path}: an SQLite database, but not a kubesched data file")
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode != "wal" and self.path != ":memory:":
            raise StoreFileError(f"{self.path}: cannot use write-ahead logging (journal mode {mode})")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                # Statement by statement: executescript would commit the open transaction first.
                for statement in _SCHEMA.split(";"):
                    db.execute(statement)
                db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            elif version != SCHEMA_VERSION:
                raise StoreFileError(f"{self.path}: data file format {version}, this kubesched reads "
                                     f"format {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def _load(self) -> None:
        self._rv, self._floor = self._db.execute(
            "SELECT max(resource_version, (SELECT coalesce(max(rv), 0) FROM events)), events_floor FROM state"
        ).fetchone()
        for seq, kind, ns, name, body in self._db.execute(
                "SELECT seq, kind, namespace, name, body FROM objects ORDER BY seq"):
            if (kind, ns, name) in self._seqs:
                raise StoreFileError(f"{self.path}: {kind} {ns}/{name} is stored twice")
            self._objs.setdefault(kind, {})[(ns, name)] = json.loads(body)
            self._seqs[(kind, ns, name)] = seq

    def close(self) -> None:
        self._db.close()

    # --- the server's own bits ---------------------------------------------------------------------

    def meta_get(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def meta_set(self, key: str, value: str) -> None:
        """Committed before it returns, like an object write."""
        self._db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                         (key, value))

    # --- reads ---------------------------------------------------------------------------------------

    @property
    def oldest_resource_version(self) -> int:
        return max(self._floor, self._rv - self._keep) if self._keep else self._rv

    def _events_after(self, rv: int, kinds: frozenset[str] | None) -> list[WatchEvent]:
        sql = "SELECT type, kind, obj FROM events WHERE rv > ?"
        args: list[Any] = [rv]
        if kinds is not None:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            args += sorted(kinds)
        return [WatchEvent(t, k, json.loads(o), None) for t, k, o in self._db.execute(sql + " ORDER BY rv", args)]

    # --- writes ---------------------------------------------------------------------------------------

    def _persist(self, rv: int, type_: str, kind: str, namespace: str, name: str, obj: Obj) -> None:
        body = dumps(obj).decode()
        key = (kind, namespace, name)
        if type_ == ADDED:
            self._commit(rv, type_, kind, body, "INSERT INTO objects VALUES (?, ?, ?, ?, ?, ?)",
                         (rv, kind, namespace, name, rv, body))
            self._seqs[key] = rv
        elif type_ == MODIFIED:
            self._commit(rv, type_, kind, body, "UPDATE objects SET rv = ?, body = ? WHERE seq = ?",
                         (rv, body, self._seqs[key]))
        else:
            self._commit(rv, type_, kind, body, "DELETE FROM objects WHERE seq = ?", (self._seqs[key],))
            del self._seqs[key]

    def _commit(self, rv: int, type_: str, kind: str, event_obj: str, sql: str, args: tuple[Any, ...]) -> None:
        """Write the object change, its event and the new version as one transaction; the
        in-memory state moves on only once it is committed."""
        db = self._db
        floor = self._floor
        db.execute("BEGIN")
        try:
            db.execute(sql, args)
            if self._keep:
                db.execute("INSERT INTO events VALUES (?, ?, ?, ?)", (rv, type_, kind, event_obj))
                if rv - self._keep - floor >= self._prune_batch:
                    floor = rv - self._keep
                    db.execute("DELETE FROM events WHERE rv <= ?", (floor,))
            else:
                floor = rv
            if floor != self._floor:
                db.execute("UPDATE state SET resource_version = ?, events_floor = ?", (rv, floor))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        self._floor = floor
