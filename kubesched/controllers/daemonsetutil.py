"""DaemonSet helpers without side effects (pkg/controller/daemon/util/daemonset_util.go and
NodeShouldRunDaemonPod): which nodes a DaemonSet wants, and the pod it creates for one."""

from __future__ import annotations

from kubesched.api.objects import Obj, deep_copy
from kubesched.api.selectors import RequiredNodeAffinity
from kubesched.api.taints import first_untolerated
from kubesched.controllers.podcontrol import compute_hash

GENERATION_LABEL = "pod-template-generation"  # DaemonSetTemplateGenerationKey
HASH_LABEL = "controller-revision-hash"  # DefaultDaemonSetUniqueLabelKey
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"  # set by the API server
NAME_FIELD = "metadata.name"

# AddOrUpdateDaemonPodTolerations, in its order: the NoExecute ones have no tolerationSeconds, so
# node problems never evict a daemon; the NoSchedule ones let daemons onto nodes with conditions.
DEFAULT_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
HOST_NETWORK_TOLERATION = {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists",
                           "effect": "NoSchedule"}


def add_default_tolerations(spec: Obj) -> None:
    """AddOrUpdateDaemonPodTolerations: each default replaces a toleration of the same key,
    operator, value and effect (whatever its tolerationSeconds) or is appended."""
    defaults = [*DEFAULT_TOLERATIONS, *([HOST_NETWORK_TOLERATION] if spec.get("hostNetwork") else [])]
    for default in defaults:
        tolerations = spec.get("tolerations") or []
        same = [i for i, t in enumerate(tolerations) if all(
            (t.get(k) or "") == (default.get(k) or "") for k in ("key", "operator", "value", "effect"))]
        if not same:
            spec["tolerations"] = [*tolerations, dict(default)]
        elif any(tolerations[i] != default for i in same):
            spec["tolerations"] = [dict(default) if i in same else t for i, t in enumerate(tolerations)]


class NodeFit:
    """NodeShouldRunDaemonPod for one DaemonSet, its template parsed once for every node."""

    def __init__(self, ds: Obj) -> None:
        spec = deep_copy(ds["spec"]["template"].get("spec") or {})
        add_default_tolerations(spec)
        self._node_name = spec.get("nodeName") or ""
        self._affinity = RequiredNodeAffinity.from_pod(spec)
        self._tolerations: list[Obj] = spec.get("tolerations") or []

    def should_run(self, node: Obj) -> tuple[bool, bool]:
        """(should run a daemon pod there, should keep one already running).

        The node must match the template's nodeName, nodeSelector and required node affinity;
        its NoSchedule and NoExecute taints must be tolerated (with the default tolerations) for
        a new pod, while a running one only needs its NoExecute taints tolerated.
        """
        name = node["metadata"]["name"]
        if self._node_name not in ("", name) or not self._affinity.matches(node["metadata"].get("labels") or {}, name):
            return False, False
        taints = (node.get("spec") or {}).get("taints") or []
        if not taints or first_untolerated(taints, self._tolerations, _blocks_new_pods) is None:
            return True, True
        return False, first_untolerated(taints, self._tolerations, _evicts) is None


def _blocks_new_pods(taint: Obj) -> bool:
    return taint.get("effect") in ("NoSchedule", "NoExecute")


def _evicts(taint: Obj) -> bool:
    return taint.get("effect") == "NoExecute"


def pod_template(ds: Obj, revision_hash: str) -> Obj:
    """CreatePodTemplate: the template with the default tolerations, the template generation
    (when the API server recorded one) and the revision hash as labels."""
    template = deep_copy(ds["spec"]["template"])
    add_default_tolerations(template.setdefault("spec", {}))
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    generation = (ds["metadata"].get("annotations") or {}).get(TEMPLATE_GENERATION)
    if generation is not None:
        labels[GENERATION_LABEL] = generation
    labels[HASH_LABEL] = revision_hash
    return template


def revision_hash(ds: Obj) -> str:
    """The hash of the DaemonSet's current revision (its ControllerRevision's label upstream)."""
    return compute_hash(ds["spec"]["template"], (ds.get("status") or {}).get("collisionCount"))


def for_node(template: Obj, node_name: str) -> Obj:
    """ReplaceDaemonSetPodNodeNameNodeAffinity: the pod's required node affinity becomes the one
    term `metadata.name In [node]` (other required terms are dropped; the controller has checked
    them), so the default scheduler places it there, preferred terms and all."""
    pinned = deep_copy(template)
    term = {"matchFields": [{"key": NAME_FIELD, "operator": "In", "values": [node_name]}]}
    affinity = pinned["spec"].setdefault("affinity", {}) or {}
    pinned["spec"]["affinity"] = affinity
    node_affinity = affinity.setdefault("nodeAffinity", {}) or {}
    affinity["nodeAffinity"] = node_affinity
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {**required, "nodeSelectorTerms": [term]}
    return pinned


def target_node(pod: Obj) -> str | None:
    """GetTargetNodeName: the pod's node, or before binding the node its affinity pins it to."""
    if pod["spec"].get("nodeName"):
        return pod["spec"]["nodeName"]
    required = (((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or ():
        for expr in term.get("matchFields") or ():
            if expr.get("key") == NAME_FIELD and expr.get("operator") == "In":
                values = expr.get("values") or []
                return values[0] if len(values) == 1 else None
    return None
