"""Issue 29's fuzzing bar: schemathesis generates requests from the OpenAPI documents `serve`
itself publishes (core, apps and a CustomResourceDefinition's group) and sends them to a real
`kubesched serve`. No answer may be a 5xx, and no request answered 4xx may have written anything.

The write check reads the store's global resourceVersion before and after each request: serve's
resourceVersion is cluster-wide, so any write anywhere moves it. `--speed 0` stops the clock so
no timer (leases, backoff) writes in the background, and after each accepted write the test waits
for the controllers' reactions to settle, so a moved resourceVersion after a refusal can only be
the refused request's doing."""

from __future__ import annotations

import re
import time
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
EXAMPLES = 6


def global_rv(session: requests.Session, url: str) -> int:
    """The store's resourceVersion: any list's, since serve's resourceVersion is cluster-wide."""
    return int(session.get(f"{url}/api/v1/namespaces?limit=1", timeout=10).json()["metadata"]["resourceVersion"])


def settle(session: requests.Session, url: str) -> int:
    """Wait until the controllers are done reacting (the resourceVersion holds still)."""
    rv, still = global_rv(session, url), 0
    deadline = time.monotonic() + 10
    while still < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
        now = global_rv(session, url)
        still = still + 1 if now == rv else 0
        rv = now
    return rv


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
def fuzz_served(tmp_path: Path) -> Served:
    server = Served(tmp_path, args=["--speed", "0"]).start()
    try:
        server.kubectl("apply", "-f", "-", input=GADGETS)
        server.kubectl("wait", "--for=condition=Established", "crd/gadgets.fuzz.example.com")
        server.kubectl("create", "namespace", NAMESPACE)
        yield server
    finally:
        server.kill()


def test_fuzzed_requests_get_no_5xx_and_refusals_write_nothing(fuzz_served: Served) -> None:
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
        strategy = st.one_of(*(operation.as_strategy(generation_mode=mode, path_parameters=path_parameters)
                               for mode in GenerationMode))

        @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(case=strategy)
        def run(case: Case) -> None:
            nonlocal sent
            for key in STREAMING:
                (case.query or {}).pop(key, None)
            before = global_rv(session, url)
            response = case.call(session=session, timeout=10)
            sent += 1
            status = response.status_code
            what = f"{case.method} {case.formatted_path} query={case.query} body={str(case.body)[:300]}"
            if status >= 500:
                problems.append(f"{status} for {what}: {response.text[:300]}")
            elif status >= 400:
                after = global_rv(session, url)
                if after != before:
                    problems.append(f"{status} for {what} wrote (resourceVersion {before} -> {after})")
                    settle(session, url)
            elif case.method.upper() in WRITES:
                settle(session, url)

        run()

    assert not problems, f"{len(problems)} of {sent} requests:\n" + "\n".join(problems)
