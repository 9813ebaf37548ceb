"""A load on a running `kubesched serve` over loopback: concurrent writers and watchers.

Two loads. ConfigMaps: writers create, update and delete them (each write's answer carries the
resourceVersion it made); watchers watch every ConfigMap from the version before the first write.
When the writers are done, every watcher must have received each acknowledged write's event
exactly once, in order. Pods: writers create pods on a cluster of nodes, the scheduler binds them
and the kubelets start them, while watchers follow every pod; done when all are Running, and
every watcher must have seen the same events, each once, ending at each pod's latest version.
Used by `make bench` (throughput and latency) and by the test suite (correctness).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson


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


async def _events(session: aiohttp.ClientSession, target: str, stop: asyncio.Event) -> AsyncIterator[Any]:
    """The decoded events of one watch, until the server ends it or `stop` is set."""
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
                yield orjson.loads(line)


async def _watcher(session: aiohttp.ClientSession, url: str, since: int, seen: list[tuple[str, int]],
                   stop: asyncio.Event) -> None:
    target = f"{url}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={since}&timeoutSeconds=600"
    async for ev in _events(session, target, stop):
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


@dataclass
class PodLoadResult:
    created: int
    seconds: float  # from the first create to the last acknowledgement
    running_seconds: float  # from the first create until every pod is bound and Running
    latencies: list[float]
    watchers: int
    events: int = 0  # events each watcher received
    missing: int = 0  # acknowledged creates, or pods' latest versions, some watcher never saw
    duplicated: int = 0
    out_of_order: int = 0
    diverged: int = 0  # watchers whose event sequence differs from the first watcher's
    server_cpu: float = 0.0  # CPU seconds the server process used during the load
    errors: list[str] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        return self.created / self.seconds if self.seconds else 0.0

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000 if ordered else 0.0


def pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "load"}},
            "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}


def nodes(count: int) -> list[dict]:
    return [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}",
                                                              "labels": {"kubernetes.io/hostname": f"node-{i}"}},
             "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                        "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"}}} for i in range(count)]


async def _pod_writer(session: aiohttp.ClientSession, url: str, names: list[str], acked: dict[str, int],
                      latencies: list[float], errors: list[str]) -> None:
    target = f"{url}/api/v1/namespaces/default/pods"
    for name in names:
        body = json.dumps(pod(name)).encode()
        start = time.perf_counter()
        async with session.post(target, data=body, headers={"Content-Type": "application/json"}) as answer:
            payload = await answer.read()
        latencies.append(time.perf_counter() - start)
        if answer.status != 201:
            errors.append(f"POST {name}: {answer.status} {payload[:200]!r}")
            continue
        acked[name] = int(orjson.loads(payload)["metadata"]["resourceVersion"])


async def _pod_watcher(session: aiohttp.ClientSession, url: str, since: int, seen: list[tuple[str, str, int, bool]],
                       stop: asyncio.Event) -> None:
    """Records (type, name, resourceVersion, running) for each event."""
    target = f"{url}/api/v1/namespaces/default/pods?watch=1&resourceVersion={since}&timeoutSeconds=600"
    async for ev in _events(session, target, stop):
        obj = ev["object"]
        running = bool(obj["spec"].get("nodeName")) and obj.get("status", {}).get("phase") == "Running"
        seen.append((ev["type"], obj["metadata"]["name"], int(obj["metadata"]["resourceVersion"]), running))


async def run_pod_load(url: str, pods: int = 3000, writers: int = 32, watchers: int = 5,
                       server_cpu: Callable[[], float] | None = None) -> PodLoadResult:
    """`writers` concurrent keep-alive connections creating `pods` pods between them, and
    `watchers` watches on pods; returns once every pod is Running (or after two minutes)."""
    connector = aiohttp.TCPConnector(limit=writers + watchers + 4)
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.get(f"{url}/api/v1/namespaces/default/pods") as answer:
            since = int((await answer.json())["metadata"]["resourceVersion"])
        stop = asyncio.Event()
        seen: list[list[tuple[str, str, int, bool]]] = [[] for _ in range(watchers)]
        watching = [asyncio.create_task(_pod_watcher(session, url, since, s, stop)) for s in seen]
        acked: dict[str, int] = {}
        latencies: list[float] = []
        errors: list[str] = []
        names = [f"load-{i}" for i in range(pods)]
        cpu_before = server_cpu() if server_cpu else 0.0
        start = time.perf_counter()
        await asyncio.gather(*(_pod_writer(session, url, names[i::writers], acked, latencies, errors)
                               for i in range(writers)))
        seconds = time.perf_counter() - start
        deadline = time.monotonic() + 120
        running: set[str] = set()
        read = 0
        while time.monotonic() < deadline:
            events = seen[0][read:]
            read += len(events)
            running.update(name for _, name, _, up in events if up)
            if len(running) >= len(acked):
                break
            await asyncio.sleep(0.02)
        running_seconds = time.perf_counter() - start
        cpu = (server_cpu() - cpu_before) if server_cpu else 0.0
        async with session.get(f"{url}/api/v1/namespaces/default/pods") as answer:
            latest = {p["metadata"]["name"]: int(p["metadata"]["resourceVersion"])
                      for p in (await answer.json())["items"]}
        wait_until = time.monotonic() + 30
        while time.monotonic() < wait_until and any(
                not s or s[-1][2] < max(latest.values(), default=0) for s in seen):
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)  # anything more would be a duplicate
        stop.set()
        await asyncio.gather(*watching, return_exceptions=True)
    result = PodLoadResult(len(acked), seconds, running_seconds, latencies, watchers, events=len(seen[0]),
                           server_cpu=cpu, errors=errors)
    if len(running) < len(acked):
        result.errors.append(f"{len(acked) - len(running)} pods not Running after two minutes")
    for s in seen:
        versions = [rv for _, _, rv, _ in s]
        result.duplicated += len(versions) - len(set(versions))
        result.out_of_order += sum(1 for a, b in zip(versions, versions[1:], strict=False) if b <= a)
        last = {name: rv for _, name, rv, _ in s}
        created = {name: rv for t, name, rv, _ in s if t == "ADDED"}
        result.missing += sum(1 for name, rv in acked.items() if created.get(name) != rv)
        result.missing += sum(1 for name, rv in latest.items() if last.get(name) != rv)
        result.diverged += s != seen[0]
    return result


def _official_writer(url: str, names: list[str]) -> tuple[float, float, list[float]]:
    """One writer process as users write one: the official client, one request at a time.
    Returns when it started and ended, and each create's latency."""
    from kubernetes import client

    configuration = client.Configuration()
    configuration.host = url
    api = client.CoreV1Api(client.ApiClient(configuration))
    started = time.time()
    latencies = []
    for name in names:
        start = time.perf_counter()
        api.create_namespaced_pod("default", pod(name))
        latencies.append(time.perf_counter() - start)
    return started, time.time(), latencies


