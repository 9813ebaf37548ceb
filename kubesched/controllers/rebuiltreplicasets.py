"""The ReplicaSets an export of Deployments and pods lacks (`kubectl get deploy,pods -o yaml`),
rebuilt from what their pods say about them.

A Deployment's pods name their ReplicaSet (ownerReferences: name and uid) and carry its
pod-template-hash label. Without that ReplicaSet the Deployment controller would find no ReplicaSet
for its template and create one, with a hash of its own (podcontrol.compute_hash cannot give the
real cluster's), and the exported pods would stay beside the new ones: twice the pods. So before
the run each missing ReplicaSet is rebuilt as the cluster has it: its name, uid and hash from the
pods, owned by the Deployment whose selector takes the pods and whose name it bears.

Which one is the Deployment's current ReplicaSet (getNewReplicaSet) is told by the pods: a group
whose pods could have been made from the Deployment's template gets that template (with the pods'
hash, so FindNewReplicaSet finds it), the Deployment's revision and, when it is the only one, the
Deployment's replicas. The other groups are old ReplicaSets (mid-rollout): their template is taken
from a pod, their replicas are their pods, and their revisions are lower, newest pods first. The
controller then goes on as the cluster's would: it scales the old ones down.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kubesched.api.objects import Obj, controller_of, deep_copy, is_pod_ready
from kubesched.api.selectors import LabelSelector, SelectorError
from kubesched.controllers import deploymentutil as du
from kubesched.controllers.podcontrol import controller_ref, is_pod_active, made_from
from kubesched.controllers.replicaset import replicas_of


def rebuild_replica_sets(objects: Iterable[Obj]) -> tuple[list[Obj], str | None]:
    """The ReplicaSets to add to a snapshot, and one line saying which (None: nothing lacked)."""
    objects = list(objects)
    present = {(_ns(o), o["metadata"].get("name")) for o in objects if o.get("kind") == "ReplicaSet"}
    present_uids = {o["metadata"].get("uid") for o in objects if o.get("kind") == "ReplicaSet"}
    groups: dict[tuple[str, str, str], list[Obj]] = {}
    for pod in objects:
        ref = controller_of(pod) if pod.get("kind") == "Pod" else None
        if ref is None or ref.get("kind") != "ReplicaSet" or not ref.get("name") or not ref.get("uid"):
            continue
        if (_ns(pod), ref["name"]) in present or ref["uid"] in present_uids:
            continue
        groups.setdefault((_ns(pod), ref["name"], ref["uid"]), []).append(pod)
    deployments = [o for o in objects if o.get("kind") == "Deployment"]
    by_name = {(_ns(d), d["metadata"].get("name")): d for d in deployments}
    by_deployment: dict[int, list[tuple[str, str, list[Obj]]]] = {}
    for (ns, name, uid), pods in groups.items():
        d = _owner(by_name, ns, name, pods)
        if d is not None:
            by_deployment.setdefault(id(d), []).append((name, uid, pods))
    rebuilt: list[Obj] = []
    for d in deployments:
        rebuilt += _replica_sets(d, by_deployment.get(id(d), []))
    if not rebuilt:
        return [], None
    names = ", ".join(f"{rs['metadata']['namespace']}/{rs['metadata']['name']} (Deployment "
                      f"{rs['metadata']['namespace']}/{_deployment_name(rs)}, replicas {rs['spec']['replicas']})"
                      for rs in rebuilt)
    return rebuilt, (f"rebuilt {len(rebuilt)} ReplicaSet(s) the input lacks from their pods' ownerReferences and "
                     f"pod-template-hash labels: {names}")


def _ns(obj: Obj) -> str:
    return obj["metadata"].get("namespace") or "default"


def _hash(pod: Obj) -> str:
    return (pod["metadata"].get("labels") or {}).get(du.HASH_LABEL, "")


def _owner(deployments: dict[tuple[str, str], Obj], ns: str, rs_name: str, pods: list[Obj]) -> Obj | None:
    """The Deployment that made this ReplicaSet: in its namespace, named `<deployment>-<hash>`
    after the pods' pod-template-hash, its selector taking every pod."""
    pod_hash = _hash(pods[0])
    if not pod_hash or any(_hash(p) != pod_hash for p in pods) or not rs_name.endswith(f"-{pod_hash}"):
        return None
    d = deployments.get((ns, rs_name[:-len(pod_hash) - 1]))
    if d is None:
        return None
    try:
        selector = LabelSelector.compile((d.get("spec") or {}).get("selector"))
    except SelectorError:
        return None
    return d if all(selector.matches(p["metadata"].get("labels") or {}) for p in pods) else None


