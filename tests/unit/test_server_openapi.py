"""Discovery and OpenAPI documents of `serve`: their shape, and what the real kubectl does with them.

The kubectl tests run against a stand-in HTTP app defined here that answers only discovery, the
OpenAPI documents and a couple of fixed objects, so they check these documents alone.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kubesched.api.restmapping import AGGREGATED_GROUPS, GROUPS, RESOURCES, Resource
from kubesched.server import discovery, openapi

# metrics.k8s.io is an aggregated API upstream: discovery lists it, kube-apiserver's OpenAPI does not.
DOCUMENTED = [r for r in RESOURCES if r.group not in AGGREGATED_GROUPS]

KUBECTL_ACCEPT = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                  "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")


def _doc_path(r: Resource) -> str:
    return f"apis/{r.group}/{r.version}" if r.group else f"api/{r.version}"


def _doc(path: str) -> dict[str, Any]:
    data = openapi.openapi_v3_document(path)
    assert data is not None, path
    return json.loads(data)


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


# ---- OpenAPI documents ---------------------------------------------------------------------------


def test_index_lists_every_group_version_with_the_hash_of_its_document() -> None:
    paths = openapi.openapi_v3_index()["paths"]
    for gv in {_doc_path(r) for r in DOCUMENTED}:
        url = paths[gv]["serverRelativeURL"]
        data = openapi.openapi_v3_document(gv)
        assert data is not None
        assert url == f"/openapi/v3/{gv}?hash={hashlib.sha512(data).hexdigest().upper()}"
    assert "apis/kubesched.io/v1alpha1" not in paths
    assert openapi.openapi_v3_document("apis/example.com/v1") is None
    assert openapi.openapi_v3_hash("apis/example.com/v1") is None


@pytest.mark.parametrize("r", DOCUMENTED, ids=lambda r: f"{r.api_version}/{r.kind}")
def test_every_served_kind_is_found_as_kubectl_explain_finds_it(r: Resource) -> None:
    """explain takes the kind from an operation on the resource's list or item path, then the
    schema whose x-kubernetes-group-version-kind holds that kind; the list kind is there too."""
    doc = _doc(_doc_path(r))
    prefix = f"/apis/{r.group}/{r.version}" if r.group else f"/api/{r.version}"
    ns = "/namespaces/{namespace}" if r.namespaced else ""
    gvk = _gvk(r.group, r.version, r.kind)
    found = [op["x-kubernetes-group-version-kind"]
             for path in (f"{prefix}{ns}/{r.plural}", f"{prefix}{ns}/{r.plural}/{{name}}")
             for op in doc["paths"].get(path, {}).values() if isinstance(op, dict)]
    assert found and all(g == gvk for g in found)
    schemas = doc["components"]["schemas"]
    assert [n for n, s in schemas.items() if gvk in s.get("x-kubernetes-group-version-kind", [])]
    if "list" in r.verbs:
        listed = _gvk(r.group, r.version, r.kind + "List")
        assert [n for n, s in schemas.items() if listed in s.get("x-kubernetes-group-version-kind", [])]


@pytest.mark.parametrize("path", sorted(openapi.openapi_v3_index()["paths"]))
def test_every_reference_resolves_inside_its_document(path: str) -> None:
    doc = _doc(path)
    schemas = doc["components"]["schemas"]
    refs = {n["$ref"] for n in _walk(doc) if isinstance(n.get("$ref"), str)}
    assert refs
    for ref in refs:
        assert ref.startswith("#/components/schemas/") and ref.removeprefix("#/components/schemas/") in schemas


def test_schemas_are_in_kube_openapi_v3_form() -> None:
    doc = _doc("api/v1")
    schemas = doc["components"]["schemas"]
    for node in _walk(schemas):
        assert not isinstance(node.get("type"), list), node
        if "$ref" in node and isinstance(node["$ref"], str):
            assert set(node) == {"$ref"}, node  # a reference with siblings is wrapped in allOf
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["type"] == "object"
    assert pod["properties"]["apiVersion"] == {"description": pod["properties"]["apiVersion"]["description"],
                                               "type": "string"}
    assert pod["properties"]["spec"]["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["oneOf"] == [{"type": "integer"},
                                                                                  {"type": "string"}]
    assert schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]["oneOf"] == [{"type": "string"},
                                                                                 {"type": "number"}]


@pytest.mark.parametrize("r", [r for r in DOCUMENTED if "patch" in r.verbs], ids=lambda r: f"{r.api_version}/{r.kind}")
def test_patch_operations_say_what_kubectl_apply_looks_for(r: Resource) -> None:
    """apply asks every PATCH of the kind for `fieldValidation` (else it validates on the client,
    from /openapi/v2) and for strategic merge patch (else it computes the patch without OpenAPI)."""
    doc = _doc(_doc_path(r))
    gvk = _gvk(r.group, r.version, r.kind)
    patches = [item["patch"] for item in doc["paths"].values()
               if "patch" in item and item["patch"]["x-kubernetes-group-version-kind"] == gvk]
    assert patches
    for op in patches:
        names = {p["name"] for p in op["parameters"]}
        assert {"dryRun", "fieldManager", "fieldValidation", "force"} <= names
        assert "application/strategic-merge-patch+json" in op["requestBody"]["content"]


def test_pod_paths_match_upstream_operations() -> None:
    paths = _doc("api/v1")["paths"]
    item = paths["/api/v1/namespaces/{namespace}/pods/{name}"]
    assert [p["name"] for p in item["parameters"]] == ["name", "namespace", "pretty"]
    assert item["get"]["operationId"] == "readCoreV1NamespacedPod"
    assert item["delete"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.core.v1.Pod"}
    collection = paths["/api/v1/namespaces/{namespace}/pods"]
    assert collection["get"]["x-kubernetes-action"] == "list"
    assert collection["delete"]["operationId"] == "deleteCoreV1CollectionNamespacedPod"
    assert paths["/api/v1/pods"]["get"]["operationId"] == "listCoreV1PodForAllNamespaces"
    eviction = paths["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]
    assert eviction["post"]["x-kubernetes-group-version-kind"] == _gvk("policy", "v1", "Eviction")
    assert eviction["post"]["description"] == "create eviction of a Pod"
    assert {p["name"] for p in eviction["parameters"]} == {"dryRun", "fieldManager", "fieldValidation", "name",
                                                           "namespace", "pretty"}
    token = paths["/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"]
    assert list(token) == ["post", "parameters"]
    assert token["post"]["operationId"] == "createCoreV1NamespacedServiceAccountToken"
    assert token["post"]["description"] == "create token of a ServiceAccount"
    assert token["post"]["x-kubernetes-group-version-kind"] == _gvk("authentication.k8s.io", "v1", "TokenRequest")
    node = paths["/api/v1/nodes/{name}"]
    assert node["delete"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Status"}
    assert "delete" not in paths["/api/v1/namespaces"]  # namespaces have no deletecollection
    scale = _doc("apis/apps/v1")["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
    assert scale["put"]["operationId"] == "replaceAppsV1NamespacedDeploymentScale"
    assert scale["get"]["x-kubernetes-group-version-kind"] == _gvk("autoscaling", "v1", "Scale")
    rbac = _doc("apis/rbac.authorization.k8s.io/v1")["paths"]["/apis/rbac.authorization.k8s.io/v1/clusterroles"]
    assert rbac["get"]["operationId"] == "listRbacAuthorizationV1ClusterRole"
    assert rbac["get"]["tags"] == ["rbacAuthorization_v1"]


# ---- discovery -----------------------------------------------------------------------------------


def test_groups_are_exactly_those_of_the_served_resources() -> None:
    assert set(GROUPS) == {r.group for r in RESOURCES if r.group}
    assert [g["name"] for g in discovery.api_group_list()["groups"]] == list(GROUPS)
    assert discovery.api_group("apps") == {
        "kind": "APIGroup", "apiVersion": "v1", "name": "apps",
        "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
        "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}
    assert discovery.api_group("kubesched.io") is None
    assert discovery.api_resource_list("apps", "v2") is None


def test_resource_lists_carry_subresources_as_upstream_lists_them() -> None:
    core = discovery.api_resource_list("", "v1")
    assert core is not None and "apiVersion" not in core and core["groupVersion"] == "v1"
    by_name = {e["name"]: e for e in core["resources"]}
    assert [e["name"] for e in core["resources"]] == sorted(by_name)
    assert by_name["pods"]["shortNames"] == ["po"] and by_name["pods"]["categories"] == ["all"]
    assert by_name["pods"]["storageVersionHash"] == "xPOwRZ+Yhw8="  # what kube-apiserver publishes
    assert by_name["pods/eviction"] == {"name": "pods/eviction", "singularName": "", "namespaced": True,
                                        "group": "policy", "version": "v1", "kind": "Eviction",
                                        "verbs": ["create"]}
    assert by_name["pods/binding"] == {"name": "pods/binding", "singularName": "", "namespaced": True,
                                       "kind": "Binding", "verbs": ["create"]}
    assert by_name["pods/status"]["kind"] == "Pod" and by_name["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert by_name["serviceaccounts/token"] == {"name": "serviceaccounts/token", "singularName": "", "namespaced": True,
                                                "group": "authentication.k8s.io", "version": "v1",
                                                "kind": "TokenRequest", "verbs": ["create"]}
    assert "storageVersionHash" not in by_name["bindings"]
    apps = discovery.api_resource_list("apps", "v1")
    assert apps is not None and apps["apiVersion"] == "v1"
    scale = next(e for e in apps["resources"] if e["name"] == "deployments/scale")
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
    events = discovery.api_resource_list("events.k8s.io", "v1")
    assert events is not None  # stored as core Events: one storage version hash for both
    assert events["resources"][0]["storageVersionHash"] == by_name["events"]["storageVersionHash"]


def test_aggregated_discovery_lists_what_the_legacy_form_lists() -> None:
    """Read back as client-go splits it, the aggregated form gives the same resources."""
    for core, groups in ((True, [""]), (False, list(GROUPS))):
        agg = discovery.aggregated_discovery(core)
        assert [item["metadata"].get("name", "") for item in agg["items"]] == groups
        for item in agg["items"]:
            group = item["metadata"].get("name", "")
            for ver in item["versions"]:
                legacy = discovery.api_resource_list(group, ver["version"])
                assert legacy is not None
                expected = {(e["name"], e.get("group", group), e.get("version", ver["version"]), e["kind"],
                             e["namespaced"], tuple(e["verbs"])) for e in legacy["resources"]}
                got = set()
                for r in ver["resources"]:
                    k = r["responseKind"]
                    got.add((r["resource"], k["group"], k["version"], k["kind"], r["scope"] == "Namespaced",
                             tuple(r["verbs"])))
                    for s in r.get("subresources", []):
                        k = s["responseKind"]
                        got.add((f"{r['resource']}/{s['subresource']}", k["group"], k["version"], k["kind"],
                                 r["scope"] == "Namespaced", tuple(s["verbs"])))
                assert got == expected


@pytest.mark.parametrize(("accept", "aggregated"), [
    (KUBECTL_ACCEPT, True),
    ("application/json, */*", False),
    (None, False),
    ("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json", False),
    ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer", True),
    ("application/json;q=0.9,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", True),
    ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0,application/json", False),
])
def test_accept_header_chooses_the_discovery_form(accept: str | None, aggregated: bool) -> None:
    assert discovery.wants_aggregated(accept) is aggregated


def test_version_is_v1_35_with_build_metadata() -> None:
    v = discovery.version()
    assert (v["major"], v["minor"]) == ("1", "35")
    assert re.fullmatch(r"v1\.35\.0\+[0-9A-Za-z.-]+", v["gitVersion"])  # semver build metadata


# ---- the real kubectl ----------------------------------------------------------------------------

_LAST_APPLIED = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
                 "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                          "template": {"metadata": {"labels": {"app": "web"}},
                                       "spec": {"containers": [{"name": "c", "image": "nginx:1"},
                                                               {"name": "d", "image": "busybox"}]}}}}


class _StandIn:
    """Discovery, OpenAPI, an empty pod list and one Deployment, on loopback in a thread."""

    def __init__(self, aggregated: bool) -> None:
        self.aggregated = aggregated
        self.requests: list[str] = []
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.loop = asyncio.new_event_loop()
        self.port = 0

    def _json(self, answer: Any, content_type: str = "application/json", code: int = 200) -> web.Response:
        return web.Response(body=json.dumps(answer).encode(), status=code, headers={"Content-Type": content_type})

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(request.path)
        parts = [p for p in request.path.split("/") if p]
        accept = request.headers.get("Accept")
        if parts == ["version"]:
            return self._json(discovery.version())
        if parts in (["api"], ["apis"]):
            if self.aggregated and discovery.wants_aggregated(accept):
                return self._json(discovery.aggregated_discovery(parts == ["api"]),
                                  discovery.AGGREGATED_CONTENT_TYPE)
            return self._json(discovery.api_versions(request.host) if parts == ["api"]
                              else discovery.api_group_list())
        found: Any = None
        if parts == ["openapi", "v3"]:
            found = openapi.openapi_v3_index()
        elif parts[:2] == ["openapi", "v3"]:
            data = openapi.openapi_v3_document("/".join(parts[2:]))
            if data is not None:
                return web.Response(body=data, headers={"Content-Type": "application/json"})
        elif len(parts) == 2 and parts[0] == "apis":
            found = discovery.api_group(parts[1])
        elif parts == ["api", "v1"] or (len(parts) == 3 and parts[0] == "apis"):
            found = discovery.api_resource_list(*(("", "v1") if parts[0] == "api" else parts[1:]))
        elif parts == ["api", "v1", "namespaces", "default", "pods"]:
            found = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []}
        elif parts == ["apis", "apps", "v1", "namespaces", "default", "deployments", "web"]:
            if request.method == "PATCH":
                self.patches.append((request.headers["Content-Type"], json.loads(await request.read())))
            found = json.loads(json.dumps(_LAST_APPLIED))
            found["metadata"].update(uid="5d1e8b7c", resourceVersion="7", annotations={
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(_LAST_APPLIED)})
        if found is None:
            return self._json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": "the server could not find the requested resource",
                               "reason": "NotFound", "details": {}, "code": 404}, code=404)
        return self._json(found)

    def __enter__(self) -> _StandIn:
        ready = threading.Event()
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app)

        def serve() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(self.runner.setup())
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            self.loop.run_until_complete(site.start())
            self.port = self.runner.addresses[0][1]
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        assert ready.wait(10)
        return self

    def __exit__(self, *_: object) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


class _Kubectl:
    def __init__(self, server: _StandIn, home: Path) -> None:
        self.server = server
        self.home = home
        self.config = home / "kubeconfig"
        self.config.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "t",
            "clusters": [{"name": "t", "cluster": {"server": f"http://127.0.0.1:{server.port}"}}],
            "users": [{"name": "t", "user": {}}],
            "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t", "namespace": "default"}}]}))

    def __call__(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(["kubectl", "--kubeconfig", str(self.config), "--cache-dir", str(self.home / "cache"),
                               *args], capture_output=True, text=True, timeout=60, cwd=self.home)
        if ok:
            assert done.returncode == 0, done.stderr
        return done


needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


@pytest.fixture(scope="module", params=[True, False], ids=["aggregated", "legacy"])
def any_discovery(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Kubectl]:
    """kubectl on a server speaking aggregated discovery, then on one speaking only the legacy form."""
    with _StandIn(aggregated=request.param) as server:
        yield _Kubectl(server, tmp_path_factory.mktemp("kubectl"))


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Kubectl]:
    with _StandIn(aggregated=True) as server:
        yield _Kubectl(server, tmp_path_factory.mktemp("kubectl"))


def _table(text: str) -> dict[str, dict[str, str]]:
    """`kubectl api-resources` rows by NAME and APIVERSION, cut at the header's column starts."""
    header, *rows = text.splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    names = header.split()
    out = {}
    for row in rows:
        cells = {n: row[a:b].strip() for n, a, b in zip(names, starts, [*starts[1:], None], strict=True)}
        out[f"{cells['NAME']} {cells['APIVERSION']}"] = cells
    return out


