from kubesched.api.resources import (
    DEFAULT_MEMORY_REQUEST,
    incoming_pod_non_zero_requests,
    pod_non_zero_requests,
    pod_requests,
    pod_requests_and_non_zero,
)

MI = 2**20
GI = 2**30


def c(requests=None, limits=None, sidecar=False):
    resources = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    container = {"name": "c", "resources": resources}
    if sidecar:
        container["restartPolicy"] = "Always"
    return container


def spec(*containers, init=(), **extra):
    return {"containers": list(containers), "initContainers": list(init), **extra}


def test_regular_containers_sum():
    s = spec(c({"cpu": "100m", "memory": "128Mi"}), c({"cpu": "200m", "memory": "256Mi"}))
    assert pod_requests(s) == {"cpu": 300, "memory": 384 * MI}


def test_init_container_larger_than_regular():
    s = spec(c({"cpu": "500m", "memory": "256Mi"}), init=[c({"cpu": "2", "memory": "64Mi"})])
    assert pod_requests(s) == {"cpu": 2000, "memory": 256 * MI}


def test_sidecar_before_init_container_runs_alongside_it():
    # Docs example shape: the sidecar keeps running while the later init container and the app run.
    s = spec(c({"cpu": "1"}), init=[c({"cpu": "500m"}, sidecar=True), c({"cpu": "1"})])
    assert pod_requests(s) == {"cpu": 1500}
    s = spec(c({"cpu": "1"}), init=[c({"cpu": "500m"}, sidecar=True), c({"cpu": "2"})])
    assert pod_requests(s) == {"cpu": 2500}


def test_init_container_before_sidecar_does_not_overlap_it():
    s = spec(c({"cpu": "1"}), init=[c({"cpu": "2"}), c({"cpu": "500m"}, sidecar=True)])
    assert pod_requests(s) == {"cpu": 2000}


def test_multiple_sidecars_accumulate():
    s = spec(
        c({"cpu": "1"}),
        init=[c({"cpu": "1"}, sidecar=True), c({"cpu": "2"}, sidecar=True), c({"cpu": "3"})],
    )
    assert pod_requests(s) == {"cpu": 6000}  # 1 + 2 sidecars + 3 for the init container
    s = spec(c({"cpu": "4"}), init=[c({"cpu": "1"}, sidecar=True), c({"cpu": "2"})])
    assert pod_requests(s) == {"cpu": 5000}  # the app (4) plus the sidecar (1) dominate


def test_overhead_is_added():
    s = spec(c({"cpu": "100m", "memory": "128Mi"}), overhead={"cpu": "250m", "memory": "120Mi"})
    assert pod_requests(s) == {"cpu": 350, "memory": 248 * MI}
    assert pod_requests(spec(c(), overhead={"cpu": "10m"})) == {"cpu": 10}


def test_extended_resources_and_hugepages():
    s = spec(
        c({"nvidia.com/gpu": "1", "hugepages-2Mi": "4Mi"}),
        c({"nvidia.com/gpu": 1, "ephemeral-storage": "1G"}),
        init=[c({"nvidia.com/gpu": "1"})],
    )
    assert pod_requests(s) == {"nvidia.com/gpu": 2, "hugepages-2Mi": 4 * MI, "ephemeral-storage": 10**9}


def test_limits_default_requests_and_zeros_are_omitted():
    s = spec(c(limits={"cpu": "2", "memory": "1Gi"}), c({"cpu": "0", "memory": "1Gi"}, {"memory": "2Gi"}))
    assert pod_requests(s) == {"cpu": 2000, "memory": 2 * GI}
    assert pod_requests(spec(c({"cpu": "0"}))) == {}
    assert pod_requests({}) == {}


def test_amounts_are_milli_rounded_then_summed():
    # Each stored quantity is rounded up to milli precision, the total is then rounded once.
    s = spec(c({"cpu": "0.1m", "memory": "1m"}), c({"cpu": "0.1m", "memory": "1m"}))
    assert pod_requests(s) == {"cpu": 2, "memory": 1}


def test_ephemeral_containers_are_ignored():
    s = spec(c({"cpu": "1"}), ephemeralContainers=[c({"cpu": "5"})])
    assert pod_requests(s) == {"cpu": 1000}


def test_pod_level_requests_override_cpu_memory_only():
    s = spec(
        c({"cpu": "500m", "nvidia.com/gpu": "1"}),
        resources={"requests": {"cpu": "2", "memory": "1Gi"}},
        overhead={"cpu": "100m"},
    )
    assert pod_requests(s) == {"cpu": 2100, "memory": GI, "nvidia.com/gpu": 1}


def test_pod_level_limits_default_requests():
    # No container requests: pod-level requests default to the pod-level limits.
    s = spec(c(), resources={"limits": {"cpu": "2", "memory": "1Gi"}})
    assert pod_requests(s) == {"cpu": 2000, "memory": GI}
    # Containers' aggregate wins where they do request the resource.
    s = spec(c({"cpu": "500m"}), c({"cpu": "250m"}), resources={"limits": {"cpu": "2", "memory": "1Gi"}})
    assert pod_requests(s) == {"cpu": 750, "memory": GI}


