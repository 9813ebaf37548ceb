"""A write's watch lines and answer reuse the bytes the store encoded the object in: they must be
the bytes encoding it afresh would give, whatever the object holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.jsonbytes import dumps, dumps_object
from kubesched.server.watch import event_line
from kubesched.store.base import ADDED, DELETED, MODIFIED, WatchEvent
from kubesched.store.sqlite import SQLiteStore

# Scalars orjson writes and the fallback encoder takes over from (integers past 64 bits), and text
# orjson writes as UTF-8 where the fallback escapes it.
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                    st.text(max_size=8))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                      max_leaves=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.dictionaries(st.text(max_size=5), values, max_size=4))
def test_watch_lines_and_answers_of_a_write_are_its_fresh_encoding(tmp_path: Path, data: dict[str, Any]) -> None:
    store = SQLiteStore(str(tmp_path / f"{abs(hash(repr(data)))}.db"))
    seen: list[tuple[WatchEvent, bytes, bytes]] = []
    store.watch(lambda ev: seen.append((ev, event_line(ev.type, ev.obj), dumps_object(ev.obj))), {"ConfigMap"})
    try:
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"},
               "data": data}
        store.create(obj)
        store.update({**obj, "metadata": {**obj["metadata"]}, "extra": [data]})
        store.delete("ConfigMap", "default", "c")
    finally:
        store.close()
    assert [ev.type for ev, _, _ in seen] == [ADDED, MODIFIED, DELETED]
    for ev, line, answer in seen:
        assert line == dumps({"type": ev.type, "object": ev.obj}) + b"\n"
        assert answer == dumps(ev.obj)
    assert dumps_object(data) == dumps(data)  # an object the store did not write is encoded afresh
