"""The core group (v1): pods and their specs, nodes, ReplicationControllers, persistent volumes and
claims, LimitRanges and ResourceQuotas, as kube-apiserver's pkg/apis/core/validation checks them.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from kubesched.api.names import dns_label_errors, dns_subdomain_errors
from kubesched.api.quantity import (
    QuantityError,
    milli_value,
    parse_quantity,
    quantity_string,
)
from kubesched.api.quota import SCOPE_OPERATORS, SCOPES, is_extended_resource
from kubesched.api.storage import (
    ACCESS_MODES,
    READ_WRITE_ONCE_POD,
    VOLUME_MODES,
)
from kubesched.api.validation.checker import (
    _PORT_RANGE_MSG,
    MAX_REPLICAS,
    NONNEGATIVE_MSG,
    POSITIVE_MSG,
    STANDARD_CONTAINER_RESOURCES,
    Checker,
    _annotations,
    _label_selector,
    _labels,
    _node_selector,
    _node_selector_term,
    _quantity,
    _show,
    _weight,
    check_resource_list,
    check_shape,
    label_value_errors,
    qualified_name_errors,
    subpath,
)

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
PVC_PHASES = ("Pending", "Bound", "Lost")
PV_PHASES = ("Pending", "Available", "Bound", "Released", "Failed")
PROBE_FIELDS = ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold")


def _probes(c: Checker, ctr: dict[str, Any], path: str) -> None:
    """ValidateProbe: non-negative counts; liveness and startup probes succeed once (successThreshold 1)."""
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = c.get(ctr, kind, path, dict)
        if probe is None:
            continue
        probe_path = subpath(path, kind)
        for key in PROBE_FIELDS:
            value = c.get(probe, key, probe_path, int, 32)
            if value is not None and value < 0:
                c.invalid(subpath(probe_path, key), value, NONNEGATIVE_MSG)
        success = probe.get("successThreshold")
        if kind != "readinessProbe" and isinstance(success, int) and success > 1:
            c.invalid(subpath(probe_path, "successThreshold"), success, "must be 1")


def _resources(c: Checker, value: Any, path: str) -> None:
    res = c.typed(value, path, dict)
    if res is None:
        return
    requests: dict[str, tuple[Any, Fraction]] = {}
    limits: dict[str, tuple[Any, Fraction]] = {}
    if (listed := res.get("requests")) is not None:
        requests = check_resource_list(c, listed, subpath(path, "requests"), container=True)
    if (listed := res.get("limits")) is not None:
        limits = check_resource_list(c, listed, subpath(path, "limits"), container=True)
    for name, (raw, amount) in requests.items():
        if name in limits and amount > limits[name][1]:
            c.invalid(subpath(path, "requests"), str(raw), f"must be less than or equal to {name} limit of {limits[name][0]}")


def check_taints(c: Checker, value: Any, path: str) -> None:
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(c.typed(value, path, list) or []):
        taint_path = f"{path}[{i}]"
        if c.typed(taint, taint_path, dict) is None:
            continue
        key = c.get(taint, "key", taint_path, str)
        if not key:
            if key is not None or taint.get("key") is None:
                c.required(subpath(taint_path, "key"))
        else:
            c.names(key, subpath(taint_path, "key"), qualified_name_errors)
        taint_value = c.get(taint, "value", taint_path, str)
        if taint_value:
            c.names(taint_value, subpath(taint_path, "value"), label_value_errors)
        effect = c.get(taint, "effect", taint_path, str)
        if not effect:
            if effect is not None or taint.get("effect") is None:
                c.required(subpath(taint_path, "effect"))
        elif effect not in TAINT_EFFECTS:
            c.unsupported(subpath(taint_path, "effect"), effect, TAINT_EFFECTS)
        c.get(taint, "timeAdded", taint_path, str)
        if key and effect:
            if (key, effect) in seen:
                c.err(taint_path, f'Duplicate value: "{key}:{effect}": taints must be unique by key and effect pair')
            seen.add((key, effect))


def _tolerations(c: Checker, value: Any, path: str) -> None:
    for i, tol in enumerate(c.typed(value, path, list) or []):
        tol_path = f"{path}[{i}]"
        if c.typed(tol, tol_path, dict) is None:
            continue
        key = c.get(tol, "key", tol_path, str) or ""
        operator = c.get(tol, "operator", tol_path, str) or ""
        tol_value = c.get(tol, "value", tol_path, str) or ""
        effect = c.get(tol, "effect", tol_path, str) or ""
        seconds = c.get(tol, "tolerationSeconds", tol_path, int)
        if key:
            c.names(key, subpath(tol_path, "key"), qualified_name_errors)
        elif operator != "Exists":
            c.invalid(subpath(tol_path, "operator"), operator,
                      'operator must be Exists when `key` is empty, which means "match all values and all keys"')
        if seconds is not None and effect != "NoExecute":
            c.invalid(subpath(tol_path, "effect"), effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")
        if operator in ("Equal", ""):
            c.names(tol_value, subpath(tol_path, "value"), label_value_errors)
        elif operator == "Exists":
            if tol_value:
                c.invalid(subpath(tol_path, "value"), tol_value, "value must be empty when `operator` is 'Exists'")
        else:
            c.unsupported(subpath(tol_path, "operator"), operator, ("Equal", "Exists"))
        if effect and effect not in TAINT_EFFECTS:
            c.unsupported(subpath(tol_path, "effect"), effect, TAINT_EFFECTS)


def _pod_affinity_term(c: Checker, term: Any, path: str) -> None:
    if c.typed(term, path, dict) is None:
        return
    _label_selector(c, term.get("labelSelector"), subpath(path, "labelSelector"))
    _label_selector(c, term.get("namespaceSelector"), subpath(path, "namespaceSelector"))
    for j, ns in enumerate(c.get(term, "namespaces", path, list) or []):
        if c.typed(ns, f"{path}.namespaces[{j}]", str) is not None:
            c.names(ns, f"{path}.namespaces[{j}]", dns_label_errors)
    for field in ("matchLabelKeys", "mismatchLabelKeys"):
        keys = c.get(term, field, path, list) or []
        if keys and term.get("labelSelector") is None:
            c.err(subpath(path, field), "Forbidden: must not be specified when labelSelector is not set")
        for j, key in enumerate(keys):
            if c.typed(key, f"{path}.{field}[{j}]", str) is not None:
                c.names(key, f"{path}.{field}[{j}]", qualified_name_errors)
    topology_key = c.get(term, "topologyKey", path, str)
    if not topology_key:
        if topology_key is not None or term.get("topologyKey") is None:
            c.required(subpath(path, "topologyKey"), "can not be empty")
    else:
        c.names(topology_key, subpath(path, "topologyKey"), qualified_name_errors)


def _node_affinity(c: Checker, value: Any, path: str) -> None:
    """A pod's node affinity, or the NodeAffinity plugin's `addedAffinity` (validated the same way)."""
    node = c.typed(value, path, dict)
    if node is None:
        return
    _node_selector(c, node.get("requiredDuringSchedulingIgnoredDuringExecution"),
                   subpath(path, "requiredDuringSchedulingIgnoredDuringExecution"))
    _weighted_terms(c, node, path, "preference", _node_selector_term)


def _weighted_terms(c: Checker, holder: dict[str, Any], path: str, inner: str,
                    check: Callable[[Checker, Any, str], None]) -> None:
    """preferredDuringSchedulingIgnoredDuringExecution: terms of a weight and an `inner` term."""
    key = "preferredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(c.get(holder, key, path, list) or []):
        term_path = f"{subpath(path, key)}[{i}]"
        if c.typed(term, term_path, dict) is None:
            continue
        _weight(c, term, term_path)
        if term.get(inner) is None:
            c.required(subpath(term_path, inner))
        else:
            check(c, term[inner], subpath(term_path, inner))


def _affinity(c: Checker, value: Any, path: str) -> None:
    affinity = c.typed(value, path, dict)
    if affinity is None:
        return
    _node_affinity(c, affinity.get("nodeAffinity"), subpath(path, "nodeAffinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        kind_path = subpath(path, kind)
        pod = c.get(affinity, kind, path, dict)
        if pod is None:
            continue
        required = "requiredDuringSchedulingIgnoredDuringExecution"
        for i, term in enumerate(c.get(pod, required, kind_path, list) or []):
            _pod_affinity_term(c, term, f"{kind_path}.{required}[{i}]")
        _weighted_terms(c, pod, kind_path, "podAffinityTerm", _pod_affinity_term)


def _spread_constraints(c: Checker, value: Any, path: str) -> None:
    seen: set[tuple[str, str]] = set()
    for i, tsc in enumerate(c.typed(value, path, list) or []):
        tsc_path = f"{path}[{i}]"
        if c.typed(tsc, tsc_path, dict) is None:
            continue
        max_skew = c.get(tsc, "maxSkew", tsc_path, int, 32)
        if max_skew is None and tsc.get("maxSkew") is None:
            max_skew = 0  # absent is 0 on the API server, which rejects it
        if max_skew is not None and max_skew <= 0:
            c.invalid(subpath(tsc_path, "maxSkew"), max_skew, POSITIVE_MSG)
        topology_key = c.get(tsc, "topologyKey", tsc_path, str)
        if not topology_key and (topology_key is not None or tsc.get("topologyKey") is None):
            c.required(subpath(tsc_path, "topologyKey"), "can not be empty")
        action = c.get(tsc, "whenUnsatisfiable", tsc_path, str)
        if action is None and tsc.get("whenUnsatisfiable") is None:
            action = ""
        if action is not None and action not in ("DoNotSchedule", "ScheduleAnyway"):
            c.unsupported(subpath(tsc_path, "whenUnsatisfiable"), action, ("DoNotSchedule", "ScheduleAnyway"))
        if topology_key and action:
            if (topology_key, action) in seen:
                c.err(subpath(tsc_path, "{topologyKey, whenUnsatisfiable}"),
                      f'Duplicate value: "{{{topology_key}, {action}}}"')
            seen.add((topology_key, action))
        min_domains = c.get(tsc, "minDomains", tsc_path, int, 32)
        if min_domains is not None:
            if min_domains <= 0:
                c.invalid(subpath(tsc_path, "minDomains"), min_domains, POSITIVE_MSG)
            if action is not None and action != "DoNotSchedule":
                c.invalid(subpath(tsc_path, "minDomains"), min_domains,
                          f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}")
        c.enum(tsc, "nodeAffinityPolicy", tsc_path, ("Honor", "Ignore"))
        c.enum(tsc, "nodeTaintsPolicy", tsc_path, ("Honor", "Ignore"))
        keys = c.get(tsc, "matchLabelKeys", tsc_path, list) or []
        if keys and tsc.get("labelSelector") is None:
            c.err(subpath(tsc_path, "matchLabelKeys"), "Forbidden: must not be specified when labelSelector is not set")
        for j, key in enumerate(keys):
            if c.typed(key, f"{tsc_path}.matchLabelKeys[{j}]", str) is not None:
                c.names(key, f"{tsc_path}.matchLabelKeys[{j}]", qualified_name_errors)
        _label_selector(c, tsc.get("labelSelector"), subpath(tsc_path, "labelSelector"))


def _ports(c: Checker, value: Any, path: str, host_ports: set[str]) -> None:
    for i, port in enumerate(c.typed(value, path, list) or []):
        port_path = f"{path}[{i}]"
        if c.typed(port, port_path, dict) is None:
            continue
        container_port = c.get(port, "containerPort", port_path, int, 32)
        if container_port is None and port.get("containerPort") is None:
            c.required(subpath(port_path, "containerPort"))
        elif container_port is not None and not 1 <= container_port <= 65535:
            c.invalid(subpath(port_path, "containerPort"), container_port, _PORT_RANGE_MSG)
        host_port = c.get(port, "hostPort", port_path, int, 32)
        if host_port and not 1 <= host_port <= 65535:
            c.invalid(subpath(port_path, "hostPort"), host_port, _PORT_RANGE_MSG)
        protocol = c.enum(port, "protocol", port_path, ("TCP", "UDP", "SCTP"))
        host_ip = c.get(port, "hostIP", port_path, str) or ""
        c.get(port, "name", port_path, str)
        if host_port and 1 <= host_port <= 65535:
            # Two containers of one pod cannot bind the same host port (the NodePorts plugin relies on it).
            ident = f"{protocol or 'TCP'}/{host_ip}/{host_port}"
            if ident in host_ports:
                c.err(subpath(port_path, "hostPort"), f"Duplicate value: {_show(ident)}")
            host_ports.add(ident)


def _containers(c: Checker, spec: dict[str, Any], key: str, path: str, names: set[str]) -> None:
    host_ports: set[str] = set()
    list_path = subpath(path, key)
    for i, ctr in enumerate(c.get(spec, key, path, list) or []):
        ctr_path = f"{list_path}[{i}]"
        if c.typed(ctr, ctr_path, dict) is None:
            continue
        name = c.get(ctr, "name", ctr_path, str)
        if not name:
            if name is not None or ctr.get("name") is None:
                c.required(subpath(ctr_path, "name"))
        elif name in names:
            c.err(subpath(ctr_path, "name"), f"Duplicate value: {_show(name)}")
        else:
            c.names(name, subpath(ctr_path, "name"), dns_label_errors)
            names.add(name)
        c.get(ctr, "image", ctr_path, str)
        c.get(ctr, "restartPolicy", ctr_path, str)
        if (resources := ctr.get("resources")) is not None:
            _resources(c, resources, subpath(ctr_path, "resources"))
        if (ports := ctr.get("ports")) is not None:
            _ports(c, ports, subpath(ctr_path, "ports"), host_ports)
        _probes(c, ctr, ctr_path)


def _pod_spec(c: Checker, value: Any, path: str, template: tuple[str, ...] = ()) -> None:
    """A PodSpec, in a Pod or in a workload's pod template (`template`: the restart policies the
    workload allows; the API server defaults an unset one to Always)."""
    if value is None:
        c.required(path)
        return
    spec = c.typed(value, path, dict)
    if spec is None:
        return
    if not spec.get("containers") and (spec.get("containers") is None or isinstance(spec["containers"], list)):
        c.required(subpath(path, "containers"))
    names: set[str] = set()
    _containers(c, spec, "containers", path, names)
    # Each check of an optional part below does nothing for an absent one: skipped, with its path.
    if spec.get("initContainers") is not None:
        _containers(c, spec, "initContainers", path, names)
    if (resources := spec.get("resources")) is not None:
        _resources(c, resources, subpath(path, "resources"))
    if (overhead := spec.get("overhead")) is not None:
        check_resource_list(c, overhead, subpath(path, "overhead"), container=True)
    c.get(spec, "priority", path, int, 32)
    c.enum(spec, "preemptionPolicy", path, PREEMPTION_POLICIES)
    for key in ("priorityClassName", "nodeName", "runtimeClassName"):
        name = c.get(spec, key, path, str)
        if name:
            c.names(name, subpath(path, key), dns_subdomain_errors)
    c.get(spec, "schedulerName", path, str)
    c.get(spec, "hostNetwork", path, bool)
    restart_policy = c.enum(spec, "restartPolicy", path, ("Always", "OnFailure", "Never"))
    if template and (restart_policy or "Always") not in template:
        c.unsupported(subpath(path, "restartPolicy"), restart_policy or "Always", template)
    grace = c.get(spec, "terminationGracePeriodSeconds", path, int)
    if grace is not None and grace < 0:
        c.invalid(subpath(path, "terminationGracePeriodSeconds"), grace, NONNEGATIVE_MSG)
    if (part := spec.get("nodeSelector")) is not None:
        _labels(c, part, subpath(path, "nodeSelector"))
    if (part := spec.get("tolerations")) is not None:
        _tolerations(c, part, subpath(path, "tolerations"))
    if (part := spec.get("affinity")) is not None:
        _affinity(c, part, subpath(path, "affinity"))
    if (part := spec.get("topologySpreadConstraints")) is not None:
        _spread_constraints(c, part, subpath(path, "topologySpreadConstraints"))
    if (part := spec.get("volumes")) is not None:
        _pod_volumes(c, part, subpath(path, "volumes"))
    gates_path = subpath(path, "schedulingGates")
    gates: set[str] = set()
    for i, gate in enumerate(c.get(spec, "schedulingGates", path, list) or []):
        if c.typed(gate, f"{gates_path}[{i}]", dict) is None:
            continue
        name = c.need(gate, "name", f"{gates_path}[{i}]", str)
        if name is not None:
            c.names(name, f"{gates_path}[{i}].name", qualified_name_errors)
            if name in gates:
                c.err(f"{gates_path}[{i}]", f"Duplicate value: {_show(name)}")
            gates.add(name)
    if gates and spec.get("nodeName"):
        c.err(subpath(path, "nodeName"),
              "Forbidden: cannot be set until all schedulingGates have been cleared")


def _pod(c: Checker, obj: dict[str, Any], path: str) -> None:
    _pod_spec(c, obj.get("spec"), subpath(path, "spec"))
    status = c.get(obj, "status", path, dict)
    if status is not None:
        c.enum(status, "phase", subpath(path, "status"), POD_PHASES)
        c.get(status, "nominatedNodeName", subpath(path, "status"), str)


def _node(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict)
    if spec is not None:
        c.get(spec, "unschedulable", spec_path, bool)
        check_taints(c, spec.get("taints"), subpath(spec_path, "taints"))
    status = c.get(obj, "status", path, dict)
    if status is not None:
        for key in ("capacity", "allocatable"):
            check_resource_list(c, status.get(key), subpath(subpath(path, "status"), key))
        check_shape(c, status.get("images"), subpath(path, "status.images"),
                    [{"names": [str], "sizeBytes": int}])
    if not (status or {}).get("allocatable") and not (status or {}).get("capacity"):
        # Its kubelet would report them; without them the node fits no pod that requests anything.
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        c.warn(subpath(path, "status"), f"Node {_show(name)} has neither allocatable nor capacity: "
                                        "it offers 0 cpu and 0 memory to pods")


def _pod_template(c: Checker, spec: dict[str, Any], spec_path: str, restart: tuple[str, ...],
                  check_labels: Callable[[dict[str, str]], None]) -> bool:
    """A workload's `spec.template`: its labels (which `check_labels` holds against the selector),
    annotations and pod spec, whose restartPolicy must be one of `restart`. False when absent."""
    template_path = subpath(spec_path, "template")
    template = c.get(spec, "template", spec_path, dict)
    if template is None:
        if spec.get("template") is None:
            c.required(template_path)
        return False
    meta = c.get(template, "metadata", template_path, dict) or {}
    labels = _labels(c, meta.get("labels"), subpath(template_path, "metadata.labels"))
    _annotations(c, meta.get("annotations"), subpath(template_path, "metadata.annotations"), "Pod",
                 template.get("spec"))
    check_labels(labels)
    _pod_spec(c, template.get("spec"), subpath(template_path, "spec"), template=restart)
    return True


def _selector_matches(c: Checker, selector: Any, spec_path: str) -> Callable[[dict[str, str]], None]:
    """The check that a label selector (None: not given or invalid) selects the template's labels."""
    def check(labels: dict[str, str]) -> None:
        if selector is not None and not selector.matches(labels):
            c.invalid(subpath(spec_path, "template.metadata.labels"), labels, "`selector` does not match template `labels`")
    return check


