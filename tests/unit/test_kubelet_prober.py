"""When a simulated container is started and Ready: probe timing, the annotations that make
probes fail, and what the kubelet then reports on the pod."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.errors import InputError
from kubesched.api.loader import LoadedObject
from kubesched.api.objects import get_condition
from kubesched.cluster.cluster import Cluster
from kubesched.input.validation import validate
from kubesched.kubelet.prober import Probe, Timeline, timeline, timelines


def probe(**fields: int) -> dict[str, Any]:
    return {"httpGet": {"path": "/healthz", "port": 8080}, **fields}


def test_api_defaults_fill_the_zero_fields() -> None:
    assert Probe.of(probe()) == Probe(initial_delay=0, period=10, success_threshold=1, failure_threshold=3)
    assert Probe.of(probe(periodSeconds=0, successThreshold=0, failureThreshold=0)) == Probe(0, 10, 1, 3)


def test_without_probes_a_container_is_started_and_ready_at_once() -> None:
    assert timeline({"name": "c"}, False, None) == Timeline(0, 0, None)


def test_a_pods_timelines_are_its_containers_whatever_it_says() -> None:
    # Probed and unprobed containers, with and without the annotations that make probes fail.
    containers = [{"name": "plain"}, {"name": "probed", "readinessProbe": probe(initialDelaySeconds=5)},
                  {"name": "slow", "startupProbe": probe(initialDelaySeconds=3)}]
    for said in ({}, {"sim.kubesched.io/never-ready": "plain"},
                 {"sim.kubesched.io/probe-fails-after": "probed=1m"}):
        pod = {"metadata": {"name": "p", "annotations": said}, "spec": {"containers": containers}}
        stuck = said.get("sim.kubesched.io/never-ready", "").split(",")
        fails = {"probed": 60.0} if "sim.kubesched.io/probe-fails-after" in said else {}
        assert timelines(pod) == {c["name"]: timeline(c, c["name"] in stuck, fails.get(c["name"]))
                                  for c in containers}


def test_readiness_after_the_initial_delay_and_enough_successes() -> None:
    c = {"name": "c", "readinessProbe": probe(initialDelaySeconds=10, periodSeconds=5, successThreshold=3)}
    assert timeline(c, False, None) == Timeline(0, 20, None)  # probes at 10, 15, 20


def test_readiness_probing_waits_for_the_startup_probe() -> None:
    c = {"name": "c", "startupProbe": probe(initialDelaySeconds=30, periodSeconds=10),
         "readinessProbe": probe(initialDelaySeconds=5, periodSeconds=10)}
    # Started at 30 s; the readiness probe runs at once then (its own delay is long over).
    assert timeline(c, False, None) == Timeline(30, 30, None)
    c["readinessProbe"]["initialDelaySeconds"] = 45
    assert timeline(c, False, None) == Timeline(30, 45, None)


def test_a_failing_probe_turns_ready_off_after_failure_threshold_periods() -> None:
    c = {"name": "c", "readinessProbe": probe(periodSeconds=10, failureThreshold=3)}
    # Probes at 0, 10, 20, ...: the first failing one at 30 s, the third at 50 s.
    assert timeline(c, False, 25) == Timeline(0, 0, 50)
    assert timeline(c, False, 30) == Timeline(0, 0, 50)
    assert timeline(c, True, None) == Timeline(0, None, None)


def test_a_probe_failing_before_enough_successes_never_reports_ready() -> None:
    c = {"name": "c", "readinessProbe": probe(initialDelaySeconds=5, periodSeconds=5, successThreshold=3)}
    assert timeline(c, False, 10) == Timeline(0, None, None)


@given(delay=st.integers(0, 300), period=st.integers(1, 60), success=st.integers(1, 5),
       failure=st.integers(1, 5), fails_after=st.none() | st.integers(0, 1000), startup=st.none() | st.integers(0, 120))
def test_ready_only_while_started_and_only_at_probe_times(delay: int, period: int, success: int, failure: int,
                                                           fails_after: int | None, startup: int | None) -> None:
    c: dict[str, Any] = {"name": "c", "readinessProbe": probe(initialDelaySeconds=delay, periodSeconds=period,
                                                              successThreshold=success, failureThreshold=failure)}
    if startup is not None:
        c["startupProbe"] = probe(initialDelaySeconds=startup)
    line = timeline(c, False, fails_after)
    assert line.started == (startup or 0)
    if line.ready is not None:
        assert line.ready >= max(delay, line.started)
        assert line.ready - max(delay, line.started) == (success - 1) * period
        for t in (line.ready - 0.5, line.ready, line.ready + 0.5):
            started, ready = line.state(t)
            assert not ready or started
    if line.unready is not None:
        assert fails_after is not None and line.ready is not None
        assert line.unready >= fails_after + (failure - 1) * period
        assert (line.unready - line.ready) % period == 0
        assert line.state(line.unready) == (True, False)


def test_sidecars_are_probed_and_plain_init_containers_are_not() -> None:
    pod = {"metadata": {"name": "p", "annotations": {"sim.kubesched.io/never-ready": "proxy"}},
           "spec": {"initContainers": [{"name": "setup"}, {"name": "proxy", "restartPolicy": "Always"}],
                    "containers": [{"name": "app"}]}}
    assert timelines(pod) == {"proxy": Timeline(0, None, None), "app": Timeline(0, 0, None)}


# ---- the simulated kubelet ------------------------------------------------------------------------

def cluster(*objs: dict[str, Any]) -> Cluster:
    c = Cluster()
    c.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
              "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    for obj in objs:
        assert c.create(obj) is not None
    return c


def a_pod(name: str, containers: list[dict[str, Any]], annotations: dict[str, str] | None = None,
          **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
            "spec": {"containers": containers, **spec}}


def reported(c: Cluster, name: str) -> tuple[str, str, dict[str, tuple[bool, bool]]]:
    """(Ready, ContainersReady, {container: (started, ready)}) as the pod's status says."""
    pod = c.api.get("Pod", "default", name)
    status = pod["status"]
    containers = {cs["name"]: (cs["started"], cs["ready"])
                  for cs in (*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ()))}
    return get_condition(pod, "Ready")["status"], get_condition(pod, "ContainersReady")["status"], containers


