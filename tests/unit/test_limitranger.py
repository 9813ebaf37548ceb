"""LimitRanger: LimitRange defaulting, container defaults and the annotation, the min/max/ratio
checks and their messages, worded as plugin/pkg/admission/limitranger words them."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.apiserver.errors import Forbidden, Invalid
from kubesched.apiserver.limitranger import (
    ANNOTATION,
    aggregate,
    claim_violations,
    default_limit_range,
    pod_totals,
    pod_violations,
)
from kubesched.apiserver.server import APIServer
from kubesched.store.memory import MemoryStore


def limit_range(*items: dict[str, Any], name: str = "lr") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name}, "spec": {"limits": list(items)}}


def container(name: str = "c", requests: dict | None = None, limits: dict | None = None, **extra: Any) -> dict:
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}
    return {"name": name, "image": "x", "resources": resources, **extra}


def pod(*containers: dict[str, Any], name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": list(containers), **spec}}


def test_limit_range_defaulting_takes_default_from_max_and_requests_from_default_then_min() -> None:
    lr = limit_range({"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m",
                      "ephemeral-storage": "1Gi"}, "default": {"memory": "512Mi"}},
                     {"type": "Pod", "max": {"cpu": "4"}})
    default_limit_range(lr)
    item, pod_item = lr["spec"]["limits"]
    assert item["default"] == {"memory": "512Mi", "cpu": "2"}
    assert item["defaultRequest"] == {"memory": "512Mi", "cpu": "2", "ephemeral-storage": "1Gi"}
    assert "default" not in pod_item and "defaultRequest" not in pod_item


def test_defaults_fill_what_each_container_lacks_and_the_annotation_says_what() -> None:
    api = APIServer(MemoryStore(), lambda: 0.0)
    api.create(limit_range({"type": "Container", "defaultRequest": {"cpu": "250m"}, "default": {"cpu": "1",
                                                                                              "memory": "1Gi"}}))
    created = api.create(pod(container("app", requests={"cpu": "500m"}), container("side", limits={"memory": "2Gi"}),
                             initContainers=[container("init")]))
    app, side = created["spec"]["containers"]
    assert app["resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    # API defaulting copied the memory limit into the request before LimitRanger ran.
    assert side["resources"] == {"requests": {"memory": "2Gi", "cpu": "250m"}, "limits": {"memory": "2Gi", "cpu": "1"}}
    assert created["metadata"]["annotations"][ANNOTATION] == (
        "LimitRanger plugin set: memory request for container app; cpu, memory limit for container app; "
        "cpu request for container side; cpu limit for container side; cpu, memory request for init container init; "
        "cpu, memory limit for init container init")
    assert created["status"]["qosClass"] == "Burstable"


def test_a_default_limit_below_the_request_makes_the_pod_invalid() -> None:
    api = APIServer(MemoryStore(), lambda: 0.0)
    api.create(limit_range({"type": "Container", "default": {"cpu": "100m"}}))
    with pytest.raises(Invalid, match=r'requests: Invalid value: "500m": must be less than or equal to cpu limit of 100m'):
        api.create(pod(container(requests={"cpu": "500m"})))


@pytest.mark.parametrize(("item", "c", "messages"), [
    ({"min": {"cpu": "100m"}}, container(), ["minimum cpu usage per Container is 100m.  No request is specified"]),
    ({"min": {"cpu": "100m"}}, container(requests={"cpu": "50m"}),
     ["minimum cpu usage per Container is 100m, but request is 50m"]),
    ({"min": {"memory": "64Mi"}}, container(requests={"memory": "128Mi"}, limits={"memory": "32Mi"}),
     ["minimum memory usage per Container is 64Mi, but limit is 32Mi"]),
    ({"max": {"cpu": "1"}}, container(requests={"cpu": "2"}),
     ["maximum cpu usage per Container is 1.  No limit is specified"]),
    ({"max": {"cpu": "1"}}, container(limits={"cpu": "1500m"}),
     ["maximum cpu usage per Container is 1, but limit is 1500m"]),
    ({"max": {"cpu": "1"}}, container(requests={"cpu": "2"}, limits={"cpu": "1"}),
     ["maximum cpu usage per Container is 1, but request is 2"]),
    ({"maxLimitRequestRatio": {"cpu": "2"}}, container(limits={"cpu": "1"}),
     ["cpu max limit to request ratio per Container is 2, but no request is specified or request is 0"]),
    ({"maxLimitRequestRatio": {"cpu": "2"}}, container(requests={"cpu": "1"}),
     ["cpu max limit to request ratio per Container is 2, but no limit is specified or limit is 0"]),
    ({"maxLimitRequestRatio": {"memory": "1500m"}}, container(requests={"memory": "1Gi"}, limits={"memory": "2Gi"}),
     ["memory max limit to request ratio per Container is 1500m, but provided ratio is 2.000000"]),
    ({"maxLimitRequestRatio": {"cpu": "3"}}, container(requests={"cpu": "300m"}, limits={"cpu": "900m"}), []),
    ({"max": {"cpu": "2"}, "min": {"cpu": "1"}}, container(requests={"cpu": "1"}, limits={"cpu": "2"}), []),
])
def test_container_bounds(item: dict, c: dict, messages: list[str]) -> None:
    assert pod_violations(limit_range({"type": "Container", **item}), {"containers": [c]}) == messages


def test_init_containers_are_checked_after_the_containers() -> None:
    spec = {"containers": [container("a", limits={"cpu": "3"})], "initContainers": [container("b", limits={"cpu": "4"})]}
    assert pod_violations(limit_range({"type": "Container", "max": {"cpu": "2"}}), spec) == [
        "maximum cpu usage per Container is 2, but limit is 3", "maximum cpu usage per Container is 2, but limit is 4"]


def test_pod_totals_count_sidecars_and_the_largest_init_container_and_take_pod_level_resources() -> None:
    spec = {"containers": [container("a", requests={"cpu": "500m"}, limits={"memory": "1Gi"})],
            "initContainers": [container("side", requests={"cpu": "250m"}, limits={"memory": "512Mi"},
                                         restartPolicy="Always"),
                               container("init", requests={"cpu": "2"}, limits={"memory": "256Mi"})],
            "overhead": {"cpu": "1"}}
    requests, limits = pod_totals(spec)
    assert (str(requests["cpu"]), str(limits["memory"])) == ("2250m", "1536Mi")  # no overhead
    assert pod_violations(limit_range({"type": "Pod", "max": {"memory": "1Gi", "cpu": "3"}}), spec) == [
        "maximum cpu usage per Pod is 3.  No limit is specified", "maximum memory usage per Pod is 1Gi, but limit is 1536Mi"]
    spec["resources"] = {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}}
    requests, limits = pod_totals(spec)
    assert (str(requests["cpu"]), str(limits["cpu"]), str(limits["memory"])) == ("1", "2", "1Gi")


def test_claim_storage_bounds_read_the_request_only() -> None:
    lr = limit_range({"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}})
    claim = {"kind": "PersistentVolumeClaim", "metadata": {"name": "d"},
             "spec": {"resources": {"requests": {"storage": "20Gi"}, "limits": {"storage": "1Gi"}}}}
    assert claim_violations(lr, claim) == ["maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"]
    claim["spec"]["resources"] = {}
    assert claim_violations(lr, claim) == [
        "minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified",
        "maximum storage usage per PersistentVolumeClaim is 10Gi.  No request is specified"]


def test_messages_are_aggregated_as_upstream_aggregates_errors() -> None:
    assert aggregate(["a"]) == "a"
    assert aggregate(["a", "a"]) == "a"
    assert aggregate(["a", "b", "a"]) == "[a, b]"


def test_the_refusal_names_the_generated_pod_and_the_first_range_violated() -> None:
    api = APIServer(MemoryStore(), lambda: 0.0)
    api.create(limit_range({"type": "Container", "max": {"cpu": "1"}}, name="a"))
    api.create(limit_range({"type": "Container", "max": {"cpu": "500m"}}, name="b"))
    template = pod(container(limits={"cpu": "2"}))
    template["metadata"] = {"generateName": "web-"}
    with pytest.raises(Forbidden) as refused:
        api.create(template)
    assert refused.value.message.startswith('pods "web-')
    assert refused.value.message.endswith('" is forbidden: maximum cpu usage per Container is 1, but limit is 2')