def _replicas(c: Checker, spec: dict[str, Any], spec_path: str) -> None:
    replicas = c.get(spec, "replicas", spec_path, int, 32)
    if replicas is not None and replicas < 0:
        c.invalid(subpath(spec_path, "replicas"), replicas, NONNEGATIVE_MSG)
    elif replicas is not None and replicas > MAX_REPLICAS:
        # Valid for the API (an int32), but no simulation holds that many pods.
        c.invalid(subpath(spec_path, "replicas"), replicas,
                  f"kubesched simulates at most {MAX_REPLICAS} replicas of one workload")


def _nonnegative(c: Checker, obj: dict[str, Any], keys: tuple[str, ...], path: str,
                 int_bits: int = 32) -> None:
    for key in keys:
        value = c.get(obj, key, path, int, int_bits)
        if value is not None and value < 0:
            c.invalid(subpath(path, key), value, NONNEGATIVE_MSG)


def _replication_controller(c: Checker, obj: dict[str, Any], path: str) -> None:
    """A ReplicationController: its selector is a label map, by default the template's labels."""
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict)
    if spec is None:
        if obj.get("spec") is None:
            c.required(spec_path)
        return
    _replicas(c, spec, spec_path)
    _nonnegative(c, spec, ("minReadySeconds",), spec_path)
    selector = _labels(c, spec.get("selector"), subpath(spec_path, "selector"))

    def selector_matches(labels: dict[str, str]) -> None:
        if not selector and not labels:
            c.required(subpath(spec_path, "selector"))
        elif selector and any(labels.get(k) != v for k, v in selector.items()):
            c.invalid(subpath(spec_path, "template.metadata.labels"), labels, "selector does not match template labels")

    _pod_template(c, spec, spec_path, ("Always",), selector_matches)


