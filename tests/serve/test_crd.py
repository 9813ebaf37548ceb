"""CustomResourceDefinitions against `kubesched serve`, with the real kubectl and the official
client: what an operator author does first (define a kind, apply objects of it, read them back,
watch them, get refused with the API server's messages)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
import yaml
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.serve.harness import Served, wait_for

WIDGETS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd], categories: [all]}
  versions:
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas,
              labelSelectorPath: .status.selector}
    additionalPrinterColumns:
    - {name: Size, type: string, jsonPath: .spec.size}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    schema:
      openAPIV3Schema:
        type: object
        description: A widget made to order.
        properties:
          spec:
            type: object
            description: What the widget should be.
            required: [size]
            x-kubernetes-validations:
            - {rule: "self.replicas <= self.maxReplicas", messageExpression: "'replicas may not exceed ' + string(self.maxReplicas)"}
            - {rule: "self.size == oldSelf.size", message: size is immutable}
            properties:
              size: {type: string, enum: [small, large], description: How big the widget is.}
              replicas: {type: integer, minimum: 0, default: 1}
              maxReplicas: {type: integer, default: 10}
              name: {type: string, pattern: '^[a-z]+$', maxLength: 8}
              port: {x-kubernetes-int-or-string: true}
              template: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    number: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
              conditions:
                type: array
                items:
                  type: object
                  properties:
                    type: {type: string}
                    status: {type: string}
"""

