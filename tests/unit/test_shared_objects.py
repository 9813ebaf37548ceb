"""Values many pods hold alike (default tolerations, conditions and container states written at the
same instant) are stored once: a large run's memory depends on it. They must still read, copy,
serialise and change (through a copy) like any other part of an object."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
import yaml

from kubesched.api.objects import Shared, deep_copy, set_condition, shared_condition
from kubesched.sim.runner import load, simulate


def _objects(tmp_path: Any, pods: int = 3) -> Any:
    docs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
             "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"}}]
    docs += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
              "spec": {"containers": [{"name": "c", "image": "nginx",
                                       "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}
             for i in range(pods)]
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return load([str(path)])


def test_pods_started_together_hold_one_copy_of_what_they_have_alike(tmp_path: Any) -> None:
    result = simulate(_objects(tmp_path))
    pods = sorted(result.cluster.store.list("Pod"), key=lambda p: p["metadata"]["name"])
    assert [p["status"]["phase"] for p in pods] == ["Running"] * 3
    first, *others = pods
    for pod in others:
        assert all(a is b for a, b in zip(pod["spec"]["tolerations"], first["spec"]["tolerations"], strict=True))
        assert all(a is b for a, b in zip(pod["status"]["conditions"], first["status"]["conditions"], strict=True))
        assert pod["status"]["containerStatuses"][0]["state"] is first["status"]["containerStatuses"][0]["state"]
    assert first["spec"]["tolerations"][0] == {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                               "effect": "NoExecute", "tolerationSeconds": 300}


def test_a_consumed_scenario_keeps_only_the_kinds_of_what_it_handed_over(tmp_path: Any) -> None:
    scenario = _objects(tmp_path)
    result = simulate(scenario, consume=True)
    assert sorted(obj["kind"] for _, obj in scenario.objects) == ["ConfigMap", "Node", "Pod", "Pod", "Pod"]
    assert all(set(obj) == {"kind"} for _, obj in scenario.objects)
    assert len(list(result.cluster.store.list("Pod"))) == 3


def test_a_shared_value_changes_only_through_a_copy() -> None:
    condition = shared_condition("Ready", "True", "2026-01-01T00:00:00Z")
    assert shared_condition("Ready", "True", "2026-01-01T00:00:00Z") is condition
    with pytest.raises(TypeError):
        condition["status"] = "False"
    with pytest.raises(TypeError):
        condition.update(status="False")
    status = {"conditions": [condition]}
    copied = deep_copy(status)
    set_condition(copied, {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastProbeTime": None,
                           "lastTransitionTime": "2026-01-01T00:01:00Z"})
    assert status["conditions"][0]["status"] == "True" and copied["conditions"][0]["status"] == "False"
    for plain in (dict(condition), {**condition}, copy.deepcopy(condition), pickle.loads(pickle.dumps(condition))):
        assert type(plain) is dict and plain == condition
        plain["status"] = "False"


@pytest.mark.parametrize("dump", [json.dumps, yaml.safe_dump, yaml.dump,
                                  lambda v: yaml.dump(v, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper))])
def test_a_shared_value_serialises_as_a_map(dump: Any) -> None:
    value = {"conditions": [Shared(type="Ready", status="True")]}
    text = dump(value)
    assert (json.loads(text) if dump is json.dumps else yaml.safe_load(text)) == value