# The volume sources of a PersistentVolume, in the order the API server checks them.
PV_SOURCES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs", "rbd",
              "quobyte", "cephfs", "iscsi", "cinder", "fc", "flexVolume", "azureFile", "vsphereVolume",
              "photonPersistentDisk", "portworxVolume", "azureDisk", "scaleIO", "local", "storageos", "csi")
# A pod volume's sources; a volume naming none is an emptyDir (the API server's default).
POD_VOLUME_SOURCES = (*PV_SOURCES, "emptyDir", "gitRepo", "secret", "persistentVolumeClaim", "downwardAPI",
                      "configMap", "projected", "ephemeral", "image")


def _access_modes(c: Checker, spec: dict[str, Any], path: str, missing: str) -> None:
    modes_path = subpath(path, "accessModes")
    modes = c.get(spec, "accessModes", path, list)
    if not modes:
        if modes is not None or spec.get("accessModes") is None:
            c.required(modes_path, missing)
        return
    exclusive = shared = False
    for mode in modes:
        if mode not in ACCESS_MODES:
            c.unsupported(modes_path, mode, ACCESS_MODES)
        elif mode == READ_WRITE_ONCE_POD:
            exclusive = True
        else:
            shared = True
    if exclusive and shared:
        c.err(modes_path, "Forbidden: may not use ReadWriteOncePod with other access modes")


