"""Issue 29's fuzzing bar: schemathesis generates requests from the OpenAPI documents `serve`
itself publishes (core, apps and a CustomResourceDefinition's group) and sends them to a real
`kubesched serve`. No answer may be a 5xx (but one kube-apiserver gives too), and no request refused may have
written anything.

The write check reads the store's global resourceVersion before and after each request: serve's
resourceVersion is cluster-wide, so any write anywhere moves it. `--speed 0` stops the clock so
no timer (leases, backoff) writes in the background, and after each accepted write the test waits
for the controllers' reactions to settle, so a moved resourceVersion after a refusal can only be
the refused request's doing."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import Case
from schemathesis.generation import GenerationMode

from tests.serve.harness import Served

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

GADGETS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.fuzz.example.com}
spec:
  group: fuzz.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            x-kubernetes-validations:
            - {rule: "self.replicas <= 5", message: at most five}
            properties:
              size: {type: string, enum: [small, large]}
              replicas: {type: integer, minimum: 0, default: 1}
              tags: {type: array, items: {type: string, maxLength: 4}}
          status:
            type: object
            properties:
              ready: {type: boolean}
"""

DOCUMENTS = ("api/v1", "apis/apps/v1", "apis/fuzz.example.com/v1")
# Namespaced ConfigMaps, Pods, Services, Deployments and Gadgets: collection and item.
PATHS = re.compile(r"^/apis?(/[^/]+)?/v1/namespaces/\{namespace\}/(configmaps|pods|services|deployments|gadgets)"
                   r"(/\{name\})?$")