@needs_kubectl
def test_kubectl_api_resources_and_versions(any_discovery: _Kubectl) -> None:
    kubectl = any_discovery
    rows = _table(kubectl("api-resources").stdout)
    assert rows["pods v1"] == {"NAME": "pods", "SHORTNAMES": "po", "APIVERSION": "v1", "NAMESPACED": "true",
                               "KIND": "Pod"}
    assert rows["deployments apps/v1"]["SHORTNAMES"] == "deploy"
    assert rows["poddisruptionbudgets policy/v1"]["KIND"] == "PodDisruptionBudget"
    assert rows["poddisruptionbudgets policy/v1"]["SHORTNAMES"] == "pdb"
    assert rows["nodes v1"]["NAMESPACED"] == "false"
    assert rows["events events.k8s.io/v1"]["KIND"] == "Event"
    # One row per resource of a group, in its preferred version (autoscaling/v1's HPA is not listed);
    # subresources are not rows.
    assert len(rows) == len({(r.group, r.plural) for r in RESOURCES})
    assert rows["horizontalpodautoscalers autoscaling/v2"]["SHORTNAMES"] == "hpa"
    wide = _table(kubectl("api-resources", "-o", "wide", "--api-group=apps").stdout)
    assert wide["deployments apps/v1"]["CATEGORIES"] == "all"
    assert wide["deployments apps/v1"]["VERBS"] == "create,delete,deletecollection,get,list,patch,update,watch"
    versions = kubectl("api-versions").stdout.split()
    assert versions == sorted({r.api_version for r in RESOURCES})
    assert kubectl("get", "pods").stderr.strip() == "No resources found in default namespace."
    assert "/openapi/v2" not in kubectl.server.requests


