"""The HTML report as a user sees it: opened in a real headless Chromium (Debian's `chromium`, which
`make setup` installs), driven over the DevTools protocol. Every figure must have drawn its data
(coloured pixels in its region of a screenshot), the page must log no error and fetch nothing from
the network. Without Chromium these tests fail: a skipped browser test proves nothing."""

from __future__ import annotations

import asyncio
import base64
import io
import itertools
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import pytest
from click.testing import CliRunner
from PIL import Image

from kubesched.commands.cli import main
from kubesched.sim import report as report_module
from kubesched.sim import timeline as tl
from kubesched.sim.report import save_utilisation_plot, write_report
from kubesched.sim.runner import load, simulate

SCENARIO = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: v1
kind: Node
metadata: {name: cpu-1, labels: {pool: cpu}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "20"}}
---
apiVersion: v1
kind: Node
metadata: {name: cpu-2, labels: {pool: cpu}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "20"}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-1}
status: {allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "2", pods: "20"}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: v1
kind: Pod
metadata: {name: batch-1, annotations: {sim.kubesched.io/duration: 20m}}
spec:
  priorityClassName: low
  containers: [{name: c, image: x, resources: {requests: {cpu: "3", memory: 2Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: batch-2, annotations: {sim.kubesched.io/duration: 30m}}
spec:
  priorityClassName: low
  containers: [{name: c, image: x, resources: {requests: {cpu: "3", memory: 2Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: batch-3, annotations: {sim.kubesched.io/duration: 25m}}
spec:
  priorityClassName: low
  containers: [{name: c, image: x, resources: {requests: {cpu: "3", memory: 2Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: train-1, annotations: {sim.kubesched.io/duration: 40m}}
spec:
  priorityClassName: low
  containers:
  - name: c
    image: x
    resources: {requests: {cpu: "2", memory: 8Gi, nvidia.com/gpu: "2"}, limits: {nvidia.com/gpu: "2"}}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, labels: {app: web}}
spec:
  priorityClassName: high
  containers: [{name: c, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: huge}
spec:
  priorityClassName: low
  containers: [{name: c, image: x, resources: {requests: {cpu: "16", memory: 1Gi}}}]
---
apiVersion: kubesched.io/v1alpha1
kind: Scenario
metadata: {name: report-demo}
spec:
  seed: 1
  until: 1h
  events:
  - at: 5m
    create:
      apiVersion: v1
      kind: Pod
      metadata: {name: api-1}
      spec:
        priorityClassName: high
        nodeSelector: {pool: cpu}
        containers: [{name: c, image: x, resources: {requests: {cpu: "3", memory: 2Gi}}}]
  - at: 10m
    create:
      apiVersion: v1
      kind: Pod
      metadata: {name: infer-1, annotations: {sim.kubesched.io/duration: 15m}}
      spec:
        priorityClassName: high
        containers:
        - name: c
          image: x
          resources: {requests: {cpu: "1", memory: 4Gi, nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}
  - {at: 12m, evict: {namespace: default, name: web-1}}
  - {at: 13m, evict: {namespace: default, name: batch-1}}
  - at: 15m
    create:
      apiVersion: v1
      kind: Pod
      metadata: {name: gpu-wait}
      spec:
        priorityClassName: low
        containers:
        - name: c
          image: x
          resources: {requests: {cpu: "1", memory: 1Gi, nvidia.com/gpu: "4"}, limits: {nvidia.com/gpu: "4"}}
"""

FIGURES_JS = """JSON.stringify([...document.querySelectorAll('figure.plot')].map(f => {
  const r = f.querySelector('svg').getBoundingClientRect();
  return {cls: f.className, x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height, text: f.textContent};
}))"""


# ---- a headless Chromium over the DevTools protocol ----------------------------------------------------


@dataclass
class Page:
    screenshot: Image.Image
    figures: list[dict[str, Any]]
    text: str
    errors: list[str] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)  # URLs requested other than file: and data:


class Browser:
    """One Chromium for the module; each page is a new tab on its own DevTools connection."""

    def __init__(self, profile: Path) -> None:
        binary = shutil.which("chromium")
        assert binary, "chromium is not installed: `make setup` installs Debian's chromium package"
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        active = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 15
        while not (active.exists() and active.read_text().count("\n") >= 1):
            assert self.proc.poll() is None, "chromium exited at start"
            assert time.monotonic() < deadline, "chromium did not open its DevTools port"
            time.sleep(0.05)
        port, path = active.read_text().split("\n")[:2]
        self.port, self.browser_url = int(port), f"ws://127.0.0.1:{port}{path}"

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)

    def open(self, url: str) -> Page:
        return asyncio.run(asyncio.wait_for(self._open(url), 30))

    async def _open(self, url: str) -> Page:
        async with aiohttp.ClientSession() as session, \
                session.ws_connect(self.browser_url, max_msg_size=0) as browser:
            target = (await _call(browser, "Target.createTarget", url="about:blank"))["targetId"]
            try:
                async with session.ws_connect(f"ws://127.0.0.1:{self.port}/devtools/page/{target}",
                                              max_msg_size=0) as ws:
                    return await _load(ws, url)
            finally:
                await _call(browser, "Target.closeTarget", targetId=target)


_ids = itertools.count(1)


async def _call(ws: aiohttp.ClientWebSocketResponse, method: str, events: list[dict] | None = None,
                **params: Any) -> dict[str, Any]:
    """Send a command and wait for its answer, keeping the events that arrive meanwhile."""
    ident = next(_ids)
    await ws.send_json({"id": ident, "method": method, "params": params})
    while True:
        msg = json.loads((await ws.receive()).data)
        if msg.get("id") == ident:
            assert "error" not in msg, f"{method}: {msg['error']}"
            return msg["result"]
        if events is not None and "method" in msg:
            events.append(msg)


async def _load(ws: aiohttp.ClientWebSocketResponse, url: str) -> Page:
    events: list[dict] = []
    for domain in ("Page", "Runtime", "Log", "Network"):
        await _call(ws, f"{domain}.enable", events)
    await _call(ws, "Emulation.setDeviceMetricsOverride", events, width=1280, height=900, deviceScaleFactor=1,
                mobile=False)
    await _call(ws, "Page.navigate", events, url=url)
    while not any(e["method"] == "Page.loadEventFired" for e in events):
        msg = json.loads((await ws.receive()).data)
        if "method" in msg:
            events.append(msg)
    height = (await _call(ws, "Page.getLayoutMetrics", events))["cssContentSize"]["height"]
    await _call(ws, "Emulation.setDeviceMetricsOverride", events, width=1280, height=int(height) + 1,
                deviceScaleFactor=1, mobile=False)
    await _call(ws, "Runtime.evaluate", events, expression="window.scrollTo(0, 0)")
    figures = json.loads((await _call(ws, "Runtime.evaluate", events, expression=FIGURES_JS))["result"]["value"])
    text = (await _call(ws, "Runtime.evaluate", events, expression="document.body.innerText"))["result"]["value"]
    shot = await _call(ws, "Page.captureScreenshot", events, format="png", captureBeyondViewport=True)
    page = Page(Image.open(io.BytesIO(base64.b64decode(shot["data"]))).convert("RGB"), figures, text)
    for e in events:
        p = e["params"]
        if e["method"] == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
            page.errors.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
        elif e["method"] == "Runtime.exceptionThrown":
            page.errors.append("exception: " + p["exceptionDetails"].get("text", ""))
        elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
            page.errors.append("log: " + p["entry"]["text"])
        elif e["method"] == "Network.requestWillBeSent" and not p["request"]["url"].startswith(("file:", "data:")):
            page.fetched.append(p["request"]["url"])
    return page


def coloured_pixels(image: Image.Image, box: dict[str, float]) -> int:
    """Pixels of a figure's region that carry colour: axes, ticks and text are grey; data is not."""
    left, top = int(box["x"]), int(box["y"])
    region = np.asarray(image.crop((left, top, left + int(box["w"]), top + int(box["h"]))), dtype=int)
    return int(((region.max(axis=2) - region.min(axis=2)) > 60).sum())


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    b = Browser(tmp_path_factory.mktemp("chromium"))
    yield b
    b.close()


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("report") / "scenario.yaml"
    path.write_text(SCENARIO)
    return path


# ---- tests ---------------------------------------------------------------------------------------------------


def test_browser_check_catches_errors_and_fetches(browser: Browser, tmp_path: Path) -> None:
    """The checks below can fail: a page with a console error, an exception and a remote image is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><img src='http://127.0.0.1:9/x.png'><script>console.error('boom');"
                   "undefined_function();</script></body></html>")
    page = browser.open(bad.as_uri())
    assert any("boom" in e for e in page.errors)
    assert any(e.startswith("exception:") for e in page.errors)
    assert page.fetched == ["http://127.0.0.1:9/x.png"]


def test_simulate_report_opens_in_chromium_with_every_plot_drawn(browser: Browser, scenario: Path,
                                                                   tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["simulate", str(scenario), "--report", str(report), "--explain",
                                       "default/gpu-wait", "-o", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["time"] == 3600.0  # the report leaves the results contract alone

    page = browser.open(report.as_uri())
    assert page.errors == [] and page.fetched == []
    by_class = {f["cls"].split()[-1]: f for f in page.figures}
    assert set(by_class) == {"utilisation", "timeline", "pending", "preemptions", "removals"}
    for name, fig in by_class.items():
        assert fig["w"] > 600 and fig["h"] > 150, name
        assert coloured_pixels(page.screenshot, fig) > 300, f"{name}: no data drawn"
    # every resource, the extended one included; the preemption graph names both sides
    assert all(r in by_class["utilisation"]["text"] for r in ("cpu:", "memory:", "nvidia.com/gpu:"))
    assert "default/api-1 (high (1000))" in by_class["preemptions"]["text"]
    assert "default/batch-2 (low (10))" in by_class["preemptions"]["text"]
    assert "Eviction API refusals (1)" in by_class["removals"]["text"]
    assert "Preempted (2)" in by_class["removals"]["text"] and "EvictionAPI (1)" in by_class["removals"]["text"]
    assert "cpu-1 (2 pods)" in by_class["timeline"]["text"]  # batch-2 preempted there, then api-1
    # the summary and what still waits, with the per-node verdicts the run kept
    text = page.text
    for row in ("virtual time\t0 to 1h", "pods\t9", "Pending\t2", "Running\t2", "Succeeded\t2",
                "Deleted (Preempted)\t2", "Deleted (EvictionAPI)\t1", "preemptions\t2 (2 victims)"):
        assert row in text, row
    assert "Insufficient nvidia.com/gpu" in text and "Insufficient cpu" in text
    assert "Pods still pending (2)" in text
    for node in ("cpu-1", "cpu-2", "gpu-1"):
        assert node in text


def test_report_of_several_runs_has_a_section_each(browser: Browser, scenario: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """What `compare` writes: an overview side by side, then each run; here with the preemption graph
    of a large run (aggregated by priority class), its threshold lowered to this small one."""
    monkeypatch.setattr(report_module, "POD_GRAPH_EDGES", 1)
    runs = [(label, simulate(load([str(scenario)], until=until))) for label, until in (("whole hour", 3600.0),
                                                                                       ("first 8 minutes", 480.0))]
    report = tmp_path / "compare.html"
    write_report(str(report), runs, "two runs", notes=["the same cluster stopped at two times"])
    page = browser.open(report.as_uri())
    assert page.errors == [] and page.fetched == []
    assert "the same cluster stopped at two times" in page.text
    assert page.text.count("whole hour") >= 2 and page.text.count("first 8 minutes") >= 2  # overview + section
    assert "virtual time\t0 to 1h\t0 to 8m" in page.text
    assert "Succeeded\t2\t0" in page.text  # a phase one run lacks counts 0 there
    assert sum(f["cls"].endswith("utilisation") for f in page.figures) == 2
    graphs = [f["text"] for f in page.figures if f["cls"].endswith("preemptions")]
    assert len(graphs) == 2 and "by priority class" in graphs[0]
    assert "high (1000)" in graphs[0] and "low (10)" in graphs[0] and "default/" not in graphs[0]
    for fig in page.figures:
        assert coloured_pixels(page.screenshot, fig) > 40, fig["cls"]


def test_utilisation_plot_file(scenario: Path, tmp_path: Path) -> None:
    result = simulate(load([str(scenario)]))
    png, svg = tmp_path / "u.png", tmp_path / "u.svg"
    save_utilisation_plot(result, str(png))
    save_utilisation_plot(result, str(svg))
    image = Image.open(png).convert("RGB")
    assert coloured_pixels(image, {"x": 0, "y": 0, "w": image.width, "h": image.height}) > 1000
    assert "nvidia.com/gpu" in svg.read_text()


def test_series_follow_the_run(scenario: Path) -> None:
    """Utilisation and pending counts at known moments of the scenario."""
    result = simulate(load([str(scenario)]))
    recorder, end = result.recorder, result.cluster.now()
    spans = tl.pod_spans(recorder, end)
    gpus = tl.requested_over_time(spans, ["nvidia.com/gpu"])["nvidia.com/gpu"]
    # train-1 holds both GPUs until infer-1 preempts it at 10m; infer-1 holds one for its 15 minutes.
    assert [gpus.at(t) for t in (0, 599, 600, 1499, 1500)] == [2, 2, 1, 1, 0]
    assert gpus.mean(0, 3600) == (2 * 600 + 900) / 3600
    pending = tl.pending_over_time(tl.pending_windows(recorder, end))
    assert pending["Insufficient cpu"].at(3599) == 1  # huge, from the start
    assert pending["Insufficient nvidia.com/gpu"].at(3599) == 1  # gpu-wait, since 15m
    assert pending["Insufficient nvidia.com/gpu"].at(800) == 0
    assert tl.total(pending.values()).maximum() >= 2


def test_step_merges_changes_at_one_instant() -> None:
    s = tl.Step.from_changes([5, 0, 5, 10], [-2, 2, 3, -3])
    assert list(s.times) == [0, 5, 10] and list(s.values) == [2, 3, 0]
    assert s.mean(0, 10) == 2.5


def test_simulate_without_report_does_not_load_matplotlib(scenario: Path) -> None:
    """matplotlib costs half a second to import: only a run that writes a report pays it."""
    code = ("import sys; from click.testing import CliRunner; from kubesched.commands.cli import main; "
            f"r = CliRunner().invoke(main, ['simulate', {str(scenario)!r}, '-o', 'json']); "
            "assert r.exit_code == 0, r.output; print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_dra_devices_follow_the_run(tmp_path: Path) -> None:
    """Devices allocated to claims and devices published, per driver: two GPUs taken at once, one
    freed with train-a's claim at 1m and taken again by train-c; the plot names the driver."""
    result = simulate(load([str(Path(__file__).parent / "scenarios" / "dra-gpu-template.yaml")]))
    allocated, published = tl.devices_over_time(result.recorder)
    name = "gpu.example.com devices"
    assert published[name].at(0) == published[name].at(120) == 2
    assert allocated[name].at(0) == 2 and allocated[name].at(120) == 2
    svg = tmp_path / "u.svg"
    save_utilisation_plot(result, str(svg))
    assert "gpu.example.com devices: peak 100%, mean 100% of 2 devices" in svg.read_text()
