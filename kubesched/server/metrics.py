"""metrics.k8s.io/v1beta1, as metrics-server serves it: what each node and pod uses now.

On a cluster, metrics-server scrapes the kubelets' resource metrics; here the simulated kubelets
keep every running pod's usage (its requests unless annotations or scenario `usage` events say
otherwise), so the metrics are read from them. That is what `kubectl top` and the descheduler's
`KubernetesMetrics` source see.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.api.quantity import format_amount
from kubesched.kubelet.usage import METRICS_KEYS, UsageTracker

Obj = dict[str, Any]
WINDOW = "10s"  # metrics-server's default resolution


def _usage(amounts: dict[str, int]) -> dict[str, str]:
    return {key: format_amount(key, amounts.get(key, 0)) for key in METRICS_KEYS}


class Metrics:
    def __init__(self, usage: UsageTracker, timestamp: Callable[[], str]) -> None:
        self.usage = usage
        self.timestamp = timestamp

    def nodes(self, names: list[str]) -> list[Obj]:
        now = self.timestamp()
        return [{"kind": "NodeMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
                 "metadata": {"name": name, "creationTimestamp": now, "labels": {}},
                 "timestamp": now, "window": WINDOW, "usage": _usage(self.usage.node_totals(name))}
                for name in names]

    def pods(self, namespace: str | None) -> list[Obj]:
        now = self.timestamp()
        out = []
        for pu in self.usage.pods.values():
            if namespace is not None and pu.namespace != namespace:
                continue
            containers = [{"name": name, "usage": _usage(amounts)}
                          for name, amounts in self.usage.container_metrics(pu).items()]
            out.append({"kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
                        "metadata": {"name": pu.name, "namespace": pu.namespace, "creationTimestamp": now,
                                     "labels": dict((pu.pod.get("metadata") or {}).get("labels") or {})},
                        "timestamp": now, "window": WINDOW, "containers": containers})
        return out