def _positive_quantity(c: Checker, value: Any, path: str) -> None:
    amount = _quantity(c, value, path)
    if amount is not None and amount <= 0:
        c.invalid(path, str(value), POSITIVE_MSG)


def _class_name(c: Checker, spec: dict[str, Any], path: str) -> None:
    name = c.get(spec, "storageClassName", path, str)
    if name:
        c.names(name, subpath(path, "storageClassName"), dns_subdomain_errors)


def _claim_spec(c: Checker, value: Any, path: str) -> None:
    """A PersistentVolumeClaimSpec: in a claim, or in a pod's ephemeral volume template."""
    spec = c.typed(value, path, dict)
    if spec is None:
        c.required(subpath(path, "accessModes"), "at least 1 access mode is required")
        c.required(subpath(path, "resources[storage]"))
        return
    _access_modes(c, spec, path, "at least 1 access mode is required")
    _label_selector(c, spec.get("selector"), subpath(path, "selector"))
    requests = ((c.get(spec, "resources", path, dict) or {}).get("requests")) or {}
    if not isinstance(requests, dict) or requests.get("storage") is None:
        c.required(subpath(path, "resources[storage]"))
    else:
        _positive_quantity(c, requests["storage"], subpath(path, "resources[storage]"))
    _class_name(c, spec, path)
    c.enum(spec, "volumeMode", path, VOLUME_MODES)
    c.get(spec, "volumeName", path, str)


