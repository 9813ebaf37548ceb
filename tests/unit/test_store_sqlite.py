"""The SQLite store: the same answers as the memory store, before and after a reopen, and every
acknowledged write intact after the writing process is killed."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.store.base import ADDED, DELETED, MODIFIED, Gone, Obj, Store, TooLarge, WatchEvent
from kubesched.store.memory import MemoryStore
from kubesched.store.sqlite import SQLiteStore, StoreFileError

KINDS = ("Pod", "Node")


def obj(kind: str, ns: str, name: str, data: int) -> Obj:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, "data": {"n": data, "s": f"é{data}"}}


# --- the memory store as the model -----------------------------------------------------------------

keys = st.tuples(st.sampled_from(KINDS), st.sampled_from(["", "a", "b"]), st.sampled_from(["x", "y", "z"]))
ops = st.one_of(
    st.tuples(st.just("create"), keys, st.integers(0, 9)),
    # expect_rv: none, the object's current version, or a given one (mostly stale)
    st.tuples(st.just("update"), keys, st.integers(0, 9), st.sampled_from([None, "current", "1", "7"])),
    st.tuples(st.just("delete"), keys),
    st.tuples(st.just("events_since"), st.integers(-3, 30), st.sampled_from([None, ("Pod",), KINDS])),
    st.tuples(st.just("reopen")),
)


def apply(store: Store, op: tuple[Any, ...]) -> Any:
    """Run one call; its result or the exception it raised, as comparable values."""
    try:
        match op:
            case ("create", (kind, ns, name), data):
                return store.create(obj(kind, ns, name, data))
            case ("update", (kind, ns, name), data, expect):
                if expect == "current":
                    current = store.get(kind, ns, name)
                    expect = current["metadata"]["resourceVersion"] if current else "1"
                return store.update(obj(kind, ns, name, data), expect)
            case ("delete", (kind, ns, name)):
                return store.delete(kind, ns, name)
            case ("events_since", back, kinds):
                return [(e.type, e.kind, e.obj, e.old) for e in
                        store.events_since(store.resource_version - back, kinds)]
    except Exception as e:
        return type(e).__name__, str(e)
    raise AssertionError(op)


def query(path: str | Path, sql: str) -> list[tuple[Any, ...]]:
    """Read the file over a connection of its own, as another process would."""
    with closing(sqlite3.connect(path)) as db:
        return db.execute(sql).fetchall()


def snapshot(store: Store) -> dict[str, Any]:
    """Everything a reader sees: lists in order, gets, versions, and every replay the window allows."""
    for kind in KINDS:  # the shortcut watchers take to ignore kinds the cluster has none of
        assert store.holds(kind) == any(True for _ in store.list(kind)), kind
    replays = {}
    for rv in range(store.resource_version + 2):
        try:
            replays[rv] = [(e.type, e.kind, e.obj) for e in store.events_since(rv)]
        except (Gone, TooLarge) as e:
            replays[rv] = str(e)
    return {
        "lists": {(kind, ns): store.list_with_version(kind, ns) for kind in KINDS for ns in (None, "", "a", "b")},
        "gets": {(kind, ns, name): store.get(kind, ns, name)
                 for kind in KINDS for ns in ("", "a", "b") for name in ("x", "y", "z")},
        "rv": store.resource_version,
        "oldest": store.oldest_resource_version,
        "replays": replays,
    }


def watched(store: Store) -> list[WatchEvent]:
    seen: list[WatchEvent] = []
    store.watch(seen.append)
    return seen


def opened(path: str, window: int, group: bool) -> SQLiteStore:
    store = SQLiteStore(path, window=window, fsync=False)  # what is compared is the same either way
    if group:
        store.commit_in_background(lambda version, error: None)
    return store


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(window=st.sampled_from([0, 1, 3, 8, 12]), group=st.booleans(), program=st.lists(ops, max_size=40))
def test_sqlite_answers_as_the_memory_store_does_across_reopens(window: int, group: bool,
                                                                program: list[tuple[Any, ...]]) -> None:
    """With group commit too: replays include what the committer has not written yet, and
    closing the store writes what it holds."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.db")
        model = MemoryStore(window=window)
        store = opened(path, window, group)
        model_events, store_events = watched(model), watched(store)
        try:
            for op in program:
                if op[0] == "reopen":
                    store.close()
                    store = opened(path, window, group)
                    store.watch(store_events.append)
                    assert snapshot(store) == snapshot(model)
                    continue
                assert apply(store, op) == apply(model, op), op
                assert store.resource_version == model.resource_version
                assert store.oldest_resource_version == model.oldest_resource_version
            assert store_events == model_events
            assert snapshot(store) == snapshot(model)
            store.close()
            store = SQLiteStore(path, window=window, fsync=False)
            assert snapshot(store) == snapshot(model)
        finally:
            store.close()


