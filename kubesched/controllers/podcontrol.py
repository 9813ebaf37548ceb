"""What the workload controllers share from pkg/controller/controller_utils.go: which pods are
active, the controller reference they stamp on what they create, pods made from a template
(GetPodFromTemplate), creating and deleting them with the events RealPodControl records, and the
template hash (ComputeHash) that names a Deployment's ReplicaSets and labels DaemonSet pods.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kubesched.api.objects import Obj, deep_copy, get_condition, is_pod_ready, is_terminal, is_terminating
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.apiserver.errors import APIError, Forbidden, NotFoundError, ObjectForbidden
from kubesched.apiserver.server import APIServer

SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # utilrand's alphanums: no vowels, no 0/1/3
FNV32_OFFSET = 0x811C9DC5
FNV32_PRIME = 0x01000193
# The labels a controller adds to the template it copies: the hash of that template.
TEMPLATE_HASH_LABELS = frozenset({"pod-template-hash", "controller-revision-hash"})


def is_pod_active(pod: Obj) -> bool:
    """controller.IsPodActive: not Succeeded or Failed, and not terminating."""
    return not is_terminal(pod) and not is_terminating(pod)


def is_pod_terminating(pod: Obj) -> bool:
    """Counted in status.terminatingReplicas: deleting but not yet finished."""
    return is_terminating(pod) and not is_terminal(pod)


def is_pod_available(pod: Obj, min_ready_seconds: int, now: float, seconds: Callable[[str], float]) -> bool:
    """podutil.IsPodAvailable: Ready, and for minReadySeconds. Upstream asks for strictly longer
    and its controllers requeue exactly minReadySeconds after the pod turned Ready, which real
    time has always passed by then; on a virtual clock that instant must count, or availability
    would wait for some unrelated later sync."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds == 0:
        return True
    since = (get_condition(pod, "Ready") or {}).get("lastTransitionTime")
    return bool(since) and seconds(since) + min_ready_seconds <= now


def controller_ref(owner: Obj) -> Obj:
    """metav1.NewControllerRef: blockOwnerDeletion so foreground deletion waits for the pod."""
    meta = owner["metadata"]
    return {"apiVersion": owner.get("apiVersion", "apps/v1"), "kind": owner["kind"], "name": meta["name"],
            "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}


def pod_from_template(template: Obj, owner: Obj, generate_name: str | None = None) -> Obj:
    """GetPodFromTemplate: the template's labels, annotations, finalizers and spec, named
    `<owner>-<random>` (or `generate_name` + random) by the API server, controlled by `owner`, in
    the owner's namespace."""
    meta = template.get("metadata") or {}
    pod_meta: Obj = {"generateName": generate_name or f"{owner['metadata']['name']}-",
                     "namespace": owner["metadata"].get("namespace", "default"),
                     "labels": dict(meta.get("labels") or {})}
    for key in ("annotations", "finalizers"):
        if meta.get(key):
            pod_meta[key] = deep_copy(meta[key])
    pod_meta["ownerReferences"] = [controller_ref(owner)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": deep_copy(template.get("spec") or {})}


def create_pod(api: APIServer, template: Obj, owner: Obj, source: str, generate_name: str | None = None) -> str | None:
    """RealPodControl.CreatePods: create one pod and record the event; returns the refusal's text."""
    pod = pod_from_template(template, owner, generate_name)
    try:
        created = api.create(pod)
    except APIError as e:
        text = _error_text(pod, e)
        api.record_event(owner, "Warning", "FailedCreate", f"Error creating: {text}", source=source)
        return text
    api.record_event(owner, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}",
                     source=source)
    return None


def delete_pod(api: APIServer, pod: Obj, owner: Obj, source: str) -> str | None:
    """RealPodControl.DeletePod: a graceful delete; a pod already gone is no error and no event."""
    meta = pod["metadata"]
    try:
        api.delete("Pod", meta.get("namespace", "default"), meta["name"])
    except NotFoundError:
        return None
    except APIError as e:
        api.record_event(owner, "Warning", "FailedDelete", f"Error deleting: {e.message}", source=source)
        return f"unable to delete pods: {e.message}"
    api.record_event(owner, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}", source=source)
    return None


def slow_start_batch(count: int, create: Callable[[], str | None]) -> str | None:
    """slowStartBatch: call `create` in batches of 1, 2, 4, ... and stop after a batch with a
    failure, so a template the API refuses costs one request (and one event), not `count`."""
    remaining, batch = count, min(count, 1)
    while batch > 0:
        errors = [e for e in (create() for _ in range(batch)) if e is not None]
        if errors:
            return errors[0]
        remaining -= batch
        batch = min(2 * batch, remaining)
    return None


def _error_text(pod: Obj, e: APIError) -> str:
    """How the client prints a refused create: mutating admission names the pod by its
    generateName; validating admission (quota, limits) by the generated name, in its message."""
    if isinstance(e, Forbidden) and not isinstance(e, ObjectForbidden):
        return f'pods "{pod["metadata"]["generateName"]}" is forbidden: {e.message}'
    return e.message


def compute_hash(template: Obj, collision_count: int | None = None) -> str:
    """controller.ComputeHash: FNV-1a (32 bit) of the template, plus the collision count when set,
    written in decimal and re-spelt with SAFE_ALPHABET (rand.SafeEncodeString).

    Go hashes its own printout of the struct, so the value differs from a real cluster's; here the
    input is the template's canonical JSON (sorted keys), which makes the hash stable across runs
    and machines and changes exactly when the template does. Like Go's it is up to 10 characters.
    """
    data = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += (collision_count & 0xFFFFFFFF).to_bytes(8, "little")  # PutUint32 into 8 bytes
    h = FNV32_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV32_PRIME) & 0xFFFFFFFF
    return "".join(SAFE_ALPHABET[ord(ch) % len(SAFE_ALPHABET)] for ch in str(h))


