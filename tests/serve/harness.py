"""A real `kubesched serve` process on loopback, for kubectl and the official client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

KUBESCHED = [sys.executable, "-m", "kubesched.commands.cli"]


@dataclass
class Served:
    """One server process: its URL, kubeconfig and data file; `restart` keeps the data file."""

    tmp: Path
    args: list[str] = field(default_factory=list)
    proc: subprocess.Popen | None = None
    url: str = ""

    @property
    def kubeconfig(self) -> str:
        return str(self.tmp / "kubeconfig")

    @property
    def data(self) -> str:
        return str(self.tmp / "cluster.db")

    def start(self, port: int = 0) -> Served:
        kc = Path(self.kubeconfig)
        kc.unlink(missing_ok=True)
        log = open(self.tmp / "serve.log", "ab")  # noqa: SIM115 - the process keeps it
        self.proc = subprocess.Popen([*KUBESCHED, "serve", "--port", str(port), "--data", self.data,
                                      "--kubeconfig-out", self.kubeconfig, *self.args],
                                     stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 30
        while not kc.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("serve did not start:\n" + (self.tmp / "serve.log").read_text())
            time.sleep(0.05)
        self.url = yaml.safe_load(kc.read_text())["clusters"][0]["cluster"]["server"]
        return self

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=30)

    def restart(self) -> Served:
        port = self.port
        self.kill(signal.SIGTERM)
        return self.start(port)

    def kubectl(self, *args: str, check: bool = True, input: str | None = None, timeout: float = 120) -> str:
        out = subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig, "--cache-dir", str(self.tmp / "kcache"),
                              *args], capture_output=True, text=True, input=input, timeout=timeout)
        if check and out.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        return out.stdout + (out.stderr if not check else "")


def wait_for(predicate, timeout: float = 30, interval: float = 0.1, what: str = "condition"):  # noqa: ANN001, ANN201
    """Poll until `predicate()` is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)
