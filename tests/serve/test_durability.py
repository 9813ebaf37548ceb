"""Every write `serve` acknowledged, or a watcher was told of, survives `kill -9`, and nothing
half-written appears."""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from pathlib import Path

from tests.serve.harness import Served, wait_for

ROUNDS = 20
WRITERS = 4


def _write_until_killed(port: int, writer: int, round_: int, acked: list[str], stop: threading.Event) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    n = 0
    while not stop.is_set():
        name = f"r{round_}-w{writer}-{n}"
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                           "data": {"name": name, "payload": "x" * random.randint(10, 2000)}})
        try:
            conn.request("POST", "/api/v1/namespaces/default/configmaps", body,
                         {"Content-Type": "application/json"})
            answer = conn.getresponse()
            answer.read()
        except (OSError, http.client.HTTPException):
            return  # the server is gone
        if answer.status == 201:
            acked.append(name)
        n += 1


def _watch_until_killed(port: int, seen: list[str]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/api/v1/namespaces/default/configmaps?watch=1")
        answer = conn.getresponse()
        while line := answer.readline():
            event = json.loads(line)
            if event["type"] == "ADDED":
                seen.append(event["object"]["metadata"]["name"])
    except (OSError, http.client.HTTPException, ValueError):
        return  # the server is gone (perhaps mid-line)


def _all_configmaps(port: int) -> list[dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/api/v1/namespaces/default/configmaps")
    answer = conn.getresponse()
    assert answer.status == 200
    return json.loads(answer.read())["items"]


def test_acknowledged_writes_survive_kill_9(tmp_path: Path) -> None:
    served = Served(tmp_path).start()
    rng = random.Random(14)
    acked_total: list[str] = []
    watched: list[str] = []
    try:
        for round_ in range(ROUNDS):
            acked: list[str] = []
            stop = threading.Event()
            threads = [threading.Thread(target=_write_until_killed, args=(served.port, w, round_, acked, stop))
                       for w in range(WRITERS)]
            threads.append(threading.Thread(target=_watch_until_killed, args=(served.port, watched)))
            for t in threads:
                t.start()
            wait_for(lambda: acked, what=f"round {round_}: a first acknowledged write")  # noqa: B023
            time.sleep(rng.uniform(0.05, 0.5))
            served.kill()  # SIGKILL, mid-write
            stop.set()
            for t in threads:
                t.join(timeout=10)
            acked_total += acked
            served.start(served.port)
            items = _all_configmaps(served.port)
            stored = {cm["metadata"]["name"]: cm for cm in items}
            missing = [n for n in acked_total if n not in stored]
            assert not missing, f"round {round_}: acknowledged but lost: {missing[:5]}"
            unseen = [n for n in watched if n not in stored]
            assert not unseen, f"round {round_}: a watcher was told of it, but it is lost: {unseen[:5]}"
            for name, cm in stored.items():  # whole objects only
                assert cm["data"]["name"] == name and cm["metadata"]["uid"] and cm["metadata"]["resourceVersion"]
            versions = [int(cm["metadata"]["resourceVersion"]) for cm in items]
            assert len(set(versions)) == len(versions)
    finally:
        served.kill()