@needs_kubectl
def test_kubectl_version_reads_the_server_version(any_discovery: _Kubectl) -> None:
    kubectl = any_discovery
    out = json.loads(kubectl("version", "-o", "json").stdout)
    assert out["serverVersion"]["gitVersion"] == discovery.version()["gitVersion"]


@needs_kubectl
def test_kubectl_explain_prints_field_descriptions(kubectl: _Kubectl) -> None:
    spec = kubectl("explain", "pod.spec").stdout
    assert spec.startswith("KIND:       Pod\nVERSION:    v1\n\nFIELD: spec <PodSpec>\n")
    assert "PodSpec is a description of a pod." in spec
    assert "  containers\t<[]Container> -required-\n    List of containers belonging to the pod." in spec
    assert "  nodeName\t<string>\n" in spec
    replicas = kubectl("explain", "deployment.spec.replicas").stdout
    assert replicas.startswith("GROUP:      apps\nKIND:       Deployment\nVERSION:    v1\n\nFIELD: replicas <integer>")
    assert "Number of desired pods." in replicas
    assert "FIELD: minAvailable <IntOrString>" in kubectl("explain", "pdb.spec.minAvailable").stdout
    assert "FIELD: limits <map[string]Quantity>" in kubectl("explain", "po.spec.containers.resources.limits").stdout
    missing = kubectl("explain", "pod.spec.nonsense", ok=False)
    assert missing.returncode != 0 and 'field "nonsense" does not exist' in missing.stderr


