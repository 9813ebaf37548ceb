"""PersistentVolumes, their claims and storage classes: the rules the scheduler's volume plugins and
the PV controller share (component-helpers/storage/volume and the core v1 helpers upstream).

A claim is *fully bound* once it names a volume and carries `pv.kubernetes.io/bind-completed`;
until then it is matched to an available volume (the smallest that fits, of the same class, access
modes and volume mode, selected by its label selector and, for the scheduler, admitting the node),
or provisioned by its class's provisioner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any

from kubesched.api.objects import Obj, deep_copy
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.api.selectors import LabelSelector, NodeSelector, SelectorError

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
ANN_BETA_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
ZONE_LABEL = "topology.kubernetes.io/zone"

READ_WRITE_ONCE_POD = "ReadWriteOncePod"
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", READ_WRITE_ONCE_POD)
VOLUME_MODES = ("Block", "Filesystem")
IMMEDIATE, WAIT_FOR_FIRST_CONSUMER = "Immediate", "WaitForFirstConsumer"

# In-tree volume plugins and the CSI drivers they migrated to (csi-translation-lib); their volumes
# count against the CSI driver's attach limit. The volume key, for inline volumes, names the disk.
IN_TREE_DRIVERS = {
    "awsElasticBlockStore": ("kubernetes.io/aws-ebs", "ebs.csi.aws.com", "volumeID"),
    "gcePersistentDisk": ("kubernetes.io/gce-pd", "pd.csi.storage.gke.io", "pdName"),
    "azureDisk": ("kubernetes.io/azure-disk", "disk.csi.azure.com", "diskURI"),
    "cinder": ("kubernetes.io/cinder", "cinder.csi.openstack.org", "volumeID"),
}
CSI_DRIVER_OF_PROVISIONER = {plugin: driver for plugin, driver, _ in IN_TREE_DRIVERS.values()}


def claim_class(pvc: Obj) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation wins over spec.storageClassName."""
    annotations = pvc.get("metadata", {}).get("annotations") or {}
    if ANN_BETA_STORAGE_CLASS in annotations:
        return annotations[ANN_BETA_STORAGE_CLASS]
    return (pvc.get("spec") or {}).get("storageClassName") or ""


def volume_class(pv: Obj) -> str:
    annotations = pv.get("metadata", {}).get("annotations") or {}
    if ANN_BETA_STORAGE_CLASS in annotations:
        return annotations[ANN_BETA_STORAGE_CLASS]
    return (pv.get("spec") or {}).get("storageClassName") or ""


def pod_claims(pod: Obj) -> list[tuple[str, bool]]:
    """(claim name, generic ephemeral?) of each volume of `pod` backed by a claim, in spec order;
    an ephemeral volume's claim is named `<pod>-<volume>`."""
    out = []
    for vol in (pod.get("spec") or {}).get("volumes") or ():
        if vol.get("persistentVolumeClaim") is not None:
            out.append((vol["persistentVolumeClaim"].get("claimName") or "", False))
        elif vol.get("ephemeral") is not None:
            out.append((f"{pod['metadata']['name']}-{vol.get('name', '')}", True))
    return out


def is_fully_bound(pvc: Obj) -> bool:
    return bool((pvc.get("spec") or {}).get("volumeName")) and \
        ANN_BIND_COMPLETED in (pvc.get("metadata", {}).get("annotations") or {})


def _quantity(raw: Any) -> Fraction:
    try:
        return parse_quantity(raw) if raw is not None else Fraction(0)
    except QuantityError:
        return Fraction(0)