def test_the_pod_is_ready_when_every_container_is() -> None:
    c = cluster(a_pod("p", [{"name": "app", "image": "app", "startupProbe": probe(initialDelaySeconds=20)},
                            {"name": "log", "image": "log", "readinessProbe": probe(initialDelaySeconds=5)}],
                      initContainers=[{"name": "proxy", "image": "envoy", "restartPolicy": "Always",
                                       "readinessProbe": probe(initialDelaySeconds=8)}]))
    c.run(until=1)
    assert reported(c, "p") == ("False", "False", {"proxy": (True, False), "app": (False, False),
                                                   "log": (True, False)})
    cond = get_condition(c.api.get("Pod", "default", "p"), "Ready")
    assert cond["reason"] == "ContainersNotReady"
    assert cond["message"] == "containers with unready status: [proxy app log]"
    c.run(until=8)
    assert reported(c, "p") == ("False", "False", {"proxy": (True, True), "app": (False, False), "log": (True, True)})
    c.run(until=20)
    assert reported(c, "p") == ("True", "True", {"proxy": (True, True), "app": (True, True), "log": (True, True)})
    assert get_condition(c.api.get("Pod", "default", "p"), "Ready")["lastTransitionTime"] == c.api.timestamp(20)


def test_a_restarted_container_is_probed_again() -> None:
    c = cluster(a_pod("p", [{"name": "app", "image": "app", "readinessProbe": probe(initialDelaySeconds=10)}],
                      {"sim.kubesched.io/duration": "1m", "sim.kubesched.io/exit-code": "1"}))
    c.run(until=59)
    assert reported(c, "p")[0] == "True"
    c.run(until=60)  # exits with 1 under restartPolicy Always: restarted, not ready until probed
    assert reported(c, "p") == ("False", "False", {"app": (True, False)})
    c.run(until=70)
    assert reported(c, "p") == ("True", "True", {"app": (True, True)})


def test_a_snapshot_keeps_the_readiness_it_reports_and_a_bound_pod_without_status_gets_its_probes() -> None:
    exported = a_pod("exported", [{"name": "app", "image": "app", "readinessProbe": probe(initialDelaySeconds=600)}],
                     nodeName="n1")
    exported["status"] = {"phase": "Running", "startTime": "2024-01-01T00:00:00Z", "conditions": [
        {"type": t, "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}
        for t in ("PodScheduled", "Initialized", "Ready", "ContainersReady")]}
    bound = a_pod("bound", [{"name": "app", "image": "app", "readinessProbe": probe(initialDelaySeconds=30)}],
                  nodeName="n1")
    c = cluster(exported, bound)
    c.run(until=1)
    assert get_condition(c.api.get("Pod", "default", "exported"), "Ready")["status"] == "True"
    assert reported(c, "bound") == ("False", "False", {"app": (True, False)})
    c.run(until=30)
    assert reported(c, "bound") == ("True", "True", {"app": (True, True)})


def test_probe_annotations_are_validated() -> None:
    pod = a_pod("p", [{"name": "app", "image": "app", "readinessProbe": probe()}, {"name": "log", "image": "log"}],
                {"sim.kubesched.io/never-ready": "app,ghost",
                 "sim.kubesched.io/probe-fails-after": "app=5m,log=1m,app=soon,=3s"})
    pod["spec"]["containers"][0]["startupProbe"] = probe(successThreshold=2, periodSeconds=-1)
    try:
        validate([LoadedObject(pod, "p.yaml", 1)])
    except InputError as e:
        problems = [str(p) for p in e.problems]
    else:
        raise AssertionError("bad probe annotations were accepted")
    prefix = "p.yaml doc 1: metadata.annotations.sim.kubesched.io/"
    assert f'{prefix}never-ready: Invalid value: "app,ghost": no container or sidecar "ghost" in the pod' in problems
    fails = f'{prefix}probe-fails-after: Invalid value: "app=5m,log=1m,app=soon,=3s": '
    assert fails + 'container "log" has no readinessProbe' in problems
    assert fails + '"soon" is not a duration' in problems
    assert fails + '"=3s" must be <container>=<duration>' in problems
    assert fails + 'container "app" is given twice' not in problems  # the second one was not a duration
    assert "p.yaml doc 1: spec.containers[0].startupProbe.successThreshold: Invalid value: 2: must be 1" in problems
    assert "p.yaml doc 1: spec.containers[0].startupProbe.periodSeconds: Invalid value: -1: " \
           "must be greater than or equal to 0" in problems


def test_probe_annotations_in_a_template_name_its_containers() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                      "metadata": {"labels": {"app": "web"},
                                   "annotations": {"sim.kubesched.io/probe-fails-after": "web=10m"}},
                      "spec": {"containers": [{"name": "web", "image": "nginx", "readinessProbe": probe()}]}}}}
    validate([LoadedObject(deployment, "d.yaml", 1)])