def _persistent_volume(c: Checker, obj: dict[str, Any], path: str) -> None:
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict) or {}
    _access_modes(c, spec, spec_path, "")
    cap_path = subpath(spec_path, "capacity")
    cap = c.get(spec, "capacity", spec_path, dict) or {}
    if not cap:
        c.required(cap_path)
    if "storage" not in cap or len(cap) > 1:
        c.unsupported(cap_path, cap, ("storage",))
    for name, amount in cap.items():
        _positive_quantity(c, amount, f"{cap_path}[{name}]")
    c.enum(spec, "persistentVolumeReclaimPolicy", spec_path, ("Delete", "Recycle", "Retain"))
    affinity_path = subpath(spec_path, "nodeAffinity")
    affinity = c.get(spec, "nodeAffinity", spec_path, dict)
    if affinity is not None:
        if affinity.get("required") is None:
            c.required(subpath(affinity_path, "required"), "must specify required node constraints")
        else:
            _node_selector(c, affinity["required"], subpath(affinity_path, "required"))
    sources = [key for key in PV_SOURCES if spec.get(key) is not None]
    if not sources:
        c.required(spec_path, "must specify a volume type")
    for key in sources[1:]:
        c.err(subpath(spec_path, key), "Forbidden: may not specify more than 1 volume type")
    if "local" in sources and affinity is None:
        c.required(affinity_path, "Local volume requires node affinity")
    csi = c.get(spec, "csi", spec_path, dict)
    if csi is not None:
        for key in ("driver", "volumeHandle"):
            if not csi.get(key):
                c.required(subpath(subpath(spec_path, "csi"), key))
    _class_name(c, spec, spec_path)
    c.enum(spec, "volumeMode", spec_path, VOLUME_MODES)
    status = c.get(obj, "status", path, dict)
    if status is not None:
        c.enum(status, "phase", subpath(path, "status"), PV_PHASES)