def test_group_commit_reports_each_group_durable_in_order_and_the_file_holds_it(path: str) -> None:
    store = SQLiteStore(path)
    reported: list[tuple[int, BaseException | None]] = []
    store.commit_in_background(lambda version, error: reported.append((version, error)))
    for i in range(300):
        store.create(obj("Pod", "a", f"p{i}", i))
        if i % 3 == 2:
            store.delete("Pod", "a", f"p{i - 1}")
    store.meta_set("virtual-time", "12.5")
    store.close()
    versions = [v for v, _ in reported]
    assert versions == sorted(versions) and versions[-1] == 400
    assert all(error is None for _, error in reported)
    assert len(versions) < 400  # writes shared commits
    store = SQLiteStore(path)
    assert [p["metadata"]["name"] for p in store.list("Pod")] == [f"p{i}" for i in range(300) if i % 3 != 1]
    assert store.resource_version == 400 and store.meta_get("virtual-time") == "12.5"
    store.close()


def test_a_failed_group_commit_stops_writes_and_is_reported(path: str) -> None:
    store = SQLiteStore(path)
    reported: list[tuple[int, BaseException | None]] = []
    store.commit_in_background(lambda version, error: reported.append((version, error)))
    store.create(obj("Pod", "a", "p", 0))
    store.close()  # let the first group through, then break the file under a new committer
    store = SQLiteStore(path)
    store.commit_in_background(lambda version, error: reported.append((version, error)))
    with closing(sqlite3.connect(path)) as db:
        db.execute("DROP TABLE events")
    store.create(obj("Pod", "a", "q", 0))
    deadline = 50
    while not reported[1:] and deadline:
        time.sleep(0.1)
        deadline -= 1
    assert reported[-1][0] == 2 and isinstance(reported[-1][1], sqlite3.Error)
    assert store.durable_version == 1
    with pytest.raises(StoreFileError, match="a commit failed, no more writes are taken"):
        store.create(obj("Pod", "a", "r", 0))
    store.close()


# --- the contract's details ---------------------------------------------------------------------

@pytest.fixture
def path(tmp_path: Path) -> str:
    return str(tmp_path / "data.db")


def test_resuming_outside_the_window_is_gone_or_too_large_with_upstreams_messages(path: str) -> None:
    store = SQLiteStore(path, window=5)
    for i in range(20):
        store.create(obj("Pod", "a", f"p{i}", i))
    store.close()
    store = SQLiteStore(path, window=5)
    assert store.oldest_resource_version == 15
    with pytest.raises(Gone, match=r"^too old resource version: 14 \(15\)$"):
        store.events_since(14)
    with pytest.raises(TooLarge, match=r"^Too large resource version: 21, current: 20$"):
        store.events_since(21)
    assert [e.obj["metadata"]["name"] for e in store.events_since(15)] == [f"p{i}" for i in range(15, 20)]
    assert store.events_since(20) == []
    store.close()