@needs_kubectl
def test_kubectl_apply_patches_with_the_openapi_v3_merge_keys(kubectl: _Kubectl, tmp_path: Path) -> None:
    """Client-side apply on an existing object: kubectl learns from the v3 document that the
    server validates fields and takes strategic merge patches, and merges containers by name."""
    manifest = json.loads(json.dumps(_LAST_APPLIED))
    manifest["spec"]["replicas"] = 3
    manifest["spec"]["template"]["spec"]["containers"] = [{"name": "d", "image": "busybox"},
                                                          {"name": "c", "image": "nginx:2"}]
    (tmp_path / "web.json").write_text(json.dumps(manifest))
    before = len(kubectl.server.requests)
    done = kubectl("apply", "-f", str(tmp_path / "web.json"))
    assert done.stdout.strip() == "deployment.apps/web configured" and "warning" not in done.stderr
    content_type, patch = kubectl.server.patches[-1]
    assert content_type == "application/strategic-merge-patch+json"
    assert patch["spec"]["replicas"] == 3
    assert patch["spec"]["template"]["spec"] == {"$setElementOrder/containers": [{"name": "d"}, {"name": "c"}],
                                                 "containers": [{"image": "nginx:2", "name": "c"}]}
    assert "/openapi/v2" not in kubectl.server.requests[before:]
