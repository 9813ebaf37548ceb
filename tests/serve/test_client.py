"""The official `kubernetes` client against `kubesched serve`: watches that survive a server
restart, and a small operator reconciling through list/watch/create/patch/delete."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.serve.harness import Served, wait_for

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                   "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"}}}


def _pod(name: str, labels: dict[str, str] | None = None, owner: dict | None = None) -> dict:
    meta: dict = {"name": name, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": "100m"}}}]}}


def _core(served: Served) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(config_file=served.kubeconfig))


@pytest.fixture
def core(served: Served) -> Iterator[client.CoreV1Api]:
    api = _core(served)
    yield api
    api.api_client.close()


def test_crud_and_errors(core: client.CoreV1Api) -> None:
    core.create_node(NODE)
    created = core.create_namespaced_pod("default", _pod("a"))
    assert created.metadata.uid and created.metadata.resource_version
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod("default", _pod("a"))
    assert e.value.status == 409 and '"reason":"AlreadyExists"' in e.value.body
    with pytest.raises(ApiException) as e:
        core.read_namespaced_pod("nope", "default")
    assert e.value.status == 404 and 'pods \\"nope\\" not found' in e.value.body
    with pytest.raises(ApiException) as e:
        core.create_namespaced_pod("missing", _pod("b"))
    assert e.value.status == 404 and 'namespaces \\"missing\\" not found' in e.value.body

    # An update carrying a stale resourceVersion is refused with 409 Conflict.
    pod = core.read_namespaced_pod("a", "default")
    core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"x": "1"}}})
    pod.metadata.labels = {"x": "2"}
    with pytest.raises(ApiException) as e:
        core.replace_namespaced_pod("a", "default", pod)
    assert e.value.status == 409 and "the object has been modified" in e.value.body

    wait_for(lambda: core.read_namespaced_pod("a", "default").spec.node_name == "n1", what="scheduled")
    listed = core.list_namespaced_pod("default", label_selector="x=1")
    assert [p.metadata.name for p in listed.items] == ["a"]
    assert core.list_namespaced_pod("default", field_selector="spec.nodeName=n1").items
    assert not core.list_namespaced_pod("default", field_selector="spec.nodeName=n2").items


def test_list_pages(core: client.CoreV1Api) -> None:
    for i in range(7):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"cm-{i}"}, "data": {"i": str(i)}})
    names, token = [], None
    while True:
        page = core.list_namespaced_config_map("default", limit=3, _continue=token)
        names += [c.metadata.name for c in page.items]
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count == 7 - len(names)
    assert names == [f"cm-{i}" for i in range(7)]


def test_watch_resumes_across_a_restart(served: Served, tmp_path: Path) -> None:
    core = _core(served)
    core.create_node(NODE)
    start = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", _pod("before"))
    served.restart()
    core = _core(served)
    core.create_namespaced_pod("default", _pod("after"))
    seen: list[tuple[str, str]] = []
    for ev in watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=start, timeout_seconds=3):
        seen.append((ev["type"], ev["object"].metadata.name))
    # Every change since `start`, in order, exactly once: both creations (ADDED) first.
    assert seen[0] == ("ADDED", "before")
    assert ("ADDED", "after") in seen
    assert seen.count(("ADDED", "before")) == 1 and seen.count(("ADDED", "after")) == 1
    versions = [int(v) for v in (core.read_namespaced_pod(n, "default").metadata.resource_version
                                 for n in ("before", "after"))]
    assert versions[1] > versions[0] > int(start)
    core.api_client.close()


def test_watch_from_a_compacted_version_is_gone(served: Served) -> None:
    core = _core(served)
    with pytest.raises(ApiException) as e:
        for _ in watch.Watch().stream(core.list_namespaced_pod, "default", resource_version="999999",
                                      timeout_seconds=2):
            pass
    assert e.value.status == 504 or "Too large resource version" in str(e.value)
    core.api_client.close()


class ToyOperator:
    """Keeps as many pods as a ConfigMap `app-<name>` asks for in `data.replicas`, owned by it:
    the list-then-watch-and-reconcile loop every controller runs."""

    def __init__(self, served: Served) -> None:
        self.core = _core(served)
        self.stopped = threading.Event()
        self.errors: list[BaseException] = []

    def reconcile(self, cm: client.V1ConfigMap) -> None:
        want = int((cm.data or {}).get("replicas", "0"))
        label = f"app={cm.metadata.name}"
        pods = [p for p in self.core.list_namespaced_pod("default", label_selector=label).items
                if not p.metadata.deletion_timestamp]
        owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": cm.metadata.name, "uid": cm.metadata.uid,
                 "controller": True}
        for i in range(len(pods), want):
            self.core.create_namespaced_pod("default", {
                **_pod(f"{cm.metadata.name}-{cm.metadata.resource_version}-{i}", {"app": cm.metadata.name}, owner)})
        for extra in sorted(pods, key=lambda p: p.metadata.name)[want:]:
            self.core.delete_namespaced_pod(extra.metadata.name, "default", grace_period_seconds=0)
        self.core.patch_namespaced_config_map(cm.metadata.name, "default",
                                              {"metadata": {"annotations": {"toy/observed": str(want)}}})

    def run(self) -> None:
        try:
            listed = self.core.list_namespaced_config_map("default", label_selector="toy=yes")
            rv = listed.metadata.resource_version
            for cm in listed.items:
                self.reconcile(cm)
            while not self.stopped.is_set():
                for ev in watch.Watch().stream(self.core.list_namespaced_config_map, "default",
                                               label_selector="toy=yes", resource_version=rv, timeout_seconds=1):
                    rv = ev["object"].metadata.resource_version
                    if ev["type"] in ("ADDED", "MODIFIED") and \
                            (ev["object"].metadata.annotations or {}).get("toy/observed") != \
                            (ev["object"].data or {}).get("replicas"):
                        self.reconcile(ev["object"])
        except BaseException as e:  # surfaced by the test
            self.errors.append(e)


def test_toy_operator_reconciles(served: Served) -> None:
    core = _core(served)
    core.create_node(NODE)
    op = ToyOperator(served)
    thread = threading.Thread(target=op.run, daemon=True)
    thread.start()
    try:
        core.create_namespaced_config_map("default", {"metadata": {"name": "shop", "labels": {"toy": "yes"}},
                                                      "data": {"replicas": "3"}})

        def running(n: int) -> bool:
            pods = core.list_namespaced_pod("default", label_selector="app=shop").items
            return len(pods) == n and all(p.status.phase == "Running" and p.spec.node_name == "n1" for p in pods)

        wait_for(lambda: running(3), what="3 operator pods running")
        core.patch_namespaced_config_map("shop", "default", {"data": {"replicas": "1"}})
        wait_for(lambda: running(1), what="scaled down to 1")
        # The operator records what it observed after its deletes: deleting the owner before that
        # would fail its last write, as it would on any cluster.
        wait_for(lambda: (core.read_namespaced_config_map("shop", "default").metadata.annotations or {})
                 .get("toy/observed") == "1", what="the scale-down observed")
        # Deleting the owner garbage-collects its pods.
        core.delete_namespaced_config_map("shop", "default")
        wait_for(lambda: not core.list_namespaced_pod("default", label_selector="app=shop").items,
                 what="pods collected")
    finally:
        op.stopped.set()
        thread.join(timeout=10)
        core.api_client.close()
    assert not op.errors, op.errors