def official_client_creates(url: str, pods: int = 2000, processes: int = 4) -> PodLoadResult:
    """`processes` processes creating `pods` pods between them with the official client."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    names = [f"official-{i}" for i in range(pods)]
    with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_official_writer, url, names[i::processes]) for i in range(processes)]
        answers = [f.result() for f in futures]
    seconds = max(ended for _, ended, _ in answers) - min(started for started, _, _ in answers)
    latencies = [lat for _, _, lats in answers for lat in lats]
    return PodLoadResult(len(latencies), seconds, 0.0, latencies, 0)


class _Serving:
    """`kubesched serve` on a fresh SQLite file, a process of its own as users run it."""

    def __init__(self, *inputs: str) -> None:
        self.inputs = inputs

    def __enter__(self) -> _Serving:
        import subprocess
        import sys
        import tempfile

        import yaml

        self.tmp = tempfile.TemporaryDirectory()
        tmp = Path(self.tmp.name)
        kubeconfig = tmp / "kubeconfig"
        self.proc = subprocess.Popen([sys.executable, "-m", "kubesched.commands.cli", "serve", "--port", "0", "--data",
                                      str(tmp / "bench.db"), "--kubeconfig-out", str(kubeconfig), *self.inputs],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while not kubeconfig.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError("kubesched serve did not start")
            time.sleep(0.05)
        self.url = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        return self

    def cpu(self) -> float:
        """The server's CPU seconds so far (user and system), from /proc."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *_: object) -> None:
        import signal

        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=30)
        self.tmp.cleanup()


def serve_and_load(clients: int = 50, writes: int = 10_000, watchers: int = 5) -> LoadResult:
    """Start `kubesched serve`, put the ConfigMap load on it, stop it."""
    with _Serving() as served:
        return asyncio.run(run_load(served.url, clients, writes, watchers))


def serve_and_create_pods(node_count: int = 50, pods: int = 3000, writers: int = 32,
                          watchers: int = 5, official: bool = False) -> PodLoadResult:
    """Start `kubesched serve` with `node_count` nodes, create `pods` pods, wait until they run;
    `official`: 4 processes with the official client create them instead, nobody watching."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        cluster = Path(tmp) / "nodes.json"
        cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes(node_count)}))
        with _Serving(str(cluster)) as served:
            if official:
                before = served.cpu()
                result = official_client_creates(served.url, pods)
                result.server_cpu = served.cpu() - before
                return result
            return asyncio.run(run_pod_load(served.url, pods, writers, watchers, served.cpu))
