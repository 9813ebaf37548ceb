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
from collections.abc import Iterator
from typing import Any

from kubesched.store.base import (
    ADDED,
    DELETED,
    MODIFIED,
    Conflict,
    NotFound,
    Obj,
    Store,
    WatchEvent,
    key_of,
)

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

_dumps = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


class StoreFileError(Exception):
    """The data file cannot be opened or read as a store; the message names the file."""


class SQLiteStore(Store):
    def __init__(self, path: str, window: int = 100_000) -> None:
        """Open (or create) the store in `path`. `window`: how many past events `events_since`
        can replay (0: none). Raises StoreFileError when the file is unusable."""
        super().__init__()
        self.path = path
        self._window = window
        # The events table holds up to window + batch rows: pruning a row at a time costs a
        # statement per write for nothing.
        self._prune_batch = max(1, min(window // 4, 1000))
        self._objs: dict[str, dict[tuple[str, str], Obj]] = {}
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
    def resource_version(self) -> int:
        return self._rv

    @property
    def oldest_resource_version(self) -> int:
        return max(self._floor, self._rv - self._window) if self._window else self._rv

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self._objs.get(kind, {}).get((namespace, name))

    def kinds(self) -> list[str]:
        return [kind for kind, objs in self._objs.items() if objs]

    def list(self, kind: str, namespace: str | None = None) -> Iterator[Obj]:
        objs = self._objs.get(kind, {})
        if namespace is None:
            return iter(list(objs.values()))
        return iter([o for (ns, _), o in objs.items() if ns == namespace])

    def _events_after(self, rv: int, kinds: frozenset[str] | None) -> list[WatchEvent]:
        sql = "SELECT type, kind, obj FROM events WHERE rv > ?"
        args: list[Any] = [rv]
        if kinds is not None:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            args += sorted(kinds)
        return [WatchEvent(t, k, json.loads(o), None) for t, k, o in self._db.execute(sql + " ORDER BY rv", args)]

    # --- writes --------------------------------------------------------------------------------------

    def create(self, obj: Obj) -> Obj:
        kind, ns, name = key_of(obj)
        bucket = self._objs.setdefault(kind, {})
        if (ns, name) in bucket:
            raise Conflict(f'{kind} "{name}" already exists')
        rv = self._rv + 1
        obj["metadata"]["resourceVersion"] = str(rv)
        body = _dumps(obj)
        self._commit(rv, ADDED, kind, body, "INSERT INTO objects VALUES (?, ?, ?, ?, ?, ?)",
                     (rv, kind, ns, name, rv, body))
        self._seqs[(kind, ns, name)] = rv
        bucket[(ns, name)] = obj
        self._notify(WatchEvent(ADDED, kind, obj, None))
        return obj

    def update(self, obj: Obj, expect_rv: str | None = None) -> Obj:
        kind, ns, name = key_of(obj)
        bucket = self._objs.get(kind, {})
        old = bucket.get((ns, name))
        if old is None:
            raise NotFound(f'{kind} "{name}" not found')
        if expect_rv is not None and old["metadata"]["resourceVersion"] != expect_rv:
            raise Conflict(f'{kind} "{name}": the object has been modified')
        rv = self._rv + 1
        obj["metadata"]["resourceVersion"] = str(rv)
        body = _dumps(obj)
        self._commit(rv, MODIFIED, kind, body, "UPDATE objects SET rv = ?, body = ? WHERE seq = ?",
                     (rv, body, self._seqs[(kind, ns, name)]))
        bucket[(ns, name)] = obj
        self._notify(WatchEvent(MODIFIED, kind, obj, old))
        return obj

    def delete(self, kind: str, namespace: str, name: str) -> Obj:
        bucket = self._objs.get(kind, {})
        old = bucket.get((namespace, name))
        if old is None:
            raise NotFound(f'{kind} "{name}" not found')
        rv = self._rv + 1
        gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(rv)}}
        key = (kind, namespace, name)
        self._commit(rv, DELETED, kind, _dumps(gone), "DELETE FROM objects WHERE seq = ?", (self._seqs[key],))
        del bucket[(namespace, name)]
        del self._seqs[key]
        self._notify(WatchEvent(DELETED, kind, gone, old))
        return gone

    def _commit(self, rv: int, type_: str, kind: str, event_obj: str, sql: str, args: tuple[Any, ...]) -> None:
        """Write the object change, its event and the new version as one transaction; the
        in-memory state moves on only once it is committed."""
        db = self._db
        floor = self._floor
        db.execute("BEGIN")
        try:
            db.execute(sql, args)
            if self._window:
                db.execute("INSERT INTO events VALUES (?, ?, ?, ?)", (rv, type_, kind, event_obj))
                if rv - self._window - floor >= self._prune_batch:
                    floor = rv - self._window
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
        self._rv = rv
        self._floor = floor