def test_non_zero_defaults_for_missing_requests():
    assert pod_non_zero_requests(spec(c())) == (100, DEFAULT_MEMORY_REQUEST)
    assert pod_non_zero_requests(spec(c(), c())) == (200, 2 * DEFAULT_MEMORY_REQUEST)
    assert pod_non_zero_requests(spec(c({"cpu": "0", "memory": "0"}))) == (0, 0)
    assert pod_non_zero_requests(spec(c({"cpu": "250m"}))) == (250, DEFAULT_MEMORY_REQUEST)
    assert pod_non_zero_requests(spec(c({"nvidia.com/gpu": "1"}))) == (100, DEFAULT_MEMORY_REQUEST)
    assert pod_non_zero_requests({}) == (0, 0)


def test_non_zero_defaults_apply_to_init_containers_and_sidecars():
    app = c({"cpu": "50m", "memory": "50Mi"})
    assert pod_non_zero_requests(spec(app, init=[c()])) == (100, DEFAULT_MEMORY_REQUEST)
    assert pod_non_zero_requests(spec(app, init=[c(sidecar=True)])) == (150, 50 * MI + DEFAULT_MEMORY_REQUEST)


def test_non_zero_adds_overhead():
    s = spec(c(), overhead={"cpu": "250m", "memory": "64Mi"})
    assert pod_non_zero_requests(s) == (350, DEFAULT_MEMORY_REQUEST + 64 * MI)


def test_non_zero_with_pod_level_requests():
    s = spec(c(), resources={"requests": {"cpu": "1"}})
    assert pod_non_zero_requests(s) == (1000, DEFAULT_MEMORY_REQUEST)
    # Some container mentions cpu, so NodeInfo applies no cpu default to the others...
    s = spec(c({"cpu": "200m"}), c(), resources={"requests": {"memory": "1Gi"}})
    assert pod_non_zero_requests(s) == (200, GI)
    # ...while NodeResourcesFit's scorer defaults every container's missing requests and, as in
    # v1.35, never applies the pod-level ones to the pod being placed.
    assert incoming_pod_non_zero_requests(s) == (300, 2 * DEFAULT_MEMORY_REQUEST)
    assert incoming_pod_non_zero_requests(spec(c(), c({"cpu": "0"}))) == (100, 2 * DEFAULT_MEMORY_REQUEST)
    s = spec(c({"cpu": "2", "memory": "512Mi"}), resources={"requests": {"cpu": "1", "memory": "1Gi"}},
             overhead={"cpu": "250m", "memory": "64Mi"})
    assert incoming_pod_non_zero_requests(s) == (2250, 576 * MI)
    assert pod_non_zero_requests(s) == (1250, GI + 64 * MI)


def test_pod_requests_without_pod_level():
    # SkipPodLevelResources: the containers' aggregate plus overhead, what Fit's scorer reads.
    s = spec(c({"cpu": "500m", "hugepages-2Mi": "4Mi"}), resources={"requests": {"cpu": "2", "hugepages-2Mi": "8Mi"}},
             overhead={"cpu": "100m"})
    assert pod_requests(s) == {"cpu": 2100, "hugepages-2Mi": 8 * MI}
    assert pod_requests(s, pod_level=False) == {"cpu": 600, "hugepages-2Mi": 4 * MI}


def test_requests_and_non_zero_together_agree_with_each_alone():
    # What the scheduler reads once per pod must be what the two readings give apart, whether or
    # not a default applies (a container without cpu or memory, init containers, sidecars,
    # overhead, pod-level requests).
    shapes = [
        spec(c({"cpu": "100m", "memory": "500Mi"})),
        spec(c({"cpu": "100m", "memory": "500Mi"}), c({"cpu": "0", "memory": "0"})),
        spec(c({"cpu": "250m"})),
        spec(c(), c({"memory": "1Gi"})),
        spec(c({"cpu": "1", "memory": "1Gi"}), init=[c({"cpu": "2", "memory": "64Mi"})]),
        spec(c({"cpu": "1", "memory": "1Gi"}), init=[c({"cpu": "50m"}, sidecar=True)]),
        spec(c({"cpu": "1", "memory": "1Gi"}), overhead={"cpu": "250m", "memory": "64Mi"}),
        spec(c(limits={"cpu": "1", "memory": "1Gi"})),
        spec(c({"cpu": "200m"}), c(), resources={"requests": {"memory": "1Gi"}}),
        spec(c({"cpu": "1.5", "memory": "1.5"}), c({"cpu": "1.5", "memory": "1.5"})),
        {},
    ]
    for s in shapes:
        assert pod_requests_and_non_zero(s) == (pod_requests(s), *pod_non_zero_requests(s)), s
