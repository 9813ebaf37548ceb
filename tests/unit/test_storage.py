"""Storage: which volume a claim gets, where a pod with claims fits, how the PV controller binds
and provisions, and the API server's checks on storage objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubesched.api.errors import InputError
from kubesched.api.loader import load_paths
from kubesched.api.storage import find_matching_volume, node_affinity_matches, topology_matches
from kubesched.cluster.cluster import Cluster
from kubesched.input.validation import validate
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.config import SchedulerConfig, build_profiles
from kubesched.scheduler.framework import ConfigError, CycleState, Handle
from kubesched.scheduler.plugins.nodevolumelimits import attach_limit_key
from kubesched.scheduler.plugins.volumebinding import BIND_CONFLICT, NODE_CONFLICT, PV_NOT_EXIST, VolumeState
from kubesched.scheduler.types import Code, NodeInfo, PodInfo


def pv(name: str, size: str, *, modes: tuple[str, ...] = ("ReadWriteOnce",), cls: str = "fast",
       phase: str = "Available", labels: dict[str, str] | None = None, zone: str | None = None,
       claim: dict[str, str] | None = None, mode: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"storageClassName": cls, "accessModes": list(modes), "capacity": {"storage": size},
                            "csi": {"driver": "d", "volumeHandle": name}}
    if zone is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": [zone]}]}]}}
    if claim is not None:
        spec["claimRef"] = claim
    if mode is not None:
        spec["volumeMode"] = mode
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": labels or {}, "resourceVersion": "1"},
            "spec": spec, "status": {"phase": phase}}


def pvc(name: str, size: str, *, modes: tuple[str, ...] = ("ReadWriteOnce",), cls: str | None = "fast",
        selector: dict[str, Any] | None = None, uid: str = "", volume: str | None = None,
        annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}
    if cls is not None:
        spec["storageClassName"] = cls
    if selector is not None:
        spec["selector"] = selector
    if volume is not None:
        spec["volumeName"] = volume
    meta: dict[str, Any] = {"name": name, "namespace": "default", "annotations": annotations or {}}
    if uid:
        meta["uid"] = uid
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def names(volume: dict[str, Any] | None) -> str | None:
    return None if volume is None else volume["metadata"]["name"]


# --- FindMatchingVolume ----------------------------------------------------------------------------

def test_smallest_volume_that_fits_wins() -> None:
    volumes = [pv("big", "20Gi"), pv("small", "5Gi"), pv("fit", "10Gi"), pv("also-fit", "12Gi")]
    assert names(find_matching_volume(pvc("c", "8Gi"), volumes, None, set(), False)) == "fit"


@pytest.mark.parametrize(("volume", "why"), [
    (pv("x", "10Gi", cls="slow"), "another class"),
    (pv("x", "10Gi", phase="Released"), "not Available"),
    (pv("x", "10Gi", mode="Block"), "another volume mode"),
    (pv("x", "10Gi", labels={"tier": "slow"}), "labels not selected"),
    (pv("x", "10Gi", claim={"namespace": "default", "name": "other"}), "claimed by another claim"),
    (pv("x", "4Gi"), "too small"),
])
def test_volumes_a_claim_cannot_get(volume: dict[str, Any], why: str) -> None:
    claim = pvc("c", "8Gi", selector={"matchLabels": {"tier": "fast"}})
    volume["metadata"]["labels"].setdefault("tier", "fast")
    assert find_matching_volume(claim, [volume], None, set(), False) is None, why


def test_a_volume_pre_bound_to_the_claim_wins_over_a_smaller_one() -> None:
    claim = pvc("c", "1Gi", uid="u1")
    volumes = [pv("small", "1Gi"), pv("mine", "50Gi", phase="Bound", claim={"namespace": "default", "name": "c"})]
    assert names(find_matching_volume(claim, volumes, None, set(), False)) == "mine"
    # ... even for the PV controller with a claim waiting for its first consumer.
    assert names(find_matching_volume(claim, volumes, None, set(), True)) == "mine"
    # A claimRef with another claim's uid is another claim's.
    other = pv("theirs", "50Gi", claim={"namespace": "default", "name": "c", "uid": "u2"})
    assert find_matching_volume(claim, [other], None, set(), False) is None


def test_the_scheduler_checks_node_affinity_and_access_modes_the_controller_does_not() -> None:
    claim = pvc("c", "1Gi", modes=("ReadWriteOnce", "ReadOnlyMany"))
    volumes = [pv("a", "1Gi", zone="a"), pv("b", "2Gi", zone="b", modes=("ReadWriteOnce", "ReadOnlyMany"))]
    assert names(find_matching_volume(claim, volumes, {"zone": "b"}, set(), True)) == "b"
    assert find_matching_volume(claim, volumes[:1], {"zone": "b"}, set(), True) is None
    assert find_matching_volume(claim, volumes, {"zone": "b"}, {"b"}, True) is None  # chosen for another claim
    assert names(find_matching_volume(claim, volumes, None, set(), False)) == "a"
    # The PV controller leaves a claim waiting for its first consumer to the scheduler.
    assert find_matching_volume(claim, volumes, None, set(), True) is None


def test_a_pre_bound_volume_that_does_not_admit_the_node_means_no_match() -> None:
    claim = pvc("c", "1Gi", uid="u1")
    volumes = [pv("mine", "1Gi", zone="a", claim={"namespace": "default", "name": "c", "uid": "u1"}),
               pv("free", "1Gi", zone="b")]
    assert find_matching_volume(claim, volumes, {"zone": "b"}, set(), True) is None


def test_node_affinity_ignores_match_fields_as_upstream_does() -> None:
    volume = pv("x", "1Gi")
    volume["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}
    assert node_affinity_matches(volume, {})
    assert node_affinity_matches(pv("y", "1Gi"), {"anything": "x"})
    assert not node_affinity_matches(pv("z", "1Gi", zone="a"), {"zone": "b"})


@pytest.mark.parametrize(("terms", "labels", "ok"), [
    (None, {}, True),
    ([{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}], {"zone": "b"}, True),
    ([{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}], {"zone": "b"}, False),
    ([{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}], {}, False),
    ([{"matchLabelExpressions": []}], {"zone": "a"}, False),  # an empty term admits nothing
    ([{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}, {"key": "rack", "values": ["1"]}]},
      {"matchLabelExpressions": [{"key": "zone", "values": ["c"]}]}], {"zone": "c"}, True),
])
def test_allowed_topologies(terms: list[dict[str, Any]] | None, labels: dict[str, str], ok: bool) -> None:
    assert topology_matches(terms, labels) is ok


# --- VolumeBinding's Filter ------------------------------------------------------------------------

class Objects(Handle):
    """A handle whose listers hold the given objects."""

    def __init__(self, *objs: dict[str, Any]) -> None:
        super().__init__(Cache())
        self.objs = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objs}

    def get_object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objs.get((kind, namespace, name))

    def list_objects(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return [o for (k, _, _), o in self.objs.items() if k == kind]


def volume_binding(handle: Handle) -> Any:
    profile = build_profiles(SchedulerConfig(), handle)["default-scheduler"]
    return next(pl for pl in profile.at("filter") if pl.name == "VolumeBinding")


def node(name: str, zone: str) -> NodeInfo:
    return NodeInfo.of({"metadata": {"name": name, "labels": {"zone": zone}}}, 0)


WFFC = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"},
        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}


def pod_with(*volumes: dict[str, Any]) -> PodInfo:
    return PodInfo.of({"metadata": {"name": "p", "namespace": "default", "uid": "pod-uid"},
                       "spec": {"containers": [{"name": "c"}], "volumes": list(volumes)}})


CLAIM = {"name": "v", "persistentVolumeClaim": {"claimName": "c"}}
EPHEMERAL = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}


@pytest.mark.parametrize(("claim", "volume", "message"), [
    (None, CLAIM, 'persistentvolumeclaim "c" not found'),
    (None, EPHEMERAL, 'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"'),
    ({**pvc("c", "1Gi"), "status": {"phase": "Lost"}, "spec": {"volumeName": "gone"}}, CLAIM,
     'persistentvolumeclaim "c" bound to non-existent persistentvolume "gone"'),
    ({**pvc("c", "1Gi"), "metadata": {"name": "c", "namespace": "default", "deletionTimestamp": "2026-01-01T00:00:00Z"}},
     CLAIM, 'persistentvolumeclaim "c" is being deleted'),
    (pvc("p-scratch", "1Gi"), EPHEMERAL, "PVC default/p-scratch was not created for pod default/p (pod is not owner)"),
    (pvc("c", "1Gi", cls="immediate"), CLAIM, "pod has unbound immediate PersistentVolumeClaims"),
    (pvc("c", "1Gi", volume="pre-bound"), CLAIM, "pod has unbound immediate PersistentVolumeClaims"),
])
def test_volume_binding_pre_filter_rejects_as_unresolvable(claim: dict[str, Any] | None, volume: dict[str, Any],
                                                           message: str) -> None:
    immediate = {**WFFC, "metadata": {"name": "immediate"}, "volumeBindingMode": "Immediate"}
    plugin = volume_binding(Objects(WFFC, immediate, *([claim] if claim else [])))
    _, status = plugin.pre_filter(CycleState(), pod_with(volume), [])
    assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))


def test_claims_of_a_pod_get_distinct_volumes_smallest_claim_first() -> None:
    claims = [pvc("big", "8Gi"), pvc("small", "1Gi")]
    volumes = [pv("v10", "10Gi", zone="a"), pv("v2", "2Gi", zone="a"), pv("v9", "9Gi", zone="b")]
    plugin = volume_binding(Objects(WFFC, *claims, *volumes))
    state = VolumeState(waiting=claims, volumes={"fast": volumes})
    found, reasons = plugin.find_pod_volumes(state, node("n1", "a"))
    assert reasons == []
    assert [(v["metadata"]["name"], c["metadata"]["name"]) for v, c in found.static] == [("v2", "small"),
                                                                                         ("v10", "big")]
    found, reasons = plugin.find_pod_volumes(state, node("n2", "b"))
    assert reasons == [BIND_CONFLICT]  # one volume in zone b, two claims, and nothing to provision with


def test_filter_reasons_come_in_upstream_order() -> None:
    bound = pvc("bound", "1Gi", volume="gone", annotations={"pv.kubernetes.io/bind-completed": "yes"})
    affine = pvc("affine", "1Gi", volume="in-a", annotations={"pv.kubernetes.io/bind-completed": "yes"})
    sent = pvc("sent", "1Gi", annotations={"volume.kubernetes.io/selected-node": "n9"})
    volumes = [pv("in-a", "1Gi", zone="a", phase="Bound")]
    plugin = volume_binding(Objects(WFFC, bound, affine, sent, *volumes))
    # A claim sent to another node for provisioning fits only there; the missing volume is reported too.
    state = VolumeState(bound=[affine, bound], waiting=[sent])
    assert plugin.find_pod_volumes(state, node("n1", "b"))[1] == [NODE_CONFLICT, BIND_CONFLICT]
    state = VolumeState(bound=[bound, affine])
    assert plugin.find_pod_volumes(state, node("n1", "a"))[1] == [PV_NOT_EXIST]


def test_provisioning_needs_a_provisioner_and_a_node_the_class_allows() -> None:
    zonal = {**WFFC, "metadata": {"name": "zonal"}, "provisioner": "ebs.csi.aws.com",
             "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]}
    claim = pvc("c", "1Gi", cls="zonal")
    plugin = volume_binding(Objects(zonal, claim))
    state = VolumeState(waiting=[claim])
    found, reasons = plugin.find_pod_volumes(state, node("n1", "a"))
    assert (reasons, [c["metadata"]["name"] for c in found.dynamic]) == ([], ["c"])
    assert plugin.find_pod_volumes(state, node("n2", "b"))[1] == [BIND_CONFLICT]
    no_provisioner = pvc("c", "1Gi")  # class "fast": kubernetes.io/no-provisioner
    assert volume_binding(Objects(WFFC, no_provisioner)).find_pod_volumes(
        VolumeState(waiting=[no_provisioner]), node("n1", "a"))[1] == [BIND_CONFLICT]


@pytest.mark.parametrize(("args", "message"), [
    ({"bindTimeoutSeconds": -10},
     "pluginConfig[VolumeBinding].args.bindTimeoutSeconds: Invalid value: -10: invalid BindTimeoutSeconds, "
     "should not be a negative value"),
    ({"shape": [{"utilization": 0, "score": 10}]},
     'pluginConfig[VolumeBinding].args.shape: Invalid value: [{"utilization":0,"score":10}]: unexpected field '
     "`shape`, remove it or turn on the feature gate StorageCapacityScoring"),
])
def test_volume_binding_args_are_validated_as_upstream_does(args: dict[str, Any], message: str) -> None:
    config = SchedulerConfig.from_object({"profiles": [{"pluginConfig": [{"name": "VolumeBinding", "args": args}]}]})
    with pytest.raises(ConfigError) as e:
        build_profiles(config, Handle(Cache()))
    assert str(e.value) == f"profiles[0].{message}"


def test_bind_timeout_zero_is_valid() -> None:
    config = SchedulerConfig.from_object({"profiles": [{"pluginConfig": [
        {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 0}}]}]})
    assert volume_binding_of(config).bind_timeout == 0
    assert volume_binding_of(SchedulerConfig()).bind_timeout == 600


def volume_binding_of(config: SchedulerConfig) -> Any:
    profile = build_profiles(config, Handle(Cache()))["default-scheduler"]
    return next(pl for pl in profile.at("preBind") if pl.name == "VolumeBinding")


def test_default_profile_runs_the_volume_filters_at_upstream_positions() -> None:
    profile = build_profiles(SchedulerConfig(), Handle(Cache()))["default-scheduler"]
    filters = [pl.name for pl in profile.at("filter")]
    assert filters[filters.index("NodeResourcesFit") + 1:filters.index("PodTopologySpread")] == [
        "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"]
    assert [pl.name for pl in profile.at("reserve")] == ["VolumeBinding", "DynamicResources"]
    assert [pl.name for pl in profile.at("preBind")] == ["VolumeBinding", "DynamicResources"]


def test_attach_limit_keys() -> None:
    assert attach_limit_key("ebs.csi.aws.com") == "attachable-volumes-csi-ebs.csi.aws.com"
    long_name = "a-very-long-csi-driver-name.storage.example.com"
    key = attach_limit_key(long_name)
    assert key.startswith("attachable-volumes-csi-a-very-long-csi-driv") and len(key) == 23 + 23 + 16


def test_pod_claims_are_counted_in_the_cache_for_read_write_once_pod() -> None:
    cache = Cache()
    cache.add_node({"metadata": {"name": "n1"}})
    pod = PodInfo.of({"metadata": {"name": "p", "namespace": "ns", "uid": "u"},
                      "spec": {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}},
                                           {"name": "e", "emptyDir": {}}]}})
    assert pod.claims == ("c",)
    cache.add_pod(pod, "n1")
    assert cache.claim_users == {"ns/c": 1}
    cache.remove_pod("u")
    assert cache.claim_users == {}


# --- the PV controller -----------------------------------------------------------------------------

def run(*objs: dict[str, Any], until: float = 60) -> Cluster:
    cluster = Cluster()
    for obj in objs:
        cluster.create(obj)
    cluster.run(until)
    return cluster


def test_the_controller_prefers_the_fewest_access_modes_then_the_smallest_volume() -> None:
    immediate = {**WFFC, "volumeBindingMode": "Immediate"}
    cluster = run(immediate, pv("rwo-rox", "5Gi", modes=("ReadWriteOnce", "ReadOnlyMany")), pv("rwo-big", "50Gi"),
                  pv("rwo", "10Gi"), pvc("c", "1Gi"))
    claim = cluster.store.get("PersistentVolumeClaim", "default", "c")
    assert claim["spec"]["volumeName"] == "rwo"
    assert claim["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"}}
    assert claim["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    volume = cluster.store.get("PersistentVolume", "", "rwo")
    assert volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
    assert volume["status"]["phase"] == "Bound"
    assert cluster.store.get("PersistentVolume", "", "rwo-rox")["status"]["phase"] == "Available"


def test_deleting_a_claim_releases_or_deletes_its_volume_by_reclaim_policy() -> None:
    provisioned = {**WFFC, "metadata": {"name": "ebs"}, "provisioner": "ebs.csi.aws.com",
                   "volumeBindingMode": "Immediate"}
    retained = pv("kept", "1Gi", cls="manual")
    retained["spec"]["persistentVolumeReclaimPolicy"] = "Retain"
    cluster = run(provisioned, retained, pvc("dyn", "1Gi", cls="ebs"), pvc("static", "1Gi", cls="manual"))
    dyn = cluster.store.get("PersistentVolumeClaim", "default", "dyn")
    made = dyn["spec"]["volumeName"]
    assert made == f"pvc-{dyn['metadata']['uid']}"
    assert cluster.store.get("PersistentVolume", "", made)["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    cluster.api.delete("PersistentVolumeClaim", "default", "dyn")
    cluster.api.delete("PersistentVolumeClaim", "default", "static")
    cluster.run(120)
    assert cluster.store.get("PersistentVolume", "", made) is None
    assert cluster.store.get("PersistentVolume", "", "kept")["status"]["phase"] == "Released"


def test_a_claim_without_a_class_gets_the_default_one() -> None:
    default = {**WFFC, "metadata": {"name": "std", "annotations": {"storageclass.kubernetes.io/is-default-class":
                                                                   "true"}}}
    cluster = run(default, pvc("c", "1Gi", cls=None), pvc("explicitly-none", "1Gi", cls=""))
    assert cluster.store.get("PersistentVolumeClaim", "default", "c")["spec"]["storageClassName"] == "std"
    assert cluster.store.get("PersistentVolumeClaim", "default", "explicitly-none")["spec"]["storageClassName"] == ""


def test_a_snapshot_s_bound_claims_and_volumes_are_left_as_they_are() -> None:
    claim = pvc("c", "1Gi", uid="u1", volume="v", annotations={"pv.kubernetes.io/bind-completed": "yes"})
    claim["status"] = {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}
    volume = pv("v", "1Gi", phase="Bound", claim={"namespace": "default", "name": "c", "uid": "u1"})
    cluster = Cluster()
    for obj in (WFFC, volume, claim):
        cluster.restore(obj)
    versions = {kind: cluster.store.get(kind, ns, "v" if kind == "PersistentVolume" else "c")["metadata"]
                ["resourceVersion"] for kind, ns in (("PersistentVolume", ""), ("PersistentVolumeClaim", "default"))}
    cluster.run(3600)
    for kind, ns in (("PersistentVolume", ""), ("PersistentVolumeClaim", "default")):
        obj = cluster.store.get(kind, ns, "v" if kind == "PersistentVolume" else "c")
        assert obj["metadata"]["resourceVersion"] == versions[kind], f"{kind} was written"


# --- validation ------------------------------------------------------------------------------------

@pytest.fixture()
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def problems(text: str) -> list[str]:
    Path("in.yaml").write_text(text)
    try:
        validate(load_paths(["in.yaml"]))
    except InputError as e:
        return [line.removeprefix("in.yaml doc 1: ") for line in str(e).splitlines()]
    return []


@pytest.mark.usefixtures("_in_tmp")
@pytest.mark.parametrize(("doc", "expected"), [
    ("kind: PersistentVolume\nmetadata: {name: v}\nspec: {}",
     ["spec.accessModes: Required value", "spec.capacity: Required value",
      "spec.capacity: Unsupported value: {}: supported values: \"storage\"",
      "spec: Required value: must specify a volume type"]),
    ("kind: PersistentVolume\nmetadata: {name: v}\nspec: {accessModes: [ReadWriteOncePod, ReadWriteMany], "
     "capacity: {storage: '0'}, local: {path: /x}, nfs: {server: s, path: /}, persistentVolumeReclaimPolicy: Keep}",
     ["spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
      'spec.capacity[storage]: Invalid value: "0": must be greater than zero',
      'spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", '
      '"Retain"',
      "spec.local: Forbidden: may not specify more than 1 volume type",
      "spec.nodeAffinity: Required value: Local volume requires node affinity"]),
    ("kind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {accessModes: [ReadWriteSometimes]}",
     ['spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", '
      '"ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"', "spec.resources[storage]: Required value"]),
    ("kind: PersistentVolumeClaim\nmetadata: {name: c}\nspec: {resources: {requests: {storage: 1Gi}}, "
     "volumeMode: Raw, storageClassName: Fast_SSD}",
     ["spec.accessModes: Required value: at least 1 access mode is required",
      'spec.storageClassName: Invalid value: "Fast_SSD": a lowercase RFC 1123 subdomain must consist of lower case '
      "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
      'spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"']),
    ("apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: s}\nvolumeBindingMode: Later\n"
     "reclaimPolicy: Recycle\nallowedTopologies: [{matchLabelExpressions: [{key: zone, values: [a, a]}]}, {}]",
     ["provisioner: Required value",
      'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"',
      'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"',
      'allowedTopologies[0].matchLabelExpressions[0].values[1]: Duplicate value: "a"',
      'allowedTopologies[1].matchLabelExpressions: Duplicate value: ""']),
    ("apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: s, annotations: "
     "{sim.kubesched.io/provisioning-time: soon}}\nprovisioner: x",
     ['metadata.annotations.sim.kubesched.io/provisioning-time: "soon" is not a duration']),
    ("apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: n1}\nspec: {drivers: [{name: d, nodeID: i, "
     "allocatable: {count: -1}}, {name: d}]}",
     ["spec.drivers[0].allocatable.count: Invalid value: -1: must be greater than or equal to 0",
      'spec.drivers[1].name: Duplicate value: "d"', "spec.drivers[1].nodeID: Required value"]),
    ("kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}], volumes: [{name: a, persistentVolumeClaim: {}},"
     " {name: a, emptyDir: {}, configMap: {name: x}}]}",
     ["spec.volumes[0].persistentVolumeClaim.claimName: Required value", 'spec.volumes[1].name: Duplicate value: "a"',
      "spec.volumes[1].configMap: Forbidden: may not specify more than 1 volume type"]),
])
def test_the_api_server_s_checks_on_storage_objects(doc: str, expected: list[str]) -> None:
    if not doc.startswith("apiVersion"):
        doc = "apiVersion: v1\n" + doc
    assert problems(doc) == expected
