"""LimitRange and ResourceQuota validation, worded as pkg/apis/core/validation words it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesched.api.errors import InputError
from kubesched.api.loader import load_paths
from kubesched.api.validation.objects import validate


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def check(text: str) -> list[str]:
    Path("in.yaml").write_text(text)
    try:
        validate(load_paths(["in.yaml"]))
    except InputError as e:
        return str(e).splitlines()
    return []


def test_a_valid_limit_range_and_quota() -> None:
    assert check("""\
apiVersion: v1
kind: LimitRange
metadata: {name: lr}
spec:
  limits:
  - {type: Container, min: {cpu: 100m}, defaultRequest: {cpu: 200m}, default: {cpu: "1"}, max: {cpu: "2"},
     maxLimitRequestRatio: {cpu: "10"}}
  - {type: Pod, max: {memory: 4Gi, hugepages-2Mi: 1Gi}}
  - {type: PersistentVolumeClaim, max: {storage: 10Gi}}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: q}
spec:
  hard: {pods: "10", requests.cpu: "4", count/deployments.apps: "2", requests.nvidia.com/gpu: "1",
         gold.storageclass.storage.k8s.io/requests.storage: 1Ti}
  scopeSelector: {matchExpressions: [{scopeName: PriorityClass, operator: In, values: [high]}]}
""") == []


def test_limit_range_problems() -> None:
    assert check("""\
apiVersion: v1
kind: LimitRange
metadata: {name: lr}
spec:
  limits:
  - {type: Container, min: {cpu: "2"}, max: {cpu: "1", gpu: "1"}, defaultRequest: {cpu: 3}, default: {memory: 1Gi}}
  - {type: Container, maxLimitRequestRatio: {memory: 500m}}
  - {type: Pod, default: {cpu: "1"}}
  - {type: PersistentVolumeClaim, max: {cpu: "1"}}
  - {type: Node}
  - {type: Container, min: {cpu: 100m}, max: {cpu: 200m}, maxLimitRequestRatio: {cpu: "3"},
     default: {example.com/fpga: "2"}, defaultRequest: {example.com/fpga: "1"}}
""") == [
        'in.yaml doc 1: spec.limits[0].max.gpu: Invalid value: "gpu": must be a standard resource type or fully '
        "qualified",
        'in.yaml doc 1: spec.limits[0].min.cpu: Invalid value: "2": min value 2 is greater than max value 1',
        'in.yaml doc 1: spec.limits[0].defaultRequest.cpu: Invalid value: "3": default request value 3 is greater '
        "than max value 1",
        'in.yaml doc 1: spec.limits[1].type: Duplicate value: "Container"',
        'in.yaml doc 1: spec.limits[1].maxLimitRequestRatio.memory: Invalid value: "500m": ratio 500m is less than 1',
        "in.yaml doc 1: spec.limits[2].default: Forbidden: may not be specified when `type` is 'Pod'",
        "in.yaml doc 1: spec.limits[3].limits: Required value: either minimum or maximum storage value is required, "
        "but neither was provided",
        'in.yaml doc 1: spec.limits[4].type: Invalid value: "Node": must be a standard limit type or fully qualified',
        'in.yaml doc 1: spec.limits[5].type: Duplicate value: "Container"',
        'in.yaml doc 1: spec.limits[5].maxLimitRequestRatio.cpu: Invalid value: "3": ratio 3 is greater than '
        "max/min = 2.000000",
        'in.yaml doc 1: spec.limits[5].defaultRequest.example.com/fpga: Invalid value: "1": default value 2 must '
        "equal to defaultRequest value 1 in example.com/fpga",
    ]


def test_resource_quota_problems() -> None:
    assert check("""\
apiVersion: v1
kind: ResourceQuota
metadata: {name: q}
spec:
  hard: {pods: 1500m, widgets: "1", requests.cpu: "-1", services: "2"}
  scopes: [BestEffort, NotBestEffort, Sometimes]
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: r}
spec:
  hard: {pods: "1"}
  scopeSelector:
    matchExpressions:
    - {scopeName: Terminating, operator: In, values: [x]}
    - {scopeName: PriorityClass, operator: Exists, values: [high]}
    - {scopeName: PriorityClass, operator: Is}
""") == [
        'in.yaml doc 1: spec.hard.pods: Invalid value: "1500m": must be an integer',
        'in.yaml doc 1: spec.hard.widgets: Invalid value: "widgets": must be a standard resource for quota',
        'in.yaml doc 1: spec.hard.requests.cpu: Invalid value: "-1": must be greater than or equal to 0',
        'in.yaml doc 1: spec.scopes: Invalid value: ["BestEffort","NotBestEffort","Sometimes"]: unsupported scope '
        "applied to resource",
        'in.yaml doc 1: spec.scopes: Invalid value: ["BestEffort","NotBestEffort","Sometimes"]: unsupported scope',
        'in.yaml doc 1: spec.scopes: Invalid value: ["BestEffort","NotBestEffort","Sometimes"]: conflicting scopes',
        "in.yaml doc 2: spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exist' when "
        "scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, "
        "ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or "
        "ResourceQuotaScopeCrossNamespacePodAffinity",
        "in.yaml doc 2: spec.scopeSelector.matchExpressions.values: Invalid value: [\"high\"]: must be no value when "
        "`operator` is 'Exist' or 'DoesNotExist' for scope selector",
        'in.yaml doc 2: spec.scopeSelector.matchExpressions.operator: Invalid value: "Is": not a valid selector '
        "operator",
    ]