GADGETS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {plural: gadgets, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields: [{jsonPath: .spec.color}]
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {color: {type: string}}}
"""


def _widget(object_name: str, **spec: object) -> str:
    return yaml.safe_dump({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": object_name},
                           "spec": {"size": "small", **spec}})


def _established(served: Served, name: str) -> bool:
    out = served.kubectl("get", "crd", name, "-o", "jsonpath={.status.conditions[?(@.type==\"Established\")].status}")
    return out == "True"


@pytest.fixture
def widgets(served: Served) -> Iterator[Served]:
    served.kubectl("apply", "-f", "-", input=WIDGETS)
    wait_for(lambda: _established(served, "widgets.example.com"), what="the definition to be established")
    yield served


def test_definition_is_validated_and_accepted(served: Served) -> None:
    bad = yaml.safe_load(WIDGETS)
    bad["metadata"]["name"] = "widget.example.com"
    bad["spec"]["versions"][0]["storage"] = True
    del bad["spec"]["versions"][1]["schema"]
    out = served.kubectl("apply", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert 'The CustomResourceDefinition "widget.example.com" is invalid' in out
    assert 'metadata.name: Invalid value: "widget.example.com": must be spec.names.plural+"."+spec.group' in out
    assert "spec.versions: Invalid value: " in out and "must have exactly one version marked as storage version" in out
    assert "spec.versions[1].schema.openAPIV3Schema: Required value: schemas are required" in out
    untyped = yaml.safe_load(GADGETS)
    untyped["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = {"properties": {}}
    untyped["spec"]["scope"] = "Global"
    out = served.kubectl("apply", "-f", "-", input=yaml.safe_dump(untyped), check=False)
    assert 'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"' in out
    assert ("spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for "
            "specified object fields") in out
    assert "No resources found" in served.kubectl("get", "crd", check=False)

    served.kubectl("apply", "-f", "-", input=WIDGETS)
    wait_for(lambda: _established(served, "widgets.example.com"), what="the definition to be established")
    crd = json.loads(served.kubectl("get", "crd", "widgets.example.com", "-o", "json"))
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    assert crd["status"]["acceptedNames"]["listKind"] == "WidgetList"
    assert crd["status"]["storedVersions"] == ["v1"]
    conditions = {c["type"]: (c["status"], c["reason"]) for c in crd["status"]["conditions"]}
    assert conditions == {"NamesAccepted": ("True", "NoConflicts"), "Established": ("True", "InitialNamesAccepted")}
    table = served.kubectl("get", "crd")
    assert table.split("\n")[0].split() == ["NAME", "CREATED", "AT"] and "widgets.example.com" in table
    resources = served.kubectl("api-resources", "--api-group=example.com")
    assert resources.split("\n")[1].split() == ["widgets", "wd", "example.com/v1", "true", "Widget"]


def test_objects_with_kubectl(widgets: Served) -> None:
    served = widgets
    out = served.kubectl("apply", "-f", "-", input=_widget("one", extra=1), check=False)
    assert 'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.extra"' \
        in out
    served.kubectl("apply", "--validate=false", "-f", "-", input=_widget("one", port="http", template={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "colour": "x"}, "spec": {}}))
    one = json.loads(served.kubectl("get", "widget", "one", "-o", "json"))
    assert one["spec"]["replicas"] == 1 and one["spec"]["maxReplicas"] == 10  # defaults
    assert one["spec"]["template"]["metadata"] == {"name": "p"}  # an embedded object's metadata is ObjectMeta
    assert one["metadata"]["generation"] == 1
    lines = served.kubectl("get", "wd").split("\n")
    assert lines[0].split() == ["NAME", "SIZE", "REPLICAS", "READY"]  # no Age unless a column says so
    assert lines[1].split() == ["one", "small", "1"]  # nothing found: a null cell

    bad = _widget("two", size="medium", replicas=-1, name="Two", port=True)
    out = served.kubectl("apply", "-f", "-", input=bad, check=False)
    assert 'The Widget "two" is invalid' in out
    assert 'spec.size: Unsupported value: "medium": supported values: "small", "large"' in out
    assert "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0" in out
    assert "spec.name: Invalid value: \"Two\": spec.name in body should match '^[a-z]+$'" in out
    assert 'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"' in out
    out = served.kubectl("apply", "-f", "-", input=_widget("two", replicas=20, maxReplicas=5), check=False)
    assert 'spec: Invalid value: "object": replicas may not exceed 5' in out
    out = served.kubectl("patch", "widget", "one", "--type=merge", "-p", '{"spec":{"size":"large"}}', check=False)
    assert 'spec: Invalid value: "object": size is immutable' in out

    explained = served.kubectl("explain", "widgets.spec")
    assert "What the widget should be." in explained and "size\t<string> -required-" in explained
    assert "What the widget should be." in served.kubectl("explain", "widgets.spec", "--output=plaintext-openapiv2")
    listed = {"apiVersion": "v1", "kind": "List", "items": [yaml.safe_load(_widget("listed", bogus=1))]}
    out = served.kubectl("apply", "-f", "-", input=json.dumps(listed), check=False)  # checked against v2
    assert 'unknown field "bogus" in com.example.v1.Widget.spec' in out

    served.kubectl("patch", "widget", "one", "--type=merge", "-p", '{"spec":{"replicas":2}}')
    served.kubectl("patch", "widget", "one", "--type=json", "-p", '[{"op":"replace","path":"/spec/replicas","value":3}]')
    out = served.kubectl("patch", "widget", "one", "-p", '{"spec":{"replicas":4}}', check=False)
    assert "application/strategic-merge-patch+json is not supported" in out
    assert ("the body of the request was in an unknown format - accepted media types include: "
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml") in out
    served.kubectl("scale", "widget", "one", "--replicas=5")
    served.kubectl("patch", "widget", "one", "--subresource=status", "--type=merge", "-p",
                   '{"spec":{"replicas":9},"status":{"replicas":5,"selector":"app=one",'
                   '"conditions":[{"type":"Ready","status":"True"}]}}')
    one = json.loads(served.kubectl("get", "widget", "one", "-o", "json"))
    assert one["spec"]["replicas"] == 5 and one["status"]["replicas"] == 5  # spec ignored on /status
    assert one["metadata"]["generation"] == 4  # three spec changes; the status write is not one
    scale = json.loads(served.kubectl("get", "--raw", "/apis/example.com/v1/namespaces/default/widgets/one/scale"))
    assert scale["spec"] == {"replicas": 5} and scale["status"] == {"replicas": 5, "selector": "app=one"}
    assert served.kubectl("get", "wd", "one", "--no-headers").split()[3] == "True"
    served.kubectl("patch", "widget", "one", "--type=merge", "-p", '{"status":{"replicas":0}}')
    assert json.loads(served.kubectl("get", "widget", "one", "-o", "json"))["status"]["replicas"] == 5

    # Server-side apply merges a map list by its keys: two managers, one port each.
    ports = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "one"}}
    for manager, port in (("alice", {"name": "http", "number": 80}), ("bob", {"name": "https", "number": 443})):
        served.kubectl("apply", "--server-side", f"--field-manager={manager}", "-f", "-",
                       input=json.dumps({**ports, "spec": {"size": "small", "ports": [port]}}))
    one = json.loads(served.kubectl("get", "widget", "one", "-o", "json"))
    assert [p["name"] for p in one["spec"]["ports"]] == ["http", "https"]

    # An older version reads the same object, its apiVersion rewritten.
    assert "Warning: example.com/v1beta1 Widget is deprecated" in served.kubectl(
        "get", "widgets.v1beta1.example.com", "one", check=False)
    old = json.loads(served.kubectl("get", "widgets.v1beta1.example.com", "one", "-o", "json"))
    assert old["apiVersion"] == "example.com/v1beta1" and old["spec"]["replicas"] == 5
    served.kubectl("apply", "-f", "-", input=_widget("three").replace("example.com/v1", "example.com/v1beta1"))
    assert json.loads(served.kubectl("get", "widget", "three", "-o", "json"))["apiVersion"] == "example.com/v1"

    assert "widget.example.com/one" in served.kubectl("get", "all", "-o", "name")
    served.kubectl("delete", "crd", "widgets.example.com")
    wait_for(lambda: "No resources found" in served.kubectl("get", "crd", check=False), what="the definition to go")
    out = served.kubectl("get", "--raw", "/apis/example.com/v1/namespaces/default/widgets", check=False)
    assert "NotFound" in out or "not found" in out.lower()
    served.kubectl("apply", "-f", "-", input=WIDGETS)
    wait_for(lambda: _established(served, "widgets.example.com"), what="the definition to be established")
    assert "No resources found" in served.kubectl("get", "widgets", "-A", check=False)  # its objects went with it


def test_custom_objects_api(widgets: Served) -> None:
    served = widgets
    served.kubectl("apply", "-f", "-", input=GADGETS)
    wait_for(lambda: _established(served, "gadgets.example.com"), what="the definition to be established")
    api_client = config.new_client_from_config(config_file=served.kubeconfig)
    api = client.CustomObjectsApi(api_client)
    seen: list[tuple[str, str]] = []

    def watch_widgets() -> None:
        w = watch.Watch()
        for ev in w.stream(api.list_namespaced_custom_object, "example.com", "v1", "default", "widgets",
                           timeout_seconds=60):
            seen.append((ev["type"], ev["object"]["metadata"]["name"]))
            if len(seen) == 3:
                w.stop()

    watcher = threading.Thread(target=watch_widgets)
    watcher.start()
    for name, size in (("a", "small"), ("b", "large")):
        if name == "b":  # the watch is running: what follows arrives as it happens
            wait_for(lambda: seen, what="the watch to see the first widget")
        api.create_namespaced_custom_object("example.com", "v1", "default", "widgets", {
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "labels": {"size": size}}, "spec": {"size": size}})
    with pytest.raises(ApiException) as refused:
        api.create_namespaced_custom_object("example.com", "v1", "default", "widgets", {
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "c"}, "spec": {"replicas": "x"}})
    assert refused.value.status == 422
    body = json.loads(refused.value.body)
    assert body["reason"] == "Invalid" and body["details"]["kind"] == "Widget"
    assert {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.size"} in body["details"]["causes"]
    listed = api.list_namespaced_custom_object("example.com", "v1", "default", "widgets", label_selector="size=large")
    assert [o["metadata"]["name"] for o in listed["items"]] == ["b"] and listed["kind"] == "WidgetList"
    listed = api.list_cluster_custom_object("example.com", "v1", "widgets", field_selector="metadata.name=a")
    assert [o["metadata"]["name"] for o in listed["items"]] == ["a"]
    api.patch_namespaced_custom_object("example.com", "v1", "default", "widgets", "a", {"spec": {"replicas": 2}})
    api.delete_namespaced_custom_object("example.com", "v1", "default", "widgets", "b")
    watcher.join(timeout=60)
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a")]

    gadget = api.create_cluster_custom_object("example.com", "v1", "gadgets", {
        "apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"color": "red"}})
    assert "namespace" not in gadget["metadata"]
    assert api.get_cluster_custom_object("example.com", "v1", "gadgets", "g")["spec"] == {"color": "red"}
    api.create_cluster_custom_object("example.com", "v1", "gadgets", {
        "apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "h"}, "spec": {"color": "blue"}})
    blue = api.list_cluster_custom_object("example.com", "v1", "gadgets", field_selector="spec.color=blue")
    assert [o["metadata"]["name"] for o in blue["items"]] == ["h"]
    with pytest.raises(ApiException) as unselectable:
        api.list_namespaced_custom_object("example.com", "v1", "default", "widgets", field_selector="spec.size=small")
    assert unselectable.value.status == 400
    assert json.loads(unselectable.value.body)["message"] == "field label not supported: spec.size"
    lines = served.kubectl("get", "gadgets").split("\n")
    assert lines[0].split() == ["NAME", "AGE"] and lines[1].split()[0] == "g"
    with pytest.raises(ApiException) as missing:
        api.get_cluster_custom_object("example.com", "v1", "gadgets", "nope")
    assert missing.value.status == 404
    assert json.loads(missing.value.body)["message"] == 'gadgets.example.com "nope" not found'
    api_client.close()

    served.kill()  # kill -9: the definitions and their objects were durable when acknowledged
    served.start()
    assert served.kubectl("get", "gadget", "h", "-o", "jsonpath={.spec.color}") == "blue"
    assert served.kubectl("get", "widgets", "-o", "name").split() == ["widget.example.com/a"]


OPERATOR = """
import kopf
import kubernetes