NAMESPACE = "fuzz"
NAME = "fuzzed"
WRITES = {"POST", "PUT", "PATCH", "DELETE"}
# A list answered as a watch would stream until its timeout; the fuzz is about requests.
STREAMING = ("watch", "allowWatchBookmarks", "sendInitialEvents")
EXAMPLES = 4
# kube-apiserver v1.35 answers a server-side apply naming a field its schema lacks with a 500
# (kubernetes/kubernetes#122480, #139253); serve answers as it does. It must still write nothing.
UPSTREAM_500 = '"message":"failed to create typed patch object ('
# What each item operation finds at NAME, so updates and deletes reach validation, not a 404.
SEEDS = {
    "configmaps": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}},
    "pods": {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c", "image": "i"}]}},
    "services": {"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 80}]}},
    "deployments": {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {
        "selector": {"matchLabels": {"app": NAME}},
        "template": {"metadata": {"labels": {"app": NAME}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}},
    "gadgets": {"apiVersion": "fuzz.example.com/v1", "kind": "Gadget", "spec": {"size": "small"}},
}


def global_rv(session: requests.Session, url: str) -> int:
    """The store's resourceVersion: any list's, since serve's resourceVersion is cluster-wide."""
    return int(session.get(f"{url}/api/v1/namespaces?limit=1", timeout=10).json()["metadata"]["resourceVersion"])


def settle(session: requests.Session, url: str) -> int:
    """Wait until the controllers are done reacting: the resourceVersion holds still for 150 ms
    (with the clock stopped, a reaction chain has no timer to wait on, so it does not pause)."""
    rv, still = global_rv(session, url), 0
    deadline = time.monotonic() + 10
    while still < 5 and time.monotonic() < deadline:
        time.sleep(0.03)
        now = global_rv(session, url)
        still = still + 1 if now == rv else 0
        rv = now
    return rv


def seed(session: requests.Session, url: str, path: str) -> None:
    """(Re)create the object the item operations on `path` address; an existing one stays."""
    collection = path.removesuffix("/{name}").replace("{namespace}", NAMESPACE)
    body = {**SEEDS[collection.rsplit("/", 1)[1]], "metadata": {"name": NAME}}
    status = session.post(url + collection, json=body, timeout=10).status_code
    assert status in (201, 409), (collection, status)
    settle(session, url)


def load_schema(session: requests.Session, url: str) -> schemathesis.BaseSchema:
    """Serve's own OpenAPI v3 documents, merged into one, narrowed to the fuzzed resources."""
    merged: dict = {"openapi": "3.0.0", "info": {"title": "kubesched serve", "version": "v1.35"},
                    "paths": {}, "components": {"schemas": {}}}
    for doc in DOCUMENTS:
        spec = session.get(f"{url}/openapi/v3/{doc}", timeout=30).json()
        merged["paths"].update({p: ops for p, ops in spec["paths"].items() if PATHS.match(p)})
        merged["components"]["schemas"].update(spec.get("components", {}).get("schemas", {}))
    schema = schemathesis.openapi.from_dict(merged)
    schema.config.base_url = url
    return schema


@pytest.fixture
def fuzz_served(tmp_path: Path) -> Iterator[Served]:
    """A stopped-clock server with the Gadget definition and the fuzzed namespace."""
    server = Served(tmp_path, args=["--speed", "0"]).start()
    try:
        server.kubectl("apply", "-f", "-", input=GADGETS)
        server.kubectl("wait", "--for=condition=Established", "crd/gadgets.fuzz.example.com")
        server.kubectl("create", "namespace", NAMESPACE)
        yield server
    finally:
        server.kill()


def test_fuzzed_requests_get_no_5xx_and_refusals_write_nothing(fuzz_served: Served) -> None:
    """Every operation gets EXAMPLES cases, positive and negative, from a fixed seed (derandomize),
    so CI sends the same requests every time."""
    url = fuzz_served.url
    session = requests.Session()
    schema = load_schema(session, url)
    operations = [op.ok() for op in schema.get_all_operations()]
    assert len(operations) >= 30, [op.label for op in operations]
    problems: list[str] = []
    sent = 0

    for operation in operations:
        path_parameters = {"namespace": NAMESPACE}
        if "{name}" in operation.path:
            path_parameters["name"] = NAME
            seed(session, url, operation.path)
        strategy = st.one_of(*(operation.as_strategy(generation_mode=mode, path_parameters=path_parameters)
                               for mode in GenerationMode))

        @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(case=strategy)
        def run(case: Case) -> None:
            nonlocal sent
            query = case.query or {}
            for key in STREAMING:
                query.pop(key, None)
            if query.get("dryRun") not in (None, "All"):
                del query["dryRun"]  # refused before anything else: past it, the fuzz reaches validation
            metadata = case.body.get("metadata") if isinstance(case.body, dict) else None
            if case.method == "PUT" and isinstance(metadata, dict):
                metadata.update(name=NAME, namespace=NAMESPACE)  # past the name check, into validation
            before = global_rv(session, url)
            what = f"{case.method} {case.formatted_path} query={case.query} body={str(case.body)[:300]!r}"
            try:
                response = case.call(session=session, timeout=10)
            except requests.ConnectionError as err:  # the server dropped the request unanswered
                problems.append(f"no answer for {what}: {err}")
                return
            sent += 1
            status = response.status_code
            if status >= 500 and not response.text.count(UPSTREAM_500):
                problems.append(f"{status} for {what}: {response.text[:300]}")
            if status >= 400:
                after = global_rv(session, url)
                if after != before:
                    problems.append(f"{status} for {what} wrote (resourceVersion {before} -> {after})")
                    settle(session, url)
            elif case.method in WRITES:
                settle(session, url)

        run()

    assert not problems, f"{len(problems)} of {sent} requests:\n" + "\n".join(problems)
    assert sent >= 100  # the run did what it claims


def test_a_scale_whose_spec_is_not_an_object_is_a_bad_request(served: Served) -> None:
    """A Scale body with a list for its spec or metadata was a 500 (found by the fuzz)."""
    session = requests.Session()
    rs = f"{served.url}/apis/apps/v1/namespaces/default/replicasets"
    body = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "s"},
            "spec": {"selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    assert session.post(rs, json=body, timeout=10).ok
    for scale in ({"spec": {"replicas": 2}, "metadata": []}, {"spec": [2]}):
        response = session.put(f"{rs}/s/scale", json={"apiVersion": "autoscaling/v1", "kind": "Scale", **scale},
                               timeout=10)
        assert response.status_code == 400, response.text


def test_a_warning_quoting_any_field_name_is_a_valid_header(served: Served) -> None:
    """An unknown field's name is echoed in a Warning header; one holding a control character or a
    lone surrogate made aiohttp drop the connection instead of answering (found by the fuzz)."""
    session = requests.Session()
    cm = f"{served.url}/api/v1/namespaces/default/configmaps"
    assert session.post(cm, json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}}).ok
    body = '{"data": {"a": "b"}, "we\\r\\nird\\"\\u0015": 1, "lone\\udb97": 2}'
    response = session.patch(f"{cm}/w", data=body, headers={"Content-Type": "application/merge-patch+json"},
                             timeout=10)
    assert response.status_code == 200, response.text
    warning = response.headers["Warning"].encode("latin-1").decode()  # http.client reads latin-1
    assert warning == '299 - "unknown field \\"we  ird\\" \\"", 299 - "unknown field \\"lone\ufffd\\""'
    assert session.get(f"{cm}/w", timeout=10).json()["data"] == {"a": "b"}


def test_a_binding_whose_parts_are_not_objects_is_a_bad_request(served: Served) -> None:
    """A Binding with a non-object metadata or target, or a non-string target name, was a 500
    (found by the fuzz)."""
    session = requests.Session()
    pods = f"{served.url}/api/v1/namespaces/default/pods"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert session.post(pods, json=pod, timeout=10).ok
    for binding in ({"metadata": True, "target": {"name": "n"}}, {"target": ["n"]}, {"target": {"name": 7}}):
        response = session.post(f"{pods}/p/binding", json={"apiVersion": "v1", "kind": "Binding", **binding}, timeout=10)
        assert response.status_code == 400, response.text
