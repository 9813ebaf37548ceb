"""The Table `kubectl get` prints: columns, wide columns and cells as kube-apiserver v1.35 sends them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubesched.server.tables import human_duration, to_table

NOW = datetime(2025, 6, 30, 12, 0, 0, tzinfo=UTC)


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def headers(kind: str, wide: bool = False) -> list[str]:
    """What kubectl prints as the header line: upper-cased names, priority 1 only with -o wide."""
    cols = to_table(kind, [], NOW)["columnDefinitions"]
    return [c["name"].upper() for c in cols if wide or c["priority"] == 0]


def row(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    table = to_table(kind, [obj], NOW)
    names = [c["name"].upper() for c in table["columnDefinitions"]]
    cells = table["rows"][0]["cells"]
    assert len(cells) == len(names)
    return dict(zip(names, cells, strict=True))


# --- HumanDuration -----------------------------------------------------------------------------------

S = 10**9


@pytest.mark.parametrize(("nanos", "text"), [
    (-3 * S, "<invalid>"),
    (-2 * S, "<invalid>"),
    (-S * 3 // 2, "0s"),  # up to 1.99s in the future reads as now (clock skew)
    (-S, "0s"),
    (0, "0s"),
    (S // 2, "0s"),
    (45 * S, "45s"),
    (119 * S, "119s"),
    (120 * S, "2m"),
    (150 * S, "2m30s"),
    (599 * S, "9m59s"),
    (600 * S, "10m"),
    (179 * 60 * S, "179m"),
    (3 * 3600 * S, "3h"),
    (3 * 3600 * S + 5 * 60 * S + 59 * S, "3h5m"),
    (8 * 3600 * S - 1, "7h59m"),
    (8 * 3600 * S, "8h"),
    (47 * 3600 * S, "47h"),
    (48 * 3600 * S, "2d"),
    (51 * 3600 * S, "2d3h"),
    (191 * 3600 * S, "7d23h"),
    (8 * 86400 * S, "8d"),
    (729 * 86400 * S, "729d"),
    (730 * 86400 * S, "2y"),
    (740 * 86400 * S, "2y10d"),
    (4 * 365 * 86400 * S, "4y"),
    (8 * 365 * 86400 * S + 100 * 86400 * S, "8y"),
])
def test_human_duration(nanos: int, text: str) -> None:
    assert human_duration(nanos) == text


def test_age_counts_from_the_servers_now_not_the_wall_clock() -> None:
    ns = {"metadata": {"name": "team-a", "creationTimestamp": "2025-06-30T11:55:00Z"}, "status": {"phase": "Active"}}
    assert row("Namespace", ns)["AGE"] == "5m"
    later = to_table("Namespace", [ns], NOW + timedelta(days=3, hours=2))
    assert later["rows"][0]["cells"][2] == "3d2h"
    assert row("Namespace", {"metadata": {"name": "x"}})["AGE"] == "<unknown>"


# --- pods --------------------------------------------------------------------------------------------


def pod(name: str = "web-7d9f8-x2kq4", *, phase: str = "Running", containers: int = 1, **status: Any) -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": ago(hours=3)},
        "spec": {"nodeName": "node-a", "containers": [{"name": f"c{i}", "image": "nginx"} for i in range(containers)]},
        "status": {"phase": phase, **status},
    }


def running(name: str = "c0", restarts: int = 0, ready: bool = True, **extra: Any) -> dict:
    return {"name": name, "ready": ready, "started": True, "restartCount": restarts,
            "state": {"running": {"startedAt": ago(hours=3)}}, **extra}


def test_pod_columns_and_wide_columns() -> None:
    assert headers("Pod") == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert headers("Pod", wide=True) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                                         "NOMINATED NODE", "READINESS GATES"]


def test_running_pod_with_restarts() -> None:
    p = pod(containers=2, podIP="10.244.1.7", podIPs=[{"ip": "10.244.1.7"}],
            conditions=[{"type": "Ready", "status": "True"}],
            containerStatuses=[
                running("c0", restarts=2, lastState={"terminated": {"exitCode": 1, "reason": "Error",
                                                                   "finishedAt": ago(minutes=5, seconds=20)}}),
                running("c1"),
            ])
    assert row("Pod", p) == {"NAME": "web-7d9f8-x2kq4", "READY": "2/2", "STATUS": "Running",
                             "RESTARTS": "2 (5m20s ago)", "AGE": "3h", "IP": "10.244.1.7", "NODE": "node-a",
                             "NOMINATED NODE": "<none>", "READINESS GATES": "<none>"}


def test_restarts_without_a_last_termination_time_are_a_bare_count() -> None:
    assert row("Pod", pod(containerStatuses=[running(restarts=3)]))["RESTARTS"] == "3"


def test_pending_pod_not_yet_scheduled_shows_its_nominated_node() -> None:
    p = pod("big-0", phase="Pending", nominatedNodeName="node-b",
            conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}])
    p["spec"].pop("nodeName")
    r = row("Pod", p)
    assert (r["READY"], r["STATUS"], r["RESTARTS"]) == ("0/1", "Pending", "0")
    assert (r["IP"], r["NODE"], r["NOMINATED NODE"]) == ("<none>", "<none>", "node-b")


def test_pod_with_no_status_reads_as_pending() -> None:
    p = pod()
    del p["status"]
    assert row("Pod", p)["STATUS"] == "Pending"


def test_container_creating_and_crash_loop() -> None:
    waiting = {"name": "c0", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}
    assert row("Pod", pod(phase="Pending", containerStatuses=[waiting]))["STATUS"] == "ContainerCreating"
    crash = {"name": "c0", "ready": False, "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
             "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(seconds=40)}}}
    r = row("Pod", pod(containerStatuses=[crash]))
    assert (r["READY"], r["STATUS"], r["RESTARTS"]) == ("0/1", "CrashLoopBackOff", "4 (40s ago)")


def test_oom_killed_and_exit_codes() -> None:
    oom = {"name": "c0", "ready": False, "restartCount": 1,
           "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": ago(seconds=5)}}}
    assert row("Pod", pod(containerStatuses=[oom]))["STATUS"] == "OOMKilled"
    code = {"name": "c0", "ready": False, "state": {"terminated": {"exitCode": 3}}}
    assert row("Pod", pod(containerStatuses=[code]))["STATUS"] == "ExitCode:3"
    signal = {"name": "c0", "ready": False, "state": {"terminated": {"exitCode": 0, "signal": 9}}}
    assert row("Pod", pod(containerStatuses=[signal]))["STATUS"] == "Signal:9"


def test_the_first_container_with_a_reason_decides_the_status() -> None:
    statuses = [{"name": "c0", "ready": False, "state": {"waiting": {"reason": "ImagePullBackOff"}}},
                {"name": "c1", "ready": False, "state": {"waiting": {"reason": "ErrImagePull"}}}]
    assert row("Pod", pod(containers=2, containerStatuses=statuses))["STATUS"] == "ImagePullBackOff"


def test_terminating_pod() -> None:
    p = pod(containerStatuses=[running()], conditions=[{"type": "Ready", "status": "True"}])
    p["metadata"]["deletionTimestamp"] = ago(seconds=10)
    assert row("Pod", p)["STATUS"] == "Terminating"


def test_pod_on_a_lost_node_being_deleted_is_unknown() -> None:
    p = pod(reason="NodeLost", containerStatuses=[running()])
    p["metadata"]["deletionTimestamp"] = ago(minutes=1)
    assert row("Pod", p)["STATUS"] == "Unknown"


def test_succeeded_pod_is_completed_and_its_row_says_so() -> None:
    done = {"name": "c0", "ready": False, "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": ago(minutes=1)}}}
    p = pod(phase="Succeeded", containerStatuses=[done])
    p["metadata"]["deletionTimestamp"] = ago(seconds=1)  # a finished pod being deleted keeps its status
    table = to_table("Pod", [p], NOW)
    assert table["rows"][0]["cells"][1:3] == ["0/1", "Completed"]
    assert table["rows"][0]["conditions"] == [{"type": "Completed", "status": "True", "reason": "Succeeded",
                                               "message": "The pod has completed successfully."}]
    assert "conditions" not in to_table("Pod", [pod(containerStatuses=[running()])], NOW)["rows"][0]


def test_evicted_pod() -> None:
    evicted = pod(phase="Failed", reason="Evicted",
                  message="The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi.")
    table = to_table("Pod", [evicted], NOW)
    assert table["rows"][0]["cells"][1:4] == ["0/1", "Evicted", "0"]
    assert table["rows"][0]["conditions"][0]["reason"] == "Failed"
    # as upstream: a container that terminated with a reason of its own shows that reason instead
    killed = {"name": "c0", "ready": False, "state": {"terminated": {"exitCode": 137, "reason": "Error"}}}
    assert row("Pod", {**evicted, "status": {**evicted["status"], "containerStatuses": [killed]}})["STATUS"] == "Error"


def test_completed_container_beside_a_running_one() -> None:
    statuses = [{"name": "c0", "ready": False, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                running("c1")]
    ready = row("Pod", pod(containers=2, containerStatuses=statuses,
                           conditions=[{"type": "Ready", "status": "True"}]))
    assert (ready["READY"], ready["STATUS"]) == ("1/2", "Running")
    assert row("Pod", pod(containers=2, containerStatuses=statuses))["STATUS"] == "NotReady"


def test_init_containers() -> None:
    p = pod(phase="Pending", initContainerStatuses=[
        {"name": "migrate", "ready": False, "restartCount": 0, "state": {"running": {}}}],
        containerStatuses=[{"name": "c0", "ready": False, "state": {"waiting": {"reason": "PodInitializing"}}}])
    p["spec"]["initContainers"] = [{"name": "migrate"}]
    assert row("Pod", p)["STATUS"] == "Init:0/1"

    p["spec"]["initContainers"] = [{"name": "fetch"}, {"name": "migrate"}]
    p["status"]["initContainerStatuses"] = [
        {"name": "fetch", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        {"name": "migrate", "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
         "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(minutes=2)}}}]
    r = row("Pod", p)
    assert (r["STATUS"], r["RESTARTS"]) == ("Init:CrashLoopBackOff", "3 (2m ago)")

    p["status"]["initContainerStatuses"][1] = {"name": "migrate", "state": {"terminated": {"exitCode": 2,
                                                                                         "reason": "Error"}}}
    assert row("Pod", p)["STATUS"] == "Init:Error"
    p["status"]["initContainerStatuses"][1] = {"name": "migrate", "state": {"terminated": {"exitCode": 2}}}
    assert row("Pod", p)["STATUS"] == "Init:ExitCode:2"


def test_sidecar_counts_as_a_container() -> None:
    p = pod(containerStatuses=[running("c0")], conditions=[{"type": "Initialized", "status": "True"},
                                                           {"type": "Ready", "status": "True"}],
            initContainerStatuses=[running("proxy", restarts=1)])
    p["spec"]["initContainers"] = [{"name": "proxy", "restartPolicy": "Always"}]
    r = row("Pod", p)
    assert (r["READY"], r["STATUS"], r["RESTARTS"]) == ("2/2", "Running", "1")


def test_scheduling_gated_pod() -> None:
    p = pod(phase="Pending", conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}])
    assert row("Pod", p)["STATUS"] == "SchedulingGated"


def test_readiness_gates_and_ip_from_pod_ip() -> None:
    p = pod(podIP="10.0.0.9", containerStatuses=[running()],
            conditions=[{"type": "Ready", "status": "True"}, {"type": "example.com/lb", "status": "True"}])
    p["spec"]["readinessGates"] = [{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}]
    r = row("Pod", p)
    assert (r["IP"], r["READINESS GATES"]) == ("10.0.0.9", "1/2")


# --- nodes -------------------------------------------------------------------------------------------


def node(name: str, ready: str | None = "True", labels: dict | None = None, **spec: Any) -> dict:
    status: dict[str, Any] = {
        "nodeInfo": {"kubeletVersion": "v1.35.0", "osImage": "Ubuntu 24.04.2 LTS", "kernelVersion": "6.8.0-1021-aws",
                     "containerRuntimeVersion": "containerd://1.7.27"},
        "addresses": [{"type": "InternalIP", "address": "10.0.1.12"}, {"type": "Hostname", "address": name}],
    }
    if ready is not None:
        status["conditions"] = [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": ready}]
    return {"apiVersion": "v1", "kind": "Node", "spec": spec, "status": status,
            "metadata": {"name": name, "creationTimestamp": ago(days=12), "labels": labels or {}}}


def test_node_columns() -> None:
    assert headers("Node") == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert headers("Node", wide=True)[5:] == ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION",
                                              "CONTAINER-RUNTIME"]


def test_node_status_and_roles() -> None:
    cp = row("Node", node("cp-1", labels={"node-role.kubernetes.io/control-plane": "",
                                          "node-role.kubernetes.io/etcd": "", "kubernetes.io/role": "master"}))
    assert cp == {"NAME": "cp-1", "STATUS": "Ready", "ROLES": "control-plane,etcd,master", "AGE": "12d",
                  "VERSION": "v1.35.0", "INTERNAL-IP": "10.0.1.12", "EXTERNAL-IP": "<none>",
                  "OS-IMAGE": "Ubuntu 24.04.2 LTS", "KERNEL-VERSION": "6.8.0-1021-aws",
                  "CONTAINER-RUNTIME": "containerd://1.7.27"}
    assert row("Node", node("w-1", ready="False"))["STATUS"] == "NotReady"
    assert row("Node", node("w-2", ready="Unknown"))["STATUS"] == "NotReady"
    assert row("Node", node("w-3", ready=None))["STATUS"] == "Unknown"
    cordoned = row("Node", node("w-4", unschedulable=True))
    assert (cordoned["STATUS"], cordoned["ROLES"]) == ("Ready,SchedulingDisabled", "<none>")
    bare = row("Node", {"metadata": {"name": "kwok-0"}})
    assert (bare["VERSION"], bare["OS-IMAGE"], bare["INTERNAL-IP"]) == ("", "<unknown>", "<none>")


# --- workloads ---------------------------------------------------------------------------------------

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}, {"name": "log", "image": "fluent-bit"}]}}


def test_deployment() -> None:
    assert headers("Deployment") == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    d = {"metadata": {"name": "web", "creationTimestamp": ago(days=2, hours=3)},
         "spec": {"replicas": 3, "template": TEMPLATE,
                  "selector": {"matchLabels": {"app": "web"},
                               "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]},
                                                    {"key": "canary", "operator": "DoesNotExist"}]}},
         "status": {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
    assert row("Deployment", d) == {"NAME": "web", "READY": "2/3", "UP-TO-DATE": 3, "AVAILABLE": 2, "AGE": "2d3h",
                                    "CONTAINERS": "app,log", "IMAGES": "nginx:1.27,fluent-bit",
                                    "SELECTOR": "app=web,!canary,tier in (a,b)"}
    fresh = row("Deployment", {"metadata": {"name": "new"}, "spec": {"template": TEMPLATE}})
    assert (fresh["READY"], fresh["UP-TO-DATE"], fresh["AVAILABLE"], fresh["SELECTOR"]) == ("0/1", 0, 0, "")


def test_replicaset_statefulset_daemonset() -> None:
    rs = {"metadata": {"name": "web-7d9f8", "creationTimestamp": ago(minutes=30)},
          "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "7d9f8"}},
                   "template": TEMPLATE},
          "status": {"replicas": 3, "readyReplicas": 1}}
    assert list(row("ReplicaSet", rs).values()) == ["web-7d9f8", 3, 3, 1, "30m", "app,log", "nginx:1.27,fluent-bit",
                                                    "app=web,pod-template-hash=7d9f8"]
    sts = {"metadata": {"name": "db", "creationTimestamp": ago(hours=5)}, "spec": {"replicas": 3, "template": TEMPLATE},
           "status": {"readyReplicas": 2}}
    assert headers("StatefulSet") == ["NAME", "READY", "AGE"]
    assert row("StatefulSet", sts)["READY"] == "2/3"
    ds = {"metadata": {"name": "kube-proxy", "creationTimestamp": ago(days=40)},
          "spec": {"selector": {"matchLabels": {"k8s-app": "kube-proxy"}},
                   "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": []}}},
          "status": {"desiredNumberScheduled": 5, "currentNumberScheduled": 5, "numberReady": 4,
                     "updatedNumberScheduled": 5, "numberAvailable": 4}}
    assert headers("DaemonSet") == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE",
                                    "NODE SELECTOR", "AGE"]
    r = row("DaemonSet", ds)
    assert list(r.values())[1:8] == [5, 5, 4, 5, 4, "kubernetes.io/os=linux", "40d"]
    assert r["SELECTOR"] == "k8s-app=kube-proxy"


def test_jobs_and_cronjobs() -> None:
    assert headers("Job") == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    done = {"metadata": {"name": "backup-29180", "creationTimestamp": ago(minutes=20)},
            "spec": {"completions": 1, "parallelism": 1, "template": TEMPLATE},
            "status": {"succeeded": 1, "startTime": ago(minutes=20), "completionTime": ago(minutes=17, seconds=30),
                       "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                                      {"type": "Complete", "status": "True"}]}}
    assert list(row("Job", done).values())[:5] == ["backup-29180", "Complete", "1/1", "2m30s", "20m"]
    work = {"metadata": {"name": "crunch", "creationTimestamp": ago(minutes=4)},
            "spec": {"parallelism": 3, "template": TEMPLATE}, "status": {"succeeded": 1, "startTime": ago(minutes=4)}}
    assert list(row("Job", work).values())[1:4] == ["Running", "1/1 of 3", "4m"]
    assert row("Job", {"metadata": {"name": "j"}, "spec": {"suspend": True}, "status": {
        "conditions": [{"type": "Suspended", "status": "True"}]}})["STATUS"] == "Suspended"

    assert headers("CronJob") == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"]
    cj = {"metadata": {"name": "backup", "creationTimestamp": ago(days=3)},
          "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": TEMPLATE}}},
          "status": {"active": [{"name": "backup-29180"}], "lastScheduleTime": ago(minutes=20)}}
    assert list(row("CronJob", cj).values())[1:7] == ["0 * * * *", "<none>", "False", 1, "20m", "3d"]


def test_pdb_columns_and_cells() -> None:
    assert headers("PodDisruptionBudget") == ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]
    pdbs = [{"metadata": {"name": "web", "creationTimestamp": ago(hours=1)},
             "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
             "status": {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3}},
            {"metadata": {"name": "db", "creationTimestamp": ago(hours=1)}, "spec": {"maxUnavailable": "34%"},
             "status": {"disruptionsAllowed": 0}},
            {"metadata": {"name": "new", "creationTimestamp": ago(seconds=3)}, "spec": {"minAvailable": "50%"}}]
    rows = [r["cells"] for r in to_table("PodDisruptionBudget", pdbs, NOW)["rows"]]
    assert rows == [["web", "2", "N/A", 1, "60m"], ["db", "N/A", "34%", 0, "60m"], ["new", "50%", "N/A", 0, "3s"]]


# --- events ------------------------------------------------------------------------------------------


def test_event_columns() -> None:
    assert headers("Event") == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert headers("Event", wide=True) == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE",
                                           "FIRST SEEN", "COUNT", "NAME"]


def test_core_event() -> None:
    ev = {"apiVersion": "v1", "kind": "Event",
          "metadata": {"name": "web-1.1845a8b0c2f1", "namespace": "default"},
          "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": "default"},
          "reason": "FailedScheduling", "type": "Warning",
          "message": "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
                     "3 No preemption victims found for incoming pod.\n",
          "source": {"component": "default-scheduler"}, "count": 4,
          "firstTimestamp": ago(minutes=12), "lastTimestamp": ago(seconds=50)}
    assert row("Event", ev) == {
        "LAST SEEN": "50s", "TYPE": "Warning", "REASON": "FailedScheduling", "OBJECT": "pod/web-1", "SUBOBJECT": "",
        "SOURCE": "default-scheduler", "MESSAGE": ev["message"].strip(), "FIRST SEEN": "12m", "COUNT": 4,
        "NAME": "web-1.1845a8b0c2f1"}
    kubelet = {**ev, "source": {"component": "kubelet", "host": "node-a"},
               "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{app}"}}
    r = row("Event", kubelet)
    assert (r["SOURCE"], r["SUBOBJECT"]) == ("kubelet, node-a", "spec.containers{app}")


def test_events_of_the_new_api() -> None:
    series = {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Node", "name": "node-a"}, "type": "Normal",
              "reason": "NodeNotReady", "message": "Node node-a status is now: NodeNotReady",
              "eventTime": ago(hours=4), "reportingComponent": "node-controller",
              "series": {"count": 7, "lastObservedTime": ago(minutes=3)}}
    r = row("Event", series)
    assert (r["LAST SEEN"], r["FIRST SEEN"], r["COUNT"], r["SOURCE"]) == ("3m", "4h", 7, "node-controller")
    single = {"metadata": {"name": "e2"}, "involvedObject": {"kind": "Pod"}, "eventTime": ago(seconds=9)}
    r = row("Event", single)
    assert (r["LAST SEEN"], r["COUNT"], r["OBJECT"]) == ("9s", 1, "pod")
    # events.k8s.io/v1 shows the same Event under other field names
    v1 = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e3"},
          "regarding": {"kind": "Pod", "name": "web-1"}, "note": "Successfully assigned default/web-1 to node-a",
          "reason": "Scheduled", "type": "Normal", "eventTime": ago(minutes=1), "reportingController": "default-scheduler",
          "reportingInstance": "default-scheduler-cp-1"}
    r = row("Event", v1)
    assert (r["OBJECT"], r["MESSAGE"], r["SOURCE"], r["LAST SEEN"]) == (
        "pod/web-1", "Successfully assigned default/web-1 to node-a", "default-scheduler, default-scheduler-cp-1", "60s")


# --- the rest of the kinds kubectl users look at -----------------------------------------------------


def test_services() -> None:
    assert headers("Service") == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    svc = {"metadata": {"name": "web", "creationTimestamp": ago(days=9)},
           "spec": {"type": "ClusterIP", "clusterIP": "10.96.12.4", "clusterIPs": ["10.96.12.4"],
                    "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
                    "selector": {"app": "web"}}}
    assert row("Service", svc) == {"NAME": "web", "TYPE": "ClusterIP", "CLUSTER-IP": "10.96.12.4",
                                   "EXTERNAL-IP": "<none>", "PORT(S)": "80/TCP,53/UDP", "AGE": "9d",
                                   "SELECTOR": "app=web"}
    lb = {"metadata": {"name": "edge"}, "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.9"],
                                                 "ports": [{"port": 443, "nodePort": 31443}]}}
    r = row("Service", lb)
    assert (r["EXTERNAL-IP"], r["PORT(S)"], r["SELECTOR"]) == ("<pending>", "443:31443/TCP", "<none>")
    lb["status"] = {"loadBalancer": {"ingress": [{"ip": "203.0.113.9"}, {"hostname": "a.example.com"}]}}
    assert row("Service", lb)["EXTERNAL-IP"] == "203.0.113.9,a.example.com"
    headless = row("Service", {"metadata": {"name": "db"}, "spec": {"clusterIP": "None", "clusterIPs": ["None"]}})
    assert (headless["TYPE"], headless["CLUSTER-IP"], headless["PORT(S)"]) == ("ClusterIP", "None", "<none>")
    ext = row("Service", {"metadata": {"name": "x"}, "spec": {"type": "ExternalName", "externalName": "db.example"}})
    assert (ext["CLUSTER-IP"], ext["EXTERNAL-IP"]) == ("<none>", "db.example")


def test_endpoints() -> None:
    ep = {"metadata": {"name": "web"}, "subsets": [
        {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 8080}, {"port": 9090}]},
        {"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}]}
    assert row("Endpoints", ep)["ENDPOINTS"] == "10.0.0.1:8080,10.0.0.2:8080,10.0.0.1:9090 + 2 more..."
    assert row("Endpoints", {"metadata": {"name": "x"}, "subsets": [ep["subsets"][1]]})["ENDPOINTS"] == "[fd00::1]:80"
    assert row("Endpoints", {"metadata": {"name": "none"}})["ENDPOINTS"] == "<none>"


def test_config_secrets_and_accounts() -> None:
    cm = {"metadata": {"name": "cfg", "creationTimestamp": ago(hours=1)}, "data": {"a": "1", "b": "2"},
          "binaryData": {"c": "AA=="}}
    assert row("ConfigMap", cm) == {"NAME": "cfg", "DATA": 3, "AGE": "60m"}
    secret = {"metadata": {"name": "tls"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}
    assert list(row("Secret", secret).values())[:3] == ["tls", "kubernetes.io/tls", 2]
    assert list(row("Secret", {"metadata": {"name": "s"}, "stringData": {"k": "v"}}).values())[:3] == ["s", "Opaque", 1]
    assert row("ServiceAccount", {"metadata": {"name": "default"}})["SECRETS"] == 0
    ns = row("Namespace", {"metadata": {"name": "kube-system"}})
    assert ns["STATUS"] == "Active"


def test_storage_kinds() -> None:
    assert headers("PersistentVolume") == ["NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM",
                                           "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"]
    pv = {"metadata": {"name": "pv-0", "creationTimestamp": ago(days=30)},
          "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                   "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "gp3",
                   "claimRef": {"namespace": "db", "name": "data-db-0"}},
          "status": {"phase": "Bound"}}
    assert list(row("PersistentVolume", pv).values()) == ["pv-0", "10Gi", "RWO,RWX", "Delete", "Bound", "db/data-db-0",
                                                          "gp3", "<unset>", "", "30d", "Filesystem"]
    pvc = {"metadata": {"name": "data-db-0", "creationTimestamp": ago(days=30)},
           "spec": {"volumeName": "pv-0", "storageClassName": "gp3", "resources": {"requests": {"storage": "8Gi"}}},
           "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"]}}
    assert list(row("PersistentVolumeClaim", pvc).values()) == ["data-db-0", "Bound", "pv-0", "10Gi", "RWO", "gp3",
                                                               "<unset>", "30d", "Filesystem"]
    pending = {"metadata": {"name": "new", "deletionTimestamp": ago(seconds=1)}, "spec": {}}
    assert list(row("PersistentVolumeClaim", pending).values())[1:5] == ["Terminating", "", "", ""]
    sc = {"metadata": {"name": "gp3", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
          "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": True}
    assert list(row("StorageClass", sc).values())[:5] == ["gp3 (default)", "ebs.csi.aws.com", "Delete",
                                                          "WaitForFirstConsumer", True]
    driver = row("CSIDriver", {"metadata": {"name": "ebs.csi.aws.com"}, "spec": {}})
    assert list(driver.values())[1:7] == [True, False, False, "<unset>", False, "Persistent"]
    csinode = {"metadata": {"name": "node-a"}, "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1"}]}}
    assert row("CSINode", csinode)["DRIVERS"] == 1
    va = {"metadata": {"name": "csi-123"}, "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "node-a",
                                                    "source": {"persistentVolumeName": "pv-0"}},
          "status": {"attached": True}}
    assert list(row("VolumeAttachment", va).values())[:5] == ["csi-123", "ebs.csi.aws.com", "pv-0", "node-a", True]


def test_scheduling_and_policy_kinds() -> None:
    assert headers("PriorityClass") == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    pc = {"metadata": {"name": "system-node-critical", "creationTimestamp": ago(days=100)}, "value": 2000001000}
    assert row("PriorityClass", pc) == {"NAME": "system-node-critical", "VALUE": 2000001000, "GLOBAL-DEFAULT": False,
                                        "AGE": "100d", "PREEMPTIONPOLICY": "PreemptLowerPriority"}
    assert row("RuntimeClass", {"metadata": {"name": "gvisor"}, "handler": "runsc"})["HANDLER"] == "runsc"
    rq = {"metadata": {"name": "compute", "creationTimestamp": ago(hours=2)},
          "status": {"hard": {"requests.cpu": "4", "limits.memory": "16Gi", "pods": "10", "requests.memory": "8Gi"},
                     "used": {"requests.cpu": "1500m", "limits.memory": "2Gi", "pods": "3"}}}
    assert row("ResourceQuota", rq) == {"NAME": "compute", "REQUEST": "pods: 3/10, requests.cpu: 1500m/4, "
                                        "requests.memory: 0/8Gi", "LIMIT": "limits.memory: 2Gi/16Gi", "AGE": "120m"}
    lease = {"metadata": {"name": "kube-scheduler"}, "spec": {"holderIdentity": "cp-1_8c1f"}}
    assert row("Lease", lease)["HOLDER"] == "cp-1_8c1f"


def test_rbac_and_revisions() -> None:
    rb = {"metadata": {"name": "read-pods", "creationTimestamp": ago(days=1)},
          "roleRef": {"kind": "ClusterRole", "name": "view", "apiGroup": "rbac.authorization.k8s.io"},
          "subjects": [{"kind": "User", "name": "jane"}, {"kind": "Group", "name": "dev"},
                       {"kind": "ServiceAccount", "namespace": "ci", "name": "runner"},
                       {"kind": "User", "name": "joe"}]}
    assert row("RoleBinding", rb) == {"NAME": "read-pods", "ROLE": "ClusterRole/view", "AGE": "24h",
                                      "USERS": "jane, joe", "GROUPS": "dev", "SERVICEACCOUNTS": "ci/runner"}
    assert headers("ClusterRoleBinding", wide=True) == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    cr = {"metadata": {"name": "db-5d8b", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "controller": True}]}, "revision": 3}
    assert list(row("ControllerRevision", cr).values())[:3] == ["db-5d8b", "statefulset.apps/db", 3]
    pt = {"metadata": {"name": "tmpl"}, "template": TEMPLATE}
    assert row("PodTemplate", pt) == {"NAME": "tmpl", "CONTAINERS": "app,log", "IMAGES": "nginx:1.27,fluent-bit",
                                      "POD LABELS": "app=web"}
    rc = {"metadata": {"name": "old"}, "spec": {"replicas": 2, "selector": {"app": "old"}, "template": TEMPLATE},
          "status": {"replicas": 2, "readyReplicas": 2}}
    assert list(row("ReplicationController", rc).values())[1:4] == [2, 2, 2]


def test_networking_kinds() -> None:
    ing = {"metadata": {"name": "web"}, "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["a.example"]}],
                                                 "rules": [{"host": h} for h in ("a.example", "b.example", "c.example",
                                                                                 "d.example", "e.example")]},
           "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}}
    assert list(row("Ingress", ing).values())[:5] == ["web", "nginx", "a.example,b.example,c.example + 2 more...",
                                                      "203.0.113.7", "80, 443"]
    assert list(row("Ingress", {"metadata": {"name": "any"}, "spec": {"rules": [{}]}}).values())[1:5] == [
        "<none>", "*", "", "80"]
    ic = {"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx", "parameters": {
        "apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external-lb"}}}
    assert row("IngressClass", ic)["PARAMETERS"] == "IngressParameters.k8s.example.com/external-lb"
    np = {"metadata": {"name": "deny"}, "spec": {"podSelector": {}}}
    assert row("NetworkPolicy", np)["POD-SELECTOR"] == "<none>"
    es = {"metadata": {"name": "web-abc"}, "addressType": "IPv4", "ports": [{"port": 80}, {"name": "metrics"}],
          "endpoints": [{"addresses": [f"10.0.0.{i}"]} for i in range(5)]}
    assert list(row("EndpointSlice", es).values())[1:4] == ["IPv4", "80,metrics",
                                                           "10.0.0.0,10.0.0.1,10.0.0.2 + 2 more..."]
    cap = {"metadata": {"name": "csisc-1"}, "storageClassName": "gp3", "capacity": "1Ti"}
    assert row("CSIStorageCapacity", cap) == {"NAME": "csisc-1", "STORAGECLASSNAME": "gp3", "CAPACITY": "1Ti"}


PRINTED = ["Pod", "Node", "Namespace", "Event", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet",
           "ReplicationController", "Job", "CronJob", "PodDisruptionBudget", "PriorityClass", "RuntimeClass", "Service",
           "ConfigMap", "Secret", "ServiceAccount", "Endpoints", "PersistentVolume", "PersistentVolumeClaim",
           "StorageClass", "CSINode", "CSIDriver", "CSIStorageCapacity", "VolumeAttachment", "Lease", "ResourceQuota",
           "RoleBinding", "ClusterRoleBinding", "ControllerRevision", "PodTemplate", "Ingress", "IngressClass",
           "NetworkPolicy", "EndpointSlice"]


@pytest.mark.parametrize("kind", PRINTED)
def test_objects_missing_fields_still_print(kind: str) -> None:
    table = to_table(kind, [{}, {"metadata": {"name": "x"}, "spec": None, "status": None}], NOW)
    assert [len(r["cells"]) for r in table["rows"]] == [len(table["columnDefinitions"])] * 2
    assert all(c["description"] for c in table["columnDefinitions"] if c["name"] != "Handler")
    assert table["columnDefinitions"] != to_table("Role", [], NOW)["columnDefinitions"]


@pytest.mark.parametrize("kind", ["Role", "ClusterRole", "LimitRange", "Certificate"])
def test_kinds_without_a_printer_get_the_default_table(kind: str) -> None:
    obj = {"metadata": {"name": "x", "creationTimestamp": "2025-06-01T08:30:00Z"}}
    table = to_table(kind, [obj], NOW)
    assert [(c["name"], c["type"], c["format"]) for c in table["columnDefinitions"]] == [
        ("Name", "string", "name"), ("Created At", "date", "")]
    assert table["rows"][0]["cells"] == ["x", "2025-06-01T08:30:00Z"]


# --- the Table object --------------------------------------------------------------------------------


def test_table_envelope_and_include_object() -> None:
    p = pod(containerStatuses=[running()])
    table = to_table("Pod", [p], NOW, resource_version="4711", continue_token="eyJ2IjoxfQ", remaining_item_count=12)
    assert (table["apiVersion"], table["kind"]) == ("meta.k8s.io/v1", "Table")
    assert table["metadata"] == {"resourceVersion": "4711", "continue": "eyJ2IjoxfQ", "remainingItemCount": 12}
    col = table["columnDefinitions"][0]
    assert set(col) == {"name", "type", "format", "description", "priority"}
    assert col["description"].startswith("Name must be unique within a namespace.")
    assert table["rows"][0]["object"] == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                          "metadata": p["metadata"]}
    assert to_table("Pod", [p], NOW, include_object="Object")["rows"][0]["object"] is p
    assert to_table("Pod", [p], NOW, include_object="None")["rows"][0]["object"] is None
    assert to_table("Pod", [p], NOW, include_object="")["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert to_table("Pod", [], NOW)["metadata"] == {}
    assert to_table("Pod", [p], NOW, no_headers=True)["columnDefinitions"] is None
    with pytest.raises(ValueError, match='unrecognized includeObject value: "Everything"'):
        to_table("Pod", [p], NOW, include_object="Everything")


def test_empty_lists() -> None:
    assert to_table("Pod", [], NOW)["rows"] == []
    assert to_table("Role", [], NOW)["rows"] is None  # the default convertor leaves rows null


def test_ten_thousand_pods_each_get_their_row() -> None:
    pods = []
    for i in range(10_000):
        p = pod(f"web-{i}", containers=2, podIPs=[{"ip": f"10.1.{i // 250}.{i % 250}"}],
                conditions=[{"type": "Ready", "status": "True"}],
                containerStatuses=[running("c0", restarts=i % 3,
                                           lastState={"terminated": {"finishedAt": ago(minutes=i % 50)}}),
                                   running("c1")])
        pods.append(p)
    table = to_table("Pod", pods, NOW)  # how fast: speed targets live in `make bench`, not in tests
    assert len(table["rows"]) == 10_000 and table["rows"][49]["cells"][3] == "1 (49m ago)"
