"""What an update may change of a pod (ValidatePodUpdate), through the API server: an operator or
`kubectl set image` changes images, shortens a deadline or adds a toleration; the rest is refused
with kube-apiserver's words."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesched.apiserver.errors import Invalid
from kubesched.apiserver.server import APIServer
from kubesched.store.memory import MemoryStore


@pytest.fixture
def api() -> APIServer:
    server = APIServer(MemoryStore(), now=lambda: 0.0)
    server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                   "spec": {"activeDeadlineSeconds": 600, "schedulingGates": [{"name": "a"}, {"name": "b"}],
                            "nodeSelector": {"zone": "z1"},
                            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute",
                                             "tolerationSeconds": 60}],
                            "containers": [{"name": "c", "image": "app:1"}]}})
    return server


def updated(api: APIServer, change: Any) -> dict[str, Any]:
    pod = copy.deepcopy(api.get("Pod", "default", "p"))
    change(pod["spec"])
    return api.update(pod)


def refusal(api: APIServer, change: Any) -> str:
    with pytest.raises(Invalid) as refused:
        updated(api, change)
    return str(refused.value)


def test_images_deadline_tolerations_and_gates_may_change(api: APIServer) -> None:
    def change(spec: dict[str, Any]) -> None:
        spec["containers"][0]["image"] = "app:2"
        spec["activeDeadlineSeconds"] = 300
        spec["tolerations"][0]["tolerationSeconds"] = 30
        spec["tolerations"].append({"key": "other", "operator": "Exists"})
        spec["schedulingGates"] = [{"name": "b"}]
        spec["nodeSelector"]["rack"] = "r1"  # gated: selector terms may be added
    spec = updated(api, change)["spec"]
    assert spec["containers"][0]["image"] == "app:2" and spec["activeDeadlineSeconds"] == 300
    assert {"key": "other", "operator": "Exists"} in spec["tolerations"]
    assert spec["tolerations"][0]["tolerationSeconds"] == 30 and spec["schedulingGates"] == [{"name": "b"}]


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: s.update(activeDeadlineSeconds=900),
     "spec.activeDeadlineSeconds: Invalid value: 900: must be less than or equal to previous value"),
    (lambda s: s.pop("activeDeadlineSeconds"),
     "spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value"),
    (lambda s: s.update(tolerations=[]),
     "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"),
    (lambda s: s["schedulingGates"].append({"name": "c"}),
     "spec.schedulingGates: Forbidden: only deletion is allowed, but found new scheduling gate 'c'"),
    (lambda s: s["containers"].append({"name": "d", "image": "x"}),
     "spec.containers: Forbidden: pod updates may not add or remove containers"),
    (lambda s: s["containers"][0].update(ports=[{"containerPort": 80}]),
     "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"),
    (lambda s: s.update(nodeSelector={"zone": "z2"}),
     "only additions to spec.nodeSelector are allowed (no mutations or deletions)"),
])
def test_other_changes_are_refused(api: APIServer, change: Any, message: str) -> None:
    assert message in refusal(api, change)
    assert refusal(api, change).startswith('Pod "p" is invalid: ')