def storage_request(pvc: Obj) -> Fraction:
    return _quantity((((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage"))


def capacity(pv: Obj) -> Fraction:
    return _quantity(((pv.get("spec") or {}).get("capacity") or {}).get("storage"))


def access_modes(obj: Obj) -> list[str]:
    return list((obj.get("spec") or {}).get("accessModes") or ())


def volume_mode(obj: Obj) -> str:
    """spec.volumeMode, Filesystem when unset (as the API server defaults it)."""
    return (obj.get("spec") or {}).get("volumeMode") or "Filesystem"


def bound_to_claim(pv: Obj, pvc: Obj) -> bool:
    """IsVolumeBoundToClaim: the volume's claimRef names the claim (and its uid, when it has one)."""
    ref = (pv.get("spec") or {}).get("claimRef")
    if not ref:
        return False
    meta = pvc["metadata"]
    if ref.get("name") != meta.get("name") or (ref.get("namespace") or "") != meta.get("namespace", "default"):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def bind_volume_to_claim(pv: Obj, pvc: Obj) -> Obj:
    """GetBindVolumeToClaim: the volume with a claimRef to the claim (and the bound-by-controller
    annotation unless it was already bound to it)."""
    new = deep_copy(pv)
    meta = pvc["metadata"]
    ref = (pv.get("spec") or {}).get("claimRef") or {}
    if (ref.get("name"), ref.get("namespace"), ref.get("uid")) != (meta["name"], meta.get("namespace"),
                                                                   meta.get("uid")):
        new["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace"),
                                   "name": meta["name"], "uid": meta.get("uid"), "apiVersion": "v1",
                                   "resourceVersion": meta.get("resourceVersion")}
    if not bound_to_claim(pv, pvc):
        new["metadata"].setdefault("annotations", {}).setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
    return new


_AFFINITY_CACHE: dict[tuple[str, str], NodeSelector | None] = {}


def _required_affinity(pv: Obj) -> NodeSelector | None:
    meta = pv.get("metadata", {})
    key = (meta.get("uid") or meta.get("name", ""), meta.get("resourceVersion", ""))
    if key not in _AFFINITY_CACHE:
        if len(_AFFINITY_CACHE) > 4096:
            _AFFINITY_CACHE.clear()
        required = (((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required"))
        _AFFINITY_CACHE[key] = None if required is None else NodeSelector.compile(required, lazy=True)
    return _AFFINITY_CACHE[key]


def node_affinity_matches(pv: Obj, labels: Mapping[str, str]) -> bool:
    """CheckNodeAffinity: the volume's required node affinity admits a node with these labels.

    Upstream matches against a Node holding only the labels, so `matchFields` (metadata.name)
    requirements are not checked there."""
    selector = _required_affinity(pv)
    return selector is None or selector.matches(labels, "")


def topology_matches(terms: Iterable[Obj] | None, labels: Mapping[str, str]) -> bool:
    """MatchTopologySelectorTerms: no terms admit every node; otherwise one term whose every
    expression has the node's label among its values (an empty term admits nothing)."""
    terms = list(terms or ())
    if not terms:
        return True
    for term in terms:
        exprs = term.get("matchLabelExpressions") or []
        if exprs and all(e.get("key", "") in labels and labels[e.get("key", "")] in (e.get("values") or ())
                         for e in exprs):
            return True
    return False


def is_delay_binding(pvc: Obj, get_class: Callable[[str], Obj | None]) -> bool:
    """IsDelayBindingMode: the claim's class exists and waits for the first consumer."""
    name = claim_class(pvc)
    if not name:
        return False
    sc = get_class(name)
    return sc is not None and sc.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER


def _selector(pvc: Obj) -> LabelSelector | None:
    raw = (pvc.get("spec") or {}).get("selector")
    if raw is None:
        return None
    try:
        return LabelSelector.compile(raw)
    except SelectorError:
        return LabelSelector.NOTHING  # refused at creation; nothing to match


def find_matching_volume(pvc: Obj, volumes: Iterable[Obj], node_labels: Mapping[str, str] | None,
                         excluded: set[str], delay_binding: bool) -> Obj | None:
    """FindMatchingVolume: a volume pre-bound to the claim if one fits, else the smallest
    Available volume of the claim's class, at least as large as requested, of the same volume
    mode, matching the claim's selector. `node_labels` is the scheduler's node (the volume's node
    affinity and the access modes must fit too); without it, the PV controller's path, which binds
    no unbound volume to a claim that waits for its first consumer (`delay_binding`).

    Of volumes equally small the first in `volumes` wins. Upstream's lists come from an informer
    index, in a Go map's order that changes from run to run; ours are in creation order, so a run
    is reproducible."""
    requested = storage_request(pvc)
    wanted_class = claim_class(pvc)
    wanted_mode = volume_mode(pvc)
    wanted_access = set(access_modes(pvc))
    selector = _selector(pvc)
    best: Obj | None = None
    best_size = Fraction(0)
    for pv in volumes:
        name = pv["metadata"]["name"]
        if name in excluded:
            continue
        claim_ref = (pv.get("spec") or {}).get("claimRef")
        prebound = bound_to_claim(pv, pvc)
        if claim_ref and not prebound:
            continue
        size = capacity(pv)
        if size < requested or volume_mode(pv) != wanted_mode or pv["metadata"].get("deletionTimestamp"):
            continue
        fits_node = node_labels is None or node_affinity_matches(pv, node_labels)
        if prebound:
            return pv if fits_node else None
        if node_labels is None and delay_binding:
            continue
        if (pv.get("status") or {}).get("phase") != "Available":
            continue
        if selector is not None and not selector.matches(pv["metadata"].get("labels") or {}):
            continue
        if volume_class(pv) != wanted_class or not fits_node:
            continue
        if node_labels is not None and not wanted_access <= set(access_modes(pv)):
            continue
        if best is None or size < best_size:
            best, best_size = pv, size
    return best
