import pytest

from kubesched.api.qos import BEST_EFFORT, BURSTABLE, GUARANTEED, qos_class


def c(requests=None, limits=None, **extra):
    resources = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "resources": resources, **extra}


def pod(*containers, init=(), resources=None):
    spec = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    if resources is not None:
        spec["resources"] = resources
    return {"spec": spec}


FULL = {"cpu": "1", "memory": "1Gi"}


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (pod(c()), BEST_EFFORT),
        (pod(), BEST_EFFORT),
        ({}, BEST_EFFORT),
        (pod(c(requests={"cpu": "0", "memory": "0"})), BEST_EFFORT),
        (pod(c(requests={"nvidia.com/gpu": "1"}, limits={"nvidia.com/gpu": "1"})), BEST_EFFORT),
        (pod(c(requests=FULL, limits=FULL)), GUARANTEED),
        (pod(c(requests={"cpu": "1000m", "memory": "1024Mi"}, limits=FULL)), GUARANTEED),
        (pod(c(requests=FULL, limits=FULL), c(requests=FULL, limits=FULL)), GUARANTEED),
        # Limits without requests: the API server defaults requests to limits.
        (pod(c(limits=FULL)), GUARANTEED),
        (pod(c(limits={"cpu": "1"})), BURSTABLE),
        (pod(c(requests={"cpu": "500m"}, limits=FULL)), BURSTABLE),
        (pod(c(requests={"memory": "1Gi"})), BURSTABLE),
        (pod(c(requests={"cpu": "1"}, limits={"cpu": "1"})), BURSTABLE),
        (pod(c(requests=FULL, limits=FULL), c()), BURSTABLE),
        (
            pod(c(requests={**FULL, "nvidia.com/gpu": "1"}, limits={**FULL, "nvidia.com/gpu": "2"})),
            GUARANTEED,
        ),
    ],
)
def test_container_level(manifest, expected):
    assert qos_class(manifest) == expected


def test_init_containers_count():
    guaranteed = c(requests=FULL, limits=FULL)
    assert qos_class(pod(guaranteed, init=[c()])) == BURSTABLE
    assert qos_class(pod(c(), init=[guaranteed])) == BURSTABLE
    assert qos_class(pod(guaranteed, init=[c(limits={"cpu": "2", "memory": "2Gi"})])) == GUARANTEED
    assert qos_class(pod(guaranteed, init=[c(requests={"cpu": "500m"}, limits=FULL)])) == BURSTABLE
    # A missing memory request is defaulted from the limit.
    assert qos_class(pod(guaranteed, init=[c(requests={"cpu": "1"}, limits=FULL)])) == GUARANTEED
    assert qos_class(pod(c(), init=[c()])) == BEST_EFFORT


def test_status_is_ignored():
    manifest = pod(c(requests=FULL, limits=FULL))
    manifest["status"] = {"qosClass": "BestEffort"}
    assert qos_class(manifest) == GUARANTEED


def test_pod_level_resources_decide_alone():
    # Pod-level limits only: requests default to them, so the pod is Guaranteed.
    assert qos_class(pod(c(), resources={"limits": FULL})) == GUARANTEED
    assert qos_class(pod(c(), c(), resources={"requests": FULL, "limits": FULL})) == GUARANTEED
    # Pod-level requests default from the containers' aggregate when they request something.
    assert qos_class(pod(c(requests={"cpu": "500m"}), resources={"limits": FULL})) == BURSTABLE
    assert qos_class(pod(c(requests=FULL, limits=FULL), resources={"requests": FULL})) == BURSTABLE
    assert qos_class(pod(c(requests=FULL, limits=FULL), resources={})) == BEST_EFFORT
    assert qos_class(pod(c(requests=FULL, limits=FULL), resources={"limits": {"cpu": "1"}})) == BURSTABLE