def _deployment_name(rs: Obj) -> str:
    return rs["metadata"]["name"].rsplit("-", 1)[0]


def _replica_sets(d: Obj, groups: list[tuple[str, str, list[Obj]]]) -> list[Obj]:
    if not groups:
        return []
    template = (d.get("spec") or {}).get("template") or {}
    current = [g for g in groups if made_from(template, g[2])]
    newest_first = sorted(groups, key=lambda g: max(_created(p) for p in g[2]), reverse=True)
    new = next((g for g in newest_first if g in current), None)
    revision = du.revision(d) or 1
    rebuilt = []
    old_revision = revision - (new is not None)
    for name, uid, pods in newest_first:
        live = [p for p in pods if is_pod_active(p)]
        if new is not None and pods is new[2]:
            replicas = replicas_of(d) if len(groups) == 1 else min(len(live), replicas_of(d))
            rs_template = deep_copy(template)
            rs_revision = revision
        else:
            replicas = len(live)
            rs_template = _template_of(pods[0])
            rs_revision = max(old_revision, 1)
            old_revision -= 1
        rebuilt.append(_replica_set(d, name, uid, pods, rs_template, replicas, rs_revision))
    return rebuilt


def _replica_set(d: Obj, name: str, uid: str, pods: list[Obj], template: Obj, replicas: int, revision: int) -> Obj:
    pod_hash = _hash(pods[0])
    template.setdefault("metadata", {})
    template["metadata"]["labels"] = {**(template["metadata"].get("labels") or {}), du.HASH_LABEL: pod_hash}
    selector = deep_copy((d.get("spec") or {}).get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), du.HASH_LABEL: pod_hash}
    annotations = {k: v for k, v in (d["metadata"].get("annotations") or {}).items() if k not in du.NOT_COPIED}
    annotations[du.REVISION] = str(revision)
    meta: Obj = {"name": name, "namespace": _ns(d), "uid": uid, "generation": 1,
                 "labels": dict(template["metadata"]["labels"]), "annotations": annotations}
    created = min((p["metadata"].get("creationTimestamp") or "" for p in pods), default="")
    if created:
        meta["creationTimestamp"] = created
    if d["metadata"].get("uid"):
        meta["ownerReferences"] = [controller_ref(d)]  # else the Deployment adopts it, as an orphan
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta,
          "spec": {"replicas": replicas, "minReadySeconds": (d.get("spec") or {}).get("minReadySeconds") or 0,
                   "selector": selector, "template": template}}
    du.set_replicas_annotations(rs, replicas_of(d), replicas_of(d) + du.max_surge(d))
    live = [p for p in pods if is_pod_active(p)]
    ready = sum(is_pod_ready(p) for p in live)
    rs["status"] = {"replicas": len(live), "fullyLabeledReplicas": len(live), "readyReplicas": ready,
                    "availableReplicas": ready, "observedGeneration": 1}
    return rs


def _created(pod: Obj) -> str:
    return pod["metadata"].get("creationTimestamp") or ""


def _template_of(pod: Obj) -> Obj:
    """An old ReplicaSet's template, as far as its pod shows it: the pod's labels, annotations and
    spec without what scheduling and admission added (the node, the priority, the service
    account token volume)."""
    meta = pod["metadata"]
    spec = deep_copy(pod.get("spec") or {})
    for key in ("nodeName", "priority"):
        spec.pop(key, None)
    token = {v.get("name") for v in spec.get("volumes") or () if str(v.get("name", "")).startswith("kube-api-access-")}
    if token:
        _keep(spec, "volumes", lambda v: v.get("name") not in token)
        for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
            _keep(c, "volumeMounts", lambda m: m.get("name") not in token)
    template: Obj = {"metadata": {"labels": dict(meta.get("labels") or {})}, "spec": spec}
    if meta.get("annotations"):
        template["metadata"]["annotations"] = dict(meta["annotations"])
    return template


def _keep(obj: Obj, key: str, keep: Callable[[Obj], bool]) -> None:
    """Keep the items of obj[key] that `keep` accepts, and the key only while some are left."""
    items = [item for item in obj.get(key) or () if keep(item)]
    if items:
        obj[key] = items
    else:
        obj.pop(key, None)