def test_deletes_consume_versions_that_survive_a_reopen(path: str) -> None:
    store = SQLiteStore(path, window=0)
    store.create(obj("Pod", "a", "p", 0))
    gone = store.delete("Pod", "a", "p")
    assert gone["metadata"]["resourceVersion"] == "2"
    store.close()
    store = SQLiteStore(path, window=0)
    assert store.resource_version == 2 and store.oldest_resource_version == 2
    assert store.create(obj("Pod", "a", "p", 1))["metadata"]["resourceVersion"] == "3"
    store.close()


def test_the_event_window_is_pruned_and_its_start_stays_exact(path: str) -> None:
    store = SQLiteStore(path, window=100, fsync=False)  # pruning, not the disk, is tested
    for i in range(1000):
        store.create(obj("Pod", "a", f"p{i}", i))
        assert store.oldest_resource_version == max(0, i + 1 - 100)
    kept = query(path, "SELECT count(*) FROM events")[0][0]
    assert 100 <= kept <= 200
    store.close()
    # A wider window than the file kept starts where the kept events start.
    store = SQLiteStore(path, window=500)
    assert store.oldest_resource_version == 1000 - kept
    assert len(store.events_since(store.oldest_resource_version)) == 1000 - store.oldest_resource_version
    store.close()


def test_a_watcher_hears_of_a_write_only_once_it_is_committed(path: str) -> None:
    store = SQLiteStore(path)
    on_disk: list[tuple[str, list[tuple[Any, ...]]]] = []

    def check(event: WatchEvent) -> None:
        on_disk.append((event.type, query(path, "SELECT rv FROM objects WHERE name = 'p'")))

    store.watch(check)
    store.create(obj("Pod", "a", "p", 0))
    store.update(obj("Pod", "a", "p", 1))
    store.delete("Pod", "a", "p")
    assert on_disk == [(ADDED, [(1,)]), (MODIFIED, [(2,)]), (DELETED, [])]
    store.close()


def test_meta_values_are_committed_and_survive_a_reopen(path: str) -> None:
    store = SQLiteStore(path)
    assert store.meta_get("epoch") is None
    store.meta_set("epoch", "2025-06-30T12:00:00Z")
    store.meta_set("epoch", "2025-07-01T00:00:00Z")
    assert query(path, "SELECT value FROM meta") == [("2025-07-01T00:00:00Z",)]
    store.close()
    store = SQLiteStore(path)
    assert store.meta_get("epoch") == "2025-07-01T00:00:00Z"
    assert store.resource_version == 0  # meta is not an object write
    store.close()


def test_commits_wait_for_the_disk_unless_told_not_to(path: str) -> None:
    for fsync, level in ((True, 2), (False, 1)):  # PRAGMA synchronous: FULL, NORMAL
        store = SQLiteStore(path, fsync=fsync)
        assert store._db.execute("PRAGMA synchronous").fetchone() == (level,)
        store.close()


def test_the_file_is_in_wal_mode_and_readable_while_open(path: str) -> None:
    store = SQLiteStore(path)
    store.create(obj("Node", "", "n", 0))
    other = SQLiteStore(path)  # a second process's view (kubesched only ever has one writer)
    assert other.get("Node", "", "n") == store.get("Node", "", "n")
    assert query(path, "PRAGMA journal_mode") == [("wal",)]
    other.close()
    store.close()


@pytest.mark.parametrize("content", [b"", b"not a database at all\n" * 100])
def test_an_unusable_file_is_a_clear_error_naming_it(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"SQLite format 3\x00" + content)
    with pytest.raises(StoreFileError, match=f"^{bad}: "):
        SQLiteStore(str(bad))


def test_a_missing_directory_is_a_clear_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(StoreFileError, match="no/such/data.db: cannot open the data file"):
        SQLiteStore(str(tmp_path / "no" / "such" / "data.db"))


