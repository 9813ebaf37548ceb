"""SQLite store backend for `serve`: every acknowledged write is on disk, and a restart resumes.

The file is the truth; an in-memory copy of every object (loaded when the file is opened) serves
`get` and `list`, so reads never touch SQLite and only writes pay for it.

Durability: the file is in WAL mode with `synchronous=FULL`: a commit returns once the
write-ahead log is fsynced, so a committed write survives the process being killed, the kernel
crashing and the machine losing power alike. An fsync costs milliseconds, which would bound a
server to a few hundred writes a second if each write paid for its own; so there are two ways to
commit.

- One at a time (the default): each write is its own transaction, committed before the call
  returns and before any watcher hears of it.
- Group commit (`commit_in_background`, what `serve` uses, as etcd batches its raft log): a
  write changes memory at once and queues its rows; a committer thread writes everything queued
  since its last commit as one transaction with one fsync, in write order, and then reports the
  latest version now durable. Whoever shows a write to a client (an answer, a watch event) waits
  until that version is durable (`durable_version`); components in the process may act on it
  sooner, their own writes queued behind it, so a crash loses a suffix of the writes and never
  a write a client was told of. If a commit fails, the store stops accepting writes: memory is
  ahead of the file and nothing more may be acknowledged.

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
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.jsonbytes import encode_stored
from kubesched.api.served import resource_kind
from kubesched.store.base import ADDED, DELETED, Obj, WatchEvent
from kubesched.store.memory import MemoryStore

# PRAGMA application_id ("ksch"): tells our files from other SQLite databases.
APPLICATION_ID = 0x6B736368
# 2: custom objects filed under their group-qualified kind (`Widget.example.com`, see
# served.resource_kind); format 1 files are brought to it when opened.
SCHEMA_VERSION = 2

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


def _qualify_custom_kinds(db: sqlite3.Connection) -> None:
    """Format 1 to 2, in the transaction that opens the file: the objects and events of a custom
    resource written under its bare kind (`Widget`) move to the kind the store now files them
    under, so they are found again; nothing else changes."""
    for table, key, body in (("objects", "seq", "body"), ("events", "rv", "obj")):
        moved = []
        for row, kind, text in db.execute(f"SELECT {key}, kind, {body} FROM {table}"):
            obj = json.loads(text)
            qualified = resource_kind(obj) if isinstance(obj, dict) and isinstance(obj.get("kind"), str) else kind
            if qualified != kind:
                moved.append((qualified, row))
        db.executemany(f"UPDATE {table} SET kind = ? WHERE {key} = ?", moved)


class StoreFileError(Exception):
    """The data file cannot be opened or read as a store; the message names the file."""


class SQLiteStore(MemoryStore):
    def __init__(self, path: str, window: int = 100_000, fsync: bool = True) -> None:
        """Open (or create) the store in `path`. `window`: how many past events `events_since`
        can replay (0: none). `fsync=False` (synchronous=NORMAL) commits without waiting for the
        disk: a write then survives the process being killed but not the machine losing power,
        enough for data nobody minds losing. Raises StoreFileError when the file is unusable."""
        super().__init__()  # objects in memory; the event window is in the file
        self.path = path
        self._synchronous = "FULL" if fsync else "NORMAL"
        self._keep = window
        # The events table holds up to window + batch rows: pruning a row at a time costs a
        # statement per write for nothing.
        self._prune_batch = max(1, min(window // 4, 1000))
        self._seqs: dict[tuple[str, str, str], int] = {}
        self._meta: dict[str, str] = {}
        self._committer: _Committer | None = None
        # Events whose rows may not be committed yet (group commit), for `events_since`.
        self._unflushed: deque[WatchEvent] = deque()
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
        db.execute(f"PRAGMA synchronous={self._synchronous}")
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                # Statement by statement: executescript would commit the open transaction first.
                for statement in _SCHEMA.split(";"):
                    db.execute(statement)
                db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            elif version == 1:
                _qualify_custom_kinds(db)
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
        self._meta = dict(self._db.execute("SELECT key, value FROM meta"))

    def close(self) -> None:
        """Commit what is queued, then let go of the file."""
        if self._committer is not None:
            self._committer.stop()
            self._committer = None
        self._db.close()

    def commit_in_background(self, on_durable: Callable[[int, BaseException | None], None]) -> None:
        """From now on, group commit: writes are queued for a committer thread, which calls
        `on_durable(version, None)` (on its own thread) after each commit, or
        `on_durable(version, error)` when a commit failed. Called again, it only changes who is
        told."""
        if self._committer is None:
            self._committer = _Committer(self.path, self._synchronous, self._rv, on_durable)
        else:
            self._committer.on_durable = on_durable

    def sync(self) -> None:
        """Wait until every write so far is committed (group commit); raises StoreFileError if a
        commit failed."""
        if self._committer is not None:
            self._committer.sync()
            if self._committer.error is not None:
                raise StoreFileError(f"{self.path}: cannot write the data file: {self._committer.error}")

    @property
    def durable_version(self) -> int:
        if self._committer is None:
            return self._rv
        return self._committer.durable

    # --- the server's own bits ---------------------------------------------------------------------

    def meta_get(self, key: str) -> str | None:
        return self._meta.get(key)

    def meta_set(self, key: str, value: str) -> None:
        """Committed as an object write is (before it returns, or with the next group)."""
        group = _Group(self._rv, meta={key: value})
        if self._committer is not None:
            self._committer.add(group)
        else:
            group.commit(self._db)
        self._meta[key] = value

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
        events = [WatchEvent(t, k, json.loads(o), None) for t, k, o in self._db.execute(sql + " ORDER BY rv", args)]
        if self._unflushed:  # what the committer has not written yet, or had not when read above
            top = _version(events[-1]) if events else rv
            events += [WatchEvent(e.type, e.kind, e.obj, None) for e in self._unflushed
                       if _version(e) > top and (kinds is None or e.kind in kinds)]
        return events

    # --- writes ---------------------------------------------------------------------------------------

    def _persist(self, rv: int, type_: str, kind: str, namespace: str, name: str, obj: Obj) -> None:
        """Write the object change, its event and the new version as one transaction (or queue
        them for the next group); the in-memory state moves on only once that is done."""
        committer = self._committer
        if committer is not None and committer.error is not None:
            raise StoreFileError(f"{self.path}: a commit failed, no more writes are taken: {committer.error}")
        body = encode_stored(obj).decode()
        key = (kind, namespace, name)
        group = _Group(rv)
        if type_ == DELETED:
            group.deletes.append(self._seqs[key])
        else:
            group.upserts.append((self._seqs.get(key, rv), kind, namespace, name, rv, body))
        floor = self._floor
        if self._keep:
            group.events.append((rv, type_, kind, body))
            if rv - self._keep - floor >= self._prune_batch:
                floor = group.prune_to = rv - self._keep
        else:
            floor = rv
        if floor != self._floor:
            group.state = (rv, floor)
        if committer is None:
            group.commit(self._db)
        else:
            committer.add(group)
        self._floor = floor
        if type_ == ADDED:
            self._seqs[key] = rv
        elif type_ == DELETED:
            del self._seqs[key]

    def _emit(self, event: WatchEvent) -> None:
        if self._committer is not None and self._keep:
            unflushed = self._unflushed
            durable = self._committer.durable
            while unflushed and _version(unflushed[0]) <= durable:
                unflushed.popleft()
            unflushed.append(event)
        super()._emit(event)


def _version(event: WatchEvent) -> int:
    return int(event.obj["metadata"]["resourceVersion"])


def _many(db: sqlite3.Connection, head: str, row: str, rows: list[tuple[Any, ...]]) -> None:
    """`head` with many `row`s a statement: a statement costs the committer a round trip for the
    GIL, which a busy server thread may hold for milliseconds."""
    per = _MAX_VARIABLES // row.count("?")
    for at in range(0, len(rows), per):
        chunk = rows[at:at + per]
        db.execute(head + ",".join([row] * len(chunk)), [v for r in chunk for v in r])


_MAX_VARIABLES = 999  # SQLITE_MAX_VARIABLE_NUMBER of the oldest SQLite Python ships with


@dataclass
class _Group:
    """Writes made in memory and not yet committed, kept as the rows they leave so that any
    number of them is written with a handful of statements."""

    version: int  # the latest write's resourceVersion
    upserts: list[tuple[Any, ...]] = field(default_factory=list)  # objects rows, in write order
    deletes: list[int] = field(default_factory=list)  # seqs of deleted objects
    events: list[tuple[Any, ...]] = field(default_factory=list)
    prune_to: int | None = None  # events up to this version go
    state: tuple[int, int] | None = None
    meta: dict[str, str] = field(default_factory=dict)

    def join(self, later: _Group) -> None:
        self.version = max(self.version, later.version)
        self.upserts += later.upserts
        self.deletes += later.deletes
        self.events += later.events
        if later.prune_to is not None:
            self.prune_to = later.prune_to
        if later.state is not None:
            self.state = later.state
        self.meta.update(later.meta)

    def commit(self, db: sqlite3.Connection) -> None:
        db.execute("BEGIN")
        try:
            # Later rows of a seq replace earlier ones; a deleted seq never comes back (a new
            # object gets a new one), so deleting after every upsert is right.
            if self.upserts:
                _many(db, "INSERT OR REPLACE INTO objects VALUES ", "(?,?,?,?,?,?)", self.upserts)
            for at in range(0, len(self.deletes), _MAX_VARIABLES):
                chunk = self.deletes[at:at + _MAX_VARIABLES]
                db.execute(f"DELETE FROM objects WHERE seq IN ({','.join('?' * len(chunk))})", chunk)
            if self.events:
                _many(db, "INSERT INTO events VALUES ", "(?,?,?,?)", self.events)
            if self.prune_to is not None:
                db.execute("DELETE FROM events WHERE rv <= ?", (self.prune_to,))
            if self.state is not None:
                db.execute("UPDATE state SET resource_version = ?, events_floor = ?", self.state)
            if self.meta:
                _many(db, "INSERT OR REPLACE INTO meta VALUES ", "(?,?)", list(self.meta.items()))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise


class _Committer:
    """The group-commit thread: its own connection to the file, and the group of writes made
    since its last commit. A commit takes as long as an fsync; the writes made meanwhile make the
    next group, so the busier the server, the more writes share an fsync."""

    def __init__(self, path: str, synchronous: str, durable: int,
                 on_durable: Callable[[int, BaseException | None], None]) -> None:
        self.durable = durable  # the latest version committed (read by the store's thread)
        self.error: BaseException | None = None
        self.on_durable = on_durable
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._group: _Group | None = None
        self._committing = False
        self._stopping = False
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="sqlite-group-commit", daemon=True)
        self._thread.start()

    def add(self, writes: _Group) -> None:
        """Queue a write's rows (whole: the committer takes the queued group under the lock)."""
        with self._ready:
            if self._group is None:
                self._group = writes
            else:
                self._group.join(writes)
            self._ready.notify()

    def sync(self) -> None:
        with self._ready:
            while (self._group is not None or self._committing) and self.error is None:
                self._ready.wait()

    def stop(self) -> None:
        """Commit what is queued, then end the thread."""
        with self._ready:
            self._stopping = True
            self._ready.notify()
        self._thread.join()
        self._db.close()

    def _run(self) -> None:
        while True:
            with self._ready:
                while self._group is None and not self._stopping:
                    self._ready.wait()
                group, self._group = self._group, None
                self._committing = group is not None
            if group is None:
                return
            if self.error is None:
                try:
                    group.commit(self._db)
                except (sqlite3.Error, OSError) as e:
                    self.error = e
                else:
                    self.durable = group.version
            with self._ready:
                self._committing = False
                self._ready.notify_all()
            self.on_durable(group.version, self.error)