def _persistent_volume_claim(c: Checker, obj: dict[str, Any], path: str) -> None:
    _claim_spec(c, obj.get("spec"), subpath(path, "spec"))
    status = c.get(obj, "status", path, dict)
    if status is not None:
        c.enum(status, "phase", subpath(path, "status"), PVC_PHASES)


def _pod_volumes(c: Checker, value: Any, path: str) -> None:
    """spec.volumes: unique DNS-label names, one source each; claims name their claim."""
    names: set[str] = set()
    for i, vol in enumerate(c.typed(value, path, list) or []):
        vol_path = f"{path}[{i}]"
        if c.typed(vol, vol_path, dict) is None:
            continue
        name = c.get(vol, "name", vol_path, str)
        if not name:
            c.required(subpath(vol_path, "name"))
        elif name in names:
            c.err(subpath(vol_path, "name"), f"Duplicate value: {_show(name)}")
        else:
            c.names(name, subpath(vol_path, "name"), dns_label_errors)
            names.add(name)
        sources = [key for key in POD_VOLUME_SOURCES if vol.get(key) is not None]
        for key in sources[1:]:
            c.err(subpath(vol_path, key), "Forbidden: may not specify more than 1 volume type")
        claim = c.get(vol, "persistentVolumeClaim", vol_path, dict)
        claim_path = subpath(vol_path, "persistentVolumeClaim")
        if claim is not None and not c.get(claim, "claimName", claim_path, str):
            c.required(subpath(vol_path, "persistentVolumeClaim.claimName"))
        ephemeral = c.get(vol, "ephemeral", vol_path, dict)
        if ephemeral is not None:
            template_path = subpath(vol_path, "ephemeral.volumeClaimTemplate")
            template = c.get(ephemeral, "volumeClaimTemplate", subpath(vol_path, "ephemeral"), dict)
            if template is None:
                c.required(template_path)
            else:
                _claim_spec(c, template.get("spec"), subpath(template_path, "spec"))


LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
# helper.standardResources / standardQuotaResources (hugepages-* and requests.hugepages-* too).
_STANDARD_RESOURCES = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers"})
_QUOTA_RESOURCES = _STANDARD_RESOURCES - {"storage"}
_INTEGER_RESOURCES = frozenset({"pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
                                "configmaps", "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"})
# The scopes whose resources are limited (IsResourceQuotaScopeValidForResource); others take any.
_POD_SCOPED = frozenset({"pods", "cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"})
_SCOPE_RESOURCES = {"Terminating": _POD_SCOPED, "NotTerminating": _POD_SCOPED, "NotBestEffort": _POD_SCOPED,
                    "PriorityClass": _POD_SCOPED, "CrossNamespacePodAffinity": _POD_SCOPED,
                    "BestEffort": frozenset({"pods"}),
                    "VolumeAttributesClass": frozenset({"persistentvolumeclaims", "requests.storage"})}