@kopf.on.startup()
def configure(settings, **_):
    settings.persistence.finalizer = "example.com/widget-operator"
    settings.posting.enabled = False


@kopf.on.create("example.com", "v1", "widgets")
def made(spec, name, namespace, **_):
    kubernetes.config.load_kube_config()
    kubernetes.client.CoreV1Api().create_namespaced_config_map(namespace, {
        "metadata": {"name": f"{name}-made"}, "data": {"size": spec["size"]}})


@kopf.on.delete("example.com", "v1", "widgets")
def gone(name, namespace, **_):
    kubernetes.config.load_kube_config()
    kubernetes.client.CoreV1Api().delete_namespaced_config_map(f"{name}-made", namespace)
"""


def test_kopf_operator_handles_a_create_and_a_delete(widgets: Served, tmp_path) -> None:  # noqa: ANN001
    served = widgets
    (tmp_path / "operator.py").write_text(OPERATOR)
    log = open(tmp_path / "kopf.log", "wb")  # noqa: SIM115 - the process keeps it
    env = {**os.environ, "KUBECONFIG": served.kubeconfig}
    proc = subprocess.Popen([sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", "default",
                             str(tmp_path / "operator.py")], stdout=log, stderr=log, env=env, start_new_session=True)
    try:
        served.kubectl("apply", "-f", "-", input=_widget("made", size="large"))

        def handled() -> bool:
            out = served.kubectl("get", "configmap", "made-made", "-o", "jsonpath={.data.size}", check=False)
            if proc.poll() is not None:
                raise AssertionError("kopf exited:\n" + (tmp_path / "kopf.log").read_text())
            return out == "large"

        wait_for(handled, timeout=120, what="kopf's create handler")
        # kopf's finalizer holds the widget until its delete handler has cleaned up after it.
        finalizers = served.kubectl("get", "widget", "made", "-o", "jsonpath={.metadata.finalizers}")
        assert "example.com/widget-operator" in finalizers
        served.kubectl("delete", "widget", "made", "--wait=false")

        def cleaned() -> bool:
            widget = served.kubectl("get", "widget", "made", "-o", "name", check=False)
            made = served.kubectl("get", "configmap", "made-made", "-o", "name", check=False)
            return "NotFound" in widget and "NotFound" in made

        wait_for(cleaned, timeout=120, what="kopf's delete handler and its finalizer's removal")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()


def _same_kind(group: str, scope: str = "Namespaced") -> str:
    return f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: widgets.{group}}}
spec:
  group: {group}
  scope: {scope}
  names: {{plural: widgets, singular: widget, kind: Widget}}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
"""