def made_from(template: Obj, pods: list[Obj], ignored_labels: frozenset[str] = TEMPLATE_HASH_LABELS) -> bool:
    """Whether the pods could have been made from `template`: its labels (but its hash) and
    annotations are theirs, and everything its spec says their specs say too (a pod has more:
    the node, defaults, what admission added such as the service account's token volume)."""
    meta = template.get("metadata") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in ignored_labels}
    for pod in pods:
        pod_meta = pod["metadata"]
        if not _covers(labels, pod_meta.get("labels") or {}) or \
                not _covers(meta.get("annotations") or {}, pod_meta.get("annotations") or {}) or \
                not _covers(template.get("spec") or {}, pod.get("spec") or {}):
            return False
    return True


def _covers(want: Any, have: Any) -> bool:
    """`have` says at least what `want` says: mappings key by key, lists of named items name by
    name, other lists item by item in any order, quantities by value."""
    if want is None or (have is None and not want):  # a default the pod may leave out
        return True
    if isinstance(want, dict):
        return isinstance(have, dict) and all(_covers(v, have.get(k)) for k, v in want.items())
    if isinstance(want, list):
        if not isinstance(have, list):
            return not want
        if all(isinstance(w, dict) and "name" in w for w in want):
            named = {h.get("name"): h for h in have if isinstance(h, dict)}
            return all(_covers(w, named.get(w["name"])) for w in want)
        return all(any(_covers(w, h) for h in have) for w in want)
    if want == have:
        return True
    if isinstance(want, (str, int, float)) and isinstance(have, (str, int, float)) \
            and not isinstance(want, bool) and not isinstance(have, bool):
        if str(want) == str(have):
            return True
        try:
            return parse_quantity(want) == parse_quantity(have)
        except QuantityError:
            return False
    return False


def pods_revision(template: Obj, pods: list[Obj], label: str) -> str | None:
    """The revision (hash label) most of the live pods made from `template` carry: the real
    cluster's name for the template, which compute_hash does not reproduce. None without such pods."""
    counts: dict[str, int] = {}
    for pod in pods:
        value = (pod["metadata"].get("labels") or {}).get(label)
        if value and is_pod_active(pod) and made_from(template, [pod]):
            counts[value] = counts.get(value, 0) + 1
    return max(counts, key=lambda v: (counts[v], v)) if counts else None
