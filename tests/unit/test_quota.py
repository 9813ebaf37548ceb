"""ResourceQuota: what objects use (pkg/quota/v1 evaluators), the admission's checks, charges and
messages, and the controller's recount as objects come and go."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubesched.api.quota import (
    Amount,
    add,
    amount,
    exceeded,
    guess_plural,
    matching_resources,
    object_count_name,
    pod_charged,
    pretty,
    printable,
    scope_matches,
    usage,
)
from kubesched.apiserver.errors import Forbidden
from kubesched.apiserver.server import APIServer
from kubesched.cluster.cluster import Cluster
from kubesched.store.memory import MemoryStore


def pod(name: str = "p", requests: dict | None = None, limits: dict | None = None, **spec: Any) -> dict[str, Any]:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": resources}], **spec}}


def quota(hard: dict[str, str], name: str = "q", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": {"hard": hard, **spec}}


def test_sums_keep_the_format_of_their_first_non_zero_term() -> None:
    assert str(amount("500m").plus(amount("1500m"))) == "2"
    assert str(amount("128Mi").plus(amount("1G"))) == "1134217728"  # BinarySI, but not a whole Ki
    assert str(Amount(Fraction(0)).plus(amount("256Mi"))) == "256Mi"
    assert str(amount("1.5Gi")) == "1536Mi" and str(amount("0.1")) == "100m" and str(amount(2000)) == "2k"
    used = add({"pods": amount("1"), "requests.cpu": amount("250m")}, {"requests.cpu": amount("1")})
    assert pretty(used) == "pods=1,requests.cpu=1250m"
    assert exceeded(used, {"pods": amount("1"), "requests.cpu": amount("1")}) == ["requests.cpu"]


def test_pod_usage_counts_requests_limits_extended_resources_hugepages_and_overhead() -> None:
    p = pod(requests={"cpu": "500m", "memory": "1Gi", "example.com/fpga": "2", "hugepages-2Mi": "4Mi"},
            limits={"cpu": "1", "example.com/fpga": "2", "hugepages-2Mi": "4Mi"}, overhead={"cpu": "100m"})
    assert printable(usage(p, "count/pods")) == {
        "count/pods": "1", "cpu": "600m", "hugepages-2Mi": "4Mi", "limits.cpu": "1100m", "pods": "1",
        "memory": "1Gi", "requests.cpu": "600m", "requests.example.com/fpga": "2", "requests.hugepages-2Mi": "4Mi",
        "requests.memory": "1Gi"}
    assert printable(usage(p, "count/pods", charged=False)) == {"count/pods": "1"}


def test_pod_usage_takes_sidecars_init_containers_and_pod_level_resources() -> None:
    p = pod(requests={"cpu": "1"})
    p["spec"]["initContainers"] = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
        {"name": "init", "resources": {"requests": {"cpu": "2"}}}]
    assert str(usage(p, "count/pods")["requests.cpu"]) == "2500m"
    p["spec"]["resources"] = {"limits": {"cpu": "4", "memory": "2Gi"}}
    used = usage(p, "count/pods")
    assert (str(used["requests.cpu"]), str(used["requests.memory"]), str(used["limits.cpu"])) == ("2500m", "2Gi", "4")


def test_a_pod_stops_being_charged_when_it_finishes_or_outlives_its_grace_period() -> None:
    p = pod()
    assert pod_charged(p, 0, float)
    assert not pod_charged({**p, "status": {"phase": "Succeeded"}}, 0, float)
    deleting = {**p, "metadata": {"name": "p", "deletionTimestamp": "30", "deletionGracePeriodSeconds": 30}}
    assert pod_charged(deleting, 60, float) and not pod_charged(deleting, 61, float)


@pytest.mark.parametrize(("scope", "spec", "matches"), [
    ({"scopeName": "Terminating"}, {"activeDeadlineSeconds": 0}, True),
    ({"scopeName": "NotTerminating"}, {"activeDeadlineSeconds": 10}, False),
    ({"scopeName": "BestEffort"}, {}, True),
    ({"scopeName": "NotBestEffort"}, {}, False),
    ({"scopeName": "PriorityClass", "operator": "Exists"}, {"priorityClassName": "high"}, True),
    ({"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}, {"priorityClassName": "low"}, False),
    ({"scopeName": "PriorityClass", "operator": "NotIn", "values": ["high"]}, {}, True),
    ({"scopeName": "PriorityClass", "operator": "DoesNotExist"}, {"priorityClassName": "high"}, False),
    ({"scopeName": "CrossNamespacePodAffinity"},
     {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
         {"weight": 1, "podAffinityTerm": {"topologyKey": "k", "namespaceSelector": {}}}]}}}, True),
])
def test_pod_scopes(scope: dict, spec: dict, matches: bool) -> None:
    p = pod()
    p["spec"].update(spec)
    assert scope_matches(p, scope) is matches


def test_object_counts_and_what_each_evaluator_tracks() -> None:
    assert object_count_name({"apiVersion": "apps/v1", "kind": "Deployment"}) == "count/deployments.apps"
    assert object_count_name({"apiVersion": "v1", "kind": "ConfigMap"}) == "count/configmaps"
    assert object_count_name({"apiVersion": "example.com/v1", "kind": "Widget"},
                             lambda group, kind: "widgetz") == "count/widgetz.example.com"
    assert [guess_plural(k) for k in ("Ingress", "NetworkPolicy", "Endpoints")] == \
        ["ingresses", "networkpolicies", "endpoints"]
    hard = ["pods", "services", "count/configmaps", "configmaps", "requests.nvidia.com/gpu", "requests.storage",
            "gold.storageclass.storage.k8s.io/requests.storage", "requests.hugepages-1Gi"]
    assert matching_resources("Pod", "count/pods", hard) == ["pods", "requests.nvidia.com/gpu", "requests.hugepages-1Gi"]
    assert matching_resources("ConfigMap", "count/configmaps", hard) == ["count/configmaps", "configmaps"]
    assert matching_resources("PersistentVolumeClaim", "count/persistentvolumeclaims", hard) == \
        ["requests.storage", "gold.storageclass.storage.k8s.io/requests.storage"]
    svc = {"kind": "Service", "metadata": {"name": "s"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 1}, {
        "port": 2, "nodePort": 30000}], "allocateLoadBalancerNodePorts": False}}
    assert printable(usage(svc, "count/services")) == {"count/services": "1", "services": "1",
                                                       "services.loadbalancers": "1", "services.nodeports": "1"}


def api_with(*objects: dict[str, Any]) -> APIServer:
    api = APIServer(MemoryStore(), lambda: 0.0)
    for obj in objects:
        api.create(obj)
    return api


def set_status(api: APIServer, name: str, hard: dict[str, str], used: dict[str, str]) -> None:
    api.update_status("ResourceQuota", "default", name, lambda st: st.update(hard=hard, used=used))


def test_a_quota_without_status_yet_admits_everything() -> None:
    api = api_with(quota({"pods": "0"}))
    api.create(pod())
    assert api.store.get("ResourceQuota", "default", "q")["status"] == {}


def test_admission_refuses_above_hard_and_charges_what_it_admits() -> None:
    api = api_with(quota({"pods": "2", "requests.cpu": "1"}))
    set_status(api, "q", {"pods": "2", "requests.cpu": "1"}, {"pods": "0", "requests.cpu": "0"})
    api.create(pod("a", requests={"cpu": "600m"}))
    assert api.store.get("ResourceQuota", "default", "q")["status"]["used"] == {"pods": "1", "requests.cpu": "600m"}
    with pytest.raises(Forbidden, match=r'^pods "b" is forbidden: exceeded quota: q, requested: requests.cpu=500m, '
                                        r"used: requests.cpu=600m, limited: requests.cpu=1$"):
        api.create(pod("b", requests={"cpu": "500m"}))
    api.create(pod("c", requests={"cpu": "400m"}))
    assert api.store.get("ResourceQuota", "default", "q")["status"]["used"] == {"pods": "2", "requests.cpu": "1"}


def test_a_quota_on_cpu_or_memory_needs_every_container_to_state_it() -> None:
    api = api_with(quota({"limits.memory": "1Gi", "cpu": "2"}))
    set_status(api, "q", {"limits.memory": "1Gi", "cpu": "2"}, {"limits.memory": "0", "cpu": "0"})
    two = pod("two", limits={"memory": "1Gi"})
    two["spec"]["initContainers"] = [{"name": "init", "image": "x"}]
    with pytest.raises(Forbidden, match=r'^pods "two" is forbidden: failed quota: q: must specify cpu for: c,init; '
                                        r"limits.memory for: init$"):
        api.create(two)
    level = pod("level")
    level["spec"]["resources"] = {"requests": {"cpu": "1"}, "limits": {"memory": "512Mi"}}
    api.create(level)  # pod-level resources exempt the containers


def test_status_unknown_for_a_tracked_resource_refuses() -> None:
    api = api_with(quota({"pods": "2", "requests.cpu": "1"}))
    set_status(api, "q", {"pods": "2", "requests.cpu": "1"}, {"pods": "0"})
    with pytest.raises(Forbidden, match="status unknown for quota: q, resources: pods,requests.cpu$"):
        api.create(pod(requests={"cpu": "1"}))


def test_the_controller_recounts_usage_as_pods_come_finish_and_go() -> None:
    c = Cluster()
    c.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
              "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    c.restore(quota({"pods": "3", "requests.memory": "1Gi"}, scopes=["NotTerminating"]))
    c.restore(pod("old", requests={"memory": "256Mi"}, nodeName="n1"))  # a snapshot pod counts too
    c.restore(pod("deadline", requests={"memory": "256Mi"}, activeDeadlineSeconds=60))  # out of scope
    short = pod("short", requests={"memory": "128Mi"})
    short["metadata"]["annotations"] = {"sim.kubesched.io/duration": "30s"}
    c.clock.call_at(10, lambda: c.create(short))
    c.run(20)
    assert c.store.get("ResourceQuota", "default", "q")["status"] == {
        "hard": {"pods": "3", "requests.memory": "1Gi"}, "used": {"pods": "2", "requests.memory": "384Mi"}}
    c.run(60)  # short has finished
    assert c.store.get("ResourceQuota", "default", "q")["status"]["used"] == {"pods": "1", "requests.memory": "256Mi"}
    c.api.delete("Pod", "default", "old", grace_period=0)
    c.run(61)
    assert c.store.get("ResourceQuota", "default", "q")["status"]["used"] == {"pods": "0", "requests.memory": "0"}