_EXISTS_ONLY_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "CrossNamespacePodAffinity")
_CONFLICTING_SCOPES = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))


def _is_hugepages(name: str) -> bool:
    return name.startswith(("hugepages-", "requests.hugepages-"))


def _resource_name(c: Checker, name: str, path: str, standard: frozenset[str], message: str) -> bool:
    """validateResourceName: a qualified name; without a domain, one of `standard`."""
    errors = qualified_name_errors(name)
    for msg in errors:
        c.invalid(path, name, msg)
    if not errors and "/" not in name and name not in standard and not _is_hugepages(name):
        c.invalid(path, name, message)
        return False
    return not errors


def _container_resource_name(c: Checker, name: str, path: str) -> None:
    """validateContainerResourceName: cpu, memory, ephemeral-storage, hugepages-*, or an extended resource."""
    if not _resource_name(c, name, path, _STANDARD_RESOURCES, "must be a standard resource type or fully qualified"):
        return
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            c.invalid(path, name, "must be a standard resource for containers")
    elif "kubernetes.io/" not in name and (name.startswith("requests.") or qualified_name_errors("requests." + name)):
        c.invalid(path, name, "doesn't follow extended resource name standard")


def _quantities(c: Checker, value: Any, path: str) -> dict[str, tuple[Any, Fraction]]:
    """A resource list's names and amounts (the quantities must parse; names are checked by the caller)."""
    good = {}
    for name, raw in (c.typed(value, path, dict) or {}).items():
        try:
            good[name] = (raw, parse_quantity(raw))
        except QuantityError as e:
            c.err(subpath(path, name), str(e))
    return good


def _limit_range(c: Checker, obj: dict[str, Any], path: str) -> None:
    """ValidateLimitRange: one item per type, known resource names, and min <= defaultRequest <=
    default <= max, a ratio of at least 1 that max/min allows."""
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict) or {}
    seen: set[str] = set()
    for i, item in enumerate(c.get(spec, "limits", spec_path, list) or ()):
        item_path = f"{spec_path}.limits[{i}]"
        if c.typed(item, item_path, dict) is None:
            continue
        kind = c.get(item, "type", item_path, str) or ""
        errors = qualified_name_errors(kind)
        for msg in errors:
            c.invalid(subpath(item_path, "type"), kind, msg)
        if not errors and "/" not in kind and kind not in LIMIT_TYPES:
            c.invalid(subpath(item_path, "type"), kind, "must be a standard limit type or fully qualified")
        if kind in seen:
            c.err(subpath(item_path, "type"), f"Duplicate value: {_show(kind)}")
        seen.add(kind)
        fields = ["max", "min", "maxLimitRequestRatio"]
        if kind == "Pod":
            for key in ("default", "defaultRequest"):
                if item.get(key):
                    c.err(subpath(item_path, key), "Forbidden: may not be specified when `type` is 'Pod'")
        else:
            fields += ["default", "defaultRequest"]
        lists = {}
        for key in fields:
            lists[key] = _quantities(c, item.get(key), subpath(item_path, key))
            for name in lists[key]:
                if kind in ("Pod", "Container"):
                    _container_resource_name(c, name, subpath(subpath(item_path, key), name))
                else:
                    _resource_name(c, name, subpath(subpath(item_path, key), name), _STANDARD_RESOURCES,
                                   "must be a standard resource type or fully qualified")
        if kind == "PersistentVolumeClaim" and "storage" not in lists["min"] and "storage" not in lists["max"]:
            c.required(subpath(item_path, "limits"), "either minimum or maximum storage value is required, "
                                                 "but neither was provided")
        for name in sorted({n for values in lists.values() for n in values}):
            _limit_range_item(c, item_path, name, lists)


