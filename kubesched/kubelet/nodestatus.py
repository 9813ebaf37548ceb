"""What a registering kubelet reports about its node, for `serve`: the conditions and node info
`kubectl get nodes` shows (STATUS Ready, VERSION v1.35.0).

`simulate` needs none of it (a node without a Ready condition counts as ready there, and a
snapshot's nodes keep what they were exported with); a cluster in a box should look like a
cluster. Only what the node lacks is filled in, so the kubelets' pressure conditions and whatever
a client wrote stay as they are.
"""

from __future__ import annotations

import contextlib

from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.runtime.clock import Clock
from kubesched.runtime.workqueue import WorkQueue
from kubesched.store.base import DELETED, WatchEvent

KUBELET_VERSION = "v1.35.0"
_CONDITIONS = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)


class NodeStatusReporter:
    def __init__(self, api: APIServer, clock: Clock) -> None:
        self.api = api
        # Reports are written after the change that prompted them has reached every watcher.
        self.queue = WorkQueue(clock, self._report)

    def start(self) -> None:
        for node in self.api.store.list("Node"):
            self.queue.add(node["metadata"]["name"])
        self.api.store.watch(self._on_node, {"Node"})

    def _on_node(self, ev: WatchEvent) -> None:
        if ev.type != DELETED:
            self.queue.add(ev.obj["metadata"]["name"])

    def _report(self, name: str) -> None:
        node = self.api.store.get("Node", "", name)
        if node is None:
            return
        status = node.get("status") or {}
        have = {c.get("type") for c in status.get("conditions") or ()}
        info = status.get("nodeInfo") or {}
        if all(c[0] in have for c in _CONDITIONS) and info.get("kubeletVersion"):
            return
        now = self.api.timestamp()

        def fill(s: dict) -> None:
            conditions = s.setdefault("conditions", [])
            for ctype, value, reason, message in _CONDITIONS:
                if ctype not in have:
                    conditions.append({"type": ctype, "status": value, "reason": reason, "message": message,
                                       "lastHeartbeatTime": now, "lastTransitionTime": now})
            node_info = s.setdefault("nodeInfo", {})
            for key, value in (("kubeletVersion", KUBELET_VERSION), ("kubeProxyVersion", ""),
                               ("operatingSystem", "linux"), ("architecture", "amd64"),
                               ("containerRuntimeVersion", "kubesched://simulated"), ("osImage", "kubesched"),
                               ("kernelVersion", ""), ("machineID", ""), ("systemUUID", ""), ("bootID", "")):
                node_info.setdefault(key, value)
            s.setdefault("addresses", [{"type": "Hostname", "address": node["metadata"]["name"]}])

        with contextlib.suppress(APIError):  # deleted meanwhile
            self.api.update_status("Node", "", node["metadata"]["name"], fill)