def test_another_programs_database_is_refused_untouched(tmp_path: Path) -> None:
    foreign = tmp_path / "app.db"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE users (name TEXT)")
    db.commit()
    db.close()
    with pytest.raises(StoreFileError, match="an SQLite database, but not a kubesched data file"):
        SQLiteStore(str(foreign))
    tables = query(foreign, "SELECT name FROM sqlite_master")
    assert tables == [("users",)]


def test_a_damaged_row_is_a_clear_error(path: str) -> None:
    store = SQLiteStore(path)
    store.create(obj("Pod", "a", "p", 0))
    store.close()
    db = sqlite3.connect(path)
    db.execute("UPDATE objects SET body = '{\"kind\": '")
    db.commit()
    db.close()
    with pytest.raises(StoreFileError, match="cannot read the data file"):
        SQLiteStore(path)


def test_an_object_stored_twice_is_a_clear_error(path: str) -> None:
    store = SQLiteStore(path)
    store.create(obj("Pod", "a", "p", 0))
    store.close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO objects SELECT seq + 1, kind, namespace, name, rv, body FROM objects")
    db.commit()
    db.close()
    with pytest.raises(StoreFileError, match="Pod a/p is stored twice"):
        SQLiteStore(path)


# --- durability across SIGKILL --------------------------------------------------------------------

WRITER = textwrap.dedent("""
    import sys
    from kubesched.store.sqlite import SQLiteStore

    store = SQLiteStore(sys.argv[1], window=50, fsync=False)  # SIGKILL spares the page cache
    i = len(list(store.list("Pod")))
    while True:
        name = f"p{i}"
        store.create({"kind": "Pod", "metadata": {"name": name, "namespace": "a"},
                      "data": {"i": i, "pad": "x" * (i % 700)}})
        counter = {"kind": "ConfigMap", "metadata": {"name": "count", "namespace": "a"}, "data": {"n": i}}
        if i:
            store.update(counter)
        else:
            store.create(counter)
        print(name, flush=True)
        i += 1
""")


def test_every_acknowledged_write_survives_sigkill(path: str) -> None:
    rng = random.Random()
    acked: list[str] = []
    for _ in range(4):
        kill_after = rng.randint(1, 400)
        child = subprocess.Popen([sys.executable, "-c", WRITER, path], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        for _ in range(kill_after):
            acked.append(child.stdout.readline().strip())
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()

        store = SQLiteStore(path, window=50)  # every row parses, or this raises
        pods = list(store.list("Pod"))
        names = [p["metadata"]["name"] for p in pods]
        # Every acknowledged pod (and perhaps a few the child wrote before it could say so), in
        # creation order; a write the kill cut short is whole or absent.
        assert names == [f"p{i}" for i in range(len(names))]
        assert set(acked) <= set(names), f"killed after {kill_after}"
        assert all(p["data"] == {"i": i, "pad": "x" * (i % 700)} for i, p in enumerate(pods))
        count = store.get("ConfigMap", "a", "count")
        assert count is not None and count["data"]["n"] in (len(names) - 2, len(names) - 1)
        # The child only creates and updates: the latest write is the newest object.
        assert store.resource_version == max(int(o["metadata"]["resourceVersion"]) for o in [*pods, count])
        assert store.events_since(store.resource_version - 1)[0].obj["metadata"]["resourceVersion"] == \
            str(store.resource_version)
        store.close()
    rows = query(path, "SELECT body FROM objects")
    assert all(json.loads(body)["metadata"]["name"] for body, in rows)


def test_sync_waits_until_every_queued_write_is_in_the_file(path: str) -> None:
    store = SQLiteStore(path)
    store.commit_in_background(lambda version, error: None)
    told: list[int] = []
    store.commit_in_background(lambda version, error: told.append(version))  # again: who is told changes
    for i in range(50):
        store.create(obj("Node", "", f"n{i}", i))
    store.sync()
    assert store.durable_version == 50
    assert query(path, "SELECT count(*) FROM objects") == [(50,)]
    assert told and told[-1] == 50
    store.close()