def test_one_kind_in_two_groups_keeps_apart(served: Served) -> None:
    """Two definitions of `Widget` in different groups: each group serves its own objects, even
    under the same name, and deleting one definition takes only its own."""
    served.kubectl("apply", "-f", "-", input=_same_kind("a.example.com") + "---" + _same_kind("b.example.com"))
    api = client.CustomObjectsApi(config.new_client_from_config(served.kubeconfig))
    try:
        for group in ("a.example.com", "b.example.com"):
            wait_for(lambda group=group: _served(api, group), what=f"widgets of {group} served")
            api.create_namespaced_custom_object(group, "v1", "default", "widgets", {
                "apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "same"}, "spec": {"from": group}})
        for group in ("a.example.com", "b.example.com"):
            (item,) = api.list_namespaced_custom_object(group, "v1", "default", "widgets")["items"]
            assert (item["apiVersion"], item["spec"]) == (f"{group}/v1", {"from": group})
            patched = api.patch_namespaced_custom_object(group, "v1", "default", "widgets", "same",
                                                         {"spec": {"patched": True}})
            assert patched["apiVersion"] == f"{group}/v1" and patched["kind"] == "Widget"
        out = served.kubectl("get", "widgets.b.example.com", "same", "-o", "json")
        assert json.loads(out)["spec"] == {"from": "b.example.com", "patched": True}

        served.kubectl("delete", "crd", "widgets.a.example.com")
        wait_for(lambda: not _served(api, "a.example.com"), what="a.example.com's widgets gone")
        (left,) = api.list_namespaced_custom_object("b.example.com", "v1", "default", "widgets")["items"]
        assert left["spec"]["from"] == "b.example.com"
        api.delete_namespaced_custom_object("b.example.com", "v1", "default", "widgets", "same")
        assert api.list_namespaced_custom_object("b.example.com", "v1", "default", "widgets")["items"] == []
    finally:
        api.api_client.close()


def _served(api: client.CustomObjectsApi, group: str) -> bool:
    try:
        api.list_namespaced_custom_object(group, "v1", "default", "widgets")
    except ApiException:
        return False
    return True


def _format_1_data_file(path: str) -> None:
    """A data file as kubesched wrote it before custom objects were filed under their
    group-qualified kind (format 1): a Widget's object and event rows under the bare `Widget`."""
    meta = {"uid": "00000000-0000-0000-0000-00000000000{}", "creationTimestamp": "2026-01-01T00:00:00Z"}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com", "resourceVersion": "2", **meta, "uid": meta["uid"].format(2)},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
           "status": {"acceptedNames": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                                        "listKind": "WidgetList"}, "storedVersions": ["v1"]}}
    rows = [
        ("Namespace", "", "default", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "default", "resourceVersion": "1", **meta, "uid": meta["uid"].format(1)},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
        ("CustomResourceDefinition", "", "widgets.example.com", crd),
        ("Widget", "default", "w1", {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {
            "name": "w1", "namespace": "default", "resourceVersion": "3", **meta, "uid": meta["uid"].format(3)},
            "spec": {"size": "large"}}),
    ]
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript("""
        CREATE TABLE objects (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, namespace TEXT NOT NULL,
                              name TEXT NOT NULL, rv INTEGER NOT NULL, body TEXT NOT NULL);
        CREATE TABLE events (rv INTEGER PRIMARY KEY, type TEXT NOT NULL, kind TEXT NOT NULL, obj TEXT NOT NULL);
        CREATE TABLE state (id INTEGER PRIMARY KEY CHECK (id = 1), resource_version INTEGER NOT NULL,
                            events_floor INTEGER NOT NULL);
        INSERT INTO state VALUES (1, 3, 0);
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('epoch', '2026-01-01T00:00:00Z'), ('virtual-time', '0');
        PRAGMA application_id = 1802724200;
        PRAGMA user_version = 1;
    """)
    for rv, (kind, namespace, name, body) in enumerate(rows, start=1):
        db.execute("INSERT INTO objects VALUES (?, ?, ?, ?, ?, ?)", (rv, kind, namespace, name, rv, json.dumps(body)))
        db.execute("INSERT INTO events VALUES (?, 'ADDED', ?, ?)", (rv, kind, json.dumps(body)))
    db.close()


