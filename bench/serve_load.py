"""A load on a running `kubesched serve` over loopback: concurrent writers and watchers.

Writers create, update and delete ConfigMaps (each write's answer carries the resourceVersion it
made); watchers watch every ConfigMap from the version before the first write. When the writers
are done, every watcher must have received each acknowledged write's event exactly once, in
order. Used by `make bench` (throughput and latency) and by the test suite (correctness).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

import aiohttp


@dataclass
class LoadResult:
    writes: int
    seconds: float
    latencies: list[float]
    watchers: int
    missing: int = 0  # acknowledged writes some watcher never saw
    duplicated: int = 0  # events a watcher saw twice
    out_of_order: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        return self.writes / self.seconds if self.seconds else 0.0

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000 if ordered else 0.0


async def _writer(session: aiohttp.ClientSession, url: str, client: int, writes: int,
                  acked: list[int], latencies: list[float], errors: list[str]) -> None:
    """Create a ConfigMap, update it, delete it; again, until `writes` writes are done."""
    base = f"{url}/api/v1/namespaces/default/configmaps"
    done, n = 0, 0
    while done < writes:
        name = f"load-{client}-{n}"
        n += 1
        steps = [("POST", base, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                 "data": {"v": "0"}}),
                 ("PUT", f"{base}/{name}", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                            "data": {"v": "1"}}),
                 ("DELETE", f"{base}/{name}", None)]
        for method, target, body in steps[:writes - done]:
            start = time.perf_counter()
            async with session.request(method, target, json=body) as answer:
                payload = await answer.read()
            latencies.append(time.perf_counter() - start)
            if answer.status >= 300:
                errors.append(f"{method} {name}: {answer.status} {payload[:200]!r}")
                continue
            done += 1
            if method != "DELETE":
                acked.append(int(json.loads(payload)["metadata"]["resourceVersion"]))
            else:
                acked.append(-1)  # the deletion's version is not in the answer: counted by the watchers


async def _watcher(session: aiohttp.ClientSession, url: str, since: int, seen: list[tuple[str, int]],
                   stop: asyncio.Event) -> None:
    target = f"{url}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={since}&timeoutSeconds=600"
    async with session.get(target, timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as answer:
        buffer = b""
        while not stop.is_set():
            try:
                chunk = await asyncio.wait_for(answer.content.readany(), timeout=0.2)
            except TimeoutError:
                continue
            if not chunk:
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                ev = json.loads(line)
                seen.append((ev["type"], int(ev["object"]["metadata"]["resourceVersion"])))


async def run_load(url: str, clients: int = 50, writes: int = 10_000, watchers: int = 5,
                   token: str | None = None) -> LoadResult:
    """`clients` concurrent writers sharing `writes` writes, and `watchers` watches."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    connector = aiohttp.TCPConnector(limit=clients + watchers + 4)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        async with session.get(f"{url}/api/v1/namespaces/default/configmaps") as answer:
            since = int((await answer.json())["metadata"]["resourceVersion"])
        stop = asyncio.Event()
        seen: list[list[tuple[str, int]]] = [[] for _ in range(watchers)]
        watching = [asyncio.create_task(_watcher(session, url, since, s, stop)) for s in seen]
        acked: list[int] = []
        latencies: list[float] = []
        errors: list[str] = []
        share = [writes // clients + (1 if i < writes % clients else 0) for i in range(clients)]
        start = time.perf_counter()
        await asyncio.gather(*(_writer(session, url, i, share[i], acked, latencies, errors)
                               for i in range(clients)))
        seconds = time.perf_counter() - start
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(len(s) < len(acked) for s in seen):
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)  # anything more would be a duplicate
        stop.set()
        await asyncio.gather(*watching, return_exceptions=True)
    result = LoadResult(len(acked), seconds, latencies, watchers, errors=errors)
    expected = {rv for rv in acked if rv > 0}
    deletions = sum(1 for rv in acked if rv < 0)
    for s in seen:
        versions = [rv for _, rv in s]
        result.duplicated += len(versions) - len(set(versions))
        result.out_of_order += sum(1 for a, b in zip(versions, versions[1:], strict=False) if b <= a)
        result.missing += len(expected - set(versions))
        result.missing += max(0, deletions - sum(1 for t, _ in s if t == "DELETED"))
    return result


def serve_and_load(clients: int = 50, writes: int = 10_000, watchers: int = 5) -> LoadResult:
    """Start `kubesched serve` on a fresh SQLite file (a process of its own, as users run it),
    put the load on it, stop it."""
    import os
    import signal
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    import yaml

    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        proc = subprocess.Popen([sys.executable, "-m", "kubesched.commands.cli", "serve", "--port", "0", "--data",
                                 str(Path(tmp) / "bench.db"), "--kubeconfig-out", str(kubeconfig)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 30
            while not kubeconfig.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("kubesched serve did not start")
                time.sleep(0.05)
            url = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
            return asyncio.run(run_load(url, clients, writes, watchers))
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