def _limit_range_item(c: Checker, path: str, name: str, lists: dict[str, dict[str, tuple[Any, Fraction]]]) -> None:
    """The order rules between one resource's min, max, default, defaultRequest and ratio."""
    def get(key: str) -> tuple[Any, Fraction] | None:
        return lists.get(key, {}).get(name)

    def shown(pair: tuple[Any, Fraction]) -> str:
        return quantity_string(pair[0])

    low, high, default, request, ratio = get("min"), get("max"), get("default"), get("defaultRequest"), \
        get("maxLimitRequestRatio")
    checks = [("min", low, high, low, "min value {a} is greater than max value {b}"),
              ("defaultRequest", low, request, request, "min value {a} is greater than default request value {b}"),
              ("defaultRequest", request, high, request, "default request value {a} is greater than max value {b}"),
              ("defaultRequest", request, default, request,
               "default request value {a} is greater than default limit value {b}"),
              ("default", low, default, low, "min value {a} is greater than default value {b}"),
              ("default", default, high, high, "default value {a} is greater than max value {b}")]
    for key, a, b, value, message in checks:
        if a is not None and b is not None and a[1] > b[1]:
            c.invalid(subpath(subpath(path, key), name), shown(value), message.format(a=shown(a), b=shown(b)))
    ratio_path = subpath(subpath(path, "maxLimitRequestRatio"), name)
    if ratio is not None and ratio[1] < 1:
        c.invalid(ratio_path, shown(ratio), f"ratio {shown(ratio)} is less than 1")
    if ratio is not None and low is not None and high is not None and low[1]:
        most = float(milli_value(high[1])) / float(milli_value(low[1]))
        if float(milli_value(ratio[1])) / 1000 > most:
            c.invalid(ratio_path, shown(ratio), f"ratio {shown(ratio)} is greater than max/min = {most:f}")
    if not _overcommits(name) and default is not None and request is not None and default[1] != request[1]:
        c.invalid(subpath(subpath(path, "defaultRequest"), name), shown(request),
                  f"default value {shown(default)} must equal to defaultRequest value {shown(request)} in {name}")


def _overcommits(name: str) -> bool:
    """helper.IsOvercommitAllowed: native resources other than hugepages."""
    return ("/" not in name or "kubernetes.io/" in name) and not name.startswith("hugepages-")


def _resource_quota(c: Checker, obj: dict[str, Any], path: str) -> None:
    """ValidateResourceQuotaSpec: quota resource names with non-negative (integral where counted)
    amounts, known scopes that suit the resources, and a well-formed scope selector."""
    spec_path = subpath(path, "spec")
    spec = c.get(obj, "spec", path, dict) or {}
    hard_path = subpath(spec_path, "hard")
    hard = _quantities(c, spec.get("hard"), hard_path)
    for name, (raw, amount) in hard.items():
        item_path = subpath(hard_path, name)
        _resource_name(c, name, item_path, _QUOTA_RESOURCES, "must be a standard resource for quota")
        if amount < 0:
            c.invalid(item_path, quantity_string(raw), NONNEGATIVE_MSG)
        elif (name in _INTEGER_RESOURCES or is_extended_resource(name)) and amount.denominator != 1:
            c.invalid(item_path, quantity_string(raw), "must be an integer")
    standard = sorted(n for n in hard if n in _QUOTA_RESOURCES or _is_hugepages(n))
    scopes_path = subpath(spec_path, "scopes")
    scopes = [s for s in c.get(spec, "scopes", spec_path, list) or () if c.typed(s, scopes_path, str) is not None]
    problems = []  # upstream reports each message once (ErrorList.ToAggregate)
    for scope in scopes:
        if scope not in SCOPES:
            problems.append("unsupported scope")
        if any(name not in _SCOPE_RESOURCES.get(scope, {name}) for name in standard):
            problems.append("unsupported scope applied to resource")
    problems += ["conflicting scopes" for pair in _CONFLICTING_SCOPES if set(pair) <= set(scopes)]
    for problem in dict.fromkeys(problems):
        c.invalid(scopes_path, scopes, problem)
    selector_path = subpath(spec_path, "scopeSelector")
    selector = c.get(spec, "scopeSelector", spec_path, dict)
    if selector is not None:
        _scope_selector(c, selector, selector_path, standard)


def _scope_selector(c: Checker, selector: dict[str, Any], path: str, standard: list[str]) -> None:
    expressions_path = subpath(path, "matchExpressions")
    named = set()
    for i, req in enumerate(c.get(selector, "matchExpressions", path, list) or ()):
        req_path = f"{expressions_path}[{i}]"
        if c.typed(req, req_path, dict) is None:
            continue
        scope, operator = c.get(req, "scopeName", req_path, str), c.get(req, "operator", req_path, str)
        values = c.get(req, "values", req_path, list) or []
        if scope not in SCOPES:
            c.invalid(subpath(expressions_path, "scopeName"), scope, "unsupported scope")
        if any(name not in _SCOPE_RESOURCES.get(scope or "", {name}) for name in standard):
            c.invalid(expressions_path, selector, "unsupported scope applied to resource")
        if scope in _EXISTS_ONLY_SCOPES and operator != "Exists":
            c.invalid(subpath(expressions_path, "operator"), operator,
                      "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, "
                      "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
                      "ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity")
        if operator in ("In", "NotIn") and not values:
            c.required(subpath(expressions_path, "values"),
                       "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector")
        elif operator in ("Exists", "DoesNotExist") and values:
            c.invalid(subpath(expressions_path, "values"), values,
                      "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector")
        elif operator not in SCOPE_OPERATORS:
            c.invalid(subpath(expressions_path, "operator"), operator, "not a valid selector operator")
        named.add(scope)
    for pair in _CONFLICTING_SCOPES:
        if set(pair) <= named:
            c.invalid(expressions_path, selector, "conflicting scopes")