def test_custom_objects_of_an_older_data_file_are_found(tmp_path) -> None:  # noqa: ANN001
    """A data file from before custom objects were filed under their group-qualified kind is
    brought up to date when opened, once and for good (the file says format 2 after): its objects
    are read, watched from an old resourceVersion, changed and deleted as if written today."""
    served = Served(tmp_path)
    _format_1_data_file(served.data)
    served.start()
    try:
        api = client.CustomObjectsApi(config.new_client_from_config(served.kubeconfig))
        widget = api.get_namespaced_custom_object("example.com", "v1", "default", "widgets", "w1")
        assert widget["spec"] == {"size": "large"}
        assert served.kubectl("get", "widgets", "-o", "name").split() == ["widget.example.com/w1"]
        events = list(watch.Watch().stream(api.list_namespaced_custom_object, "example.com", "v1", "default",
                                           "widgets", resource_version="2", timeout_seconds=1))
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "w1")]
        patched = api.patch_namespaced_custom_object("example.com", "v1", "default", "widgets", "w1",
                                                     {"spec": {"size": "small"}})
        assert patched["spec"] == {"size": "small"}
        api.delete_namespaced_custom_object("example.com", "v1", "default", "widgets", "w1")
        assert api.list_namespaced_custom_object("example.com", "v1", "default", "widgets")["items"] == []
    finally:
        served.kill()
    db = sqlite3.connect(served.data)
    assert db.execute("PRAGMA user_version").fetchone() == (2,)
    assert db.execute("SELECT count(*) FROM events WHERE kind = 'Widget'").fetchone() == (0,)
    db.close()
