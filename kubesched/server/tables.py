"""The `meta.k8s.io/v1` Table that kube-apiserver answers `kubectl get` with.

kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and prints whatever columns the
server sends, so the columns, their order and priority (0: always shown, 1: only with `-o wide`)
and every cell's text must be the server's own: the printers of kubernetes/kubernetes
`pkg/printers/internalversion` for the kinds that have one, the default table convertor (Name,
Created At) for the rest. Like the server, every row carries every cell (the server always prints
"wide"; kubectl drops the columns it does not show).

Objects are the stored JSON. The server prints objects after defaulting, so a field the API server
defaults reads as its default when it is missing. Times are measured against the `now` the caller
passes (virtual time in a simulation), never the wall clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, NamedTuple

from kubesched.api.quantity import QuantityError, quantity_string
from kubesched.server import schema

Obj = dict[str, Any]
Cell = str | int | bool

INCLUDE_OBJECT = ("None", "Metadata", "Object")
_META = "meta.k8s.io/v1"

# --- time -------------------------------------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)
_SECOND = 10**9
_MINUTE = 60 * _SECOND
_HOUR = 60 * _MINUTE


def human_duration(nanos: int) -> str:
    """duration.HumanDuration: about two significant units ("45s", "5m30s", "3h", "2d3h", "4y"),
    "0s" for less than two seconds in the future (clock skew), "<invalid>" beyond."""
    seconds = nanos // _SECOND if nanos >= 0 else -(-nanos // _SECOND)  # Go truncates toward zero
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = nanos // _MINUTE
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m{s}s" if s else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = nanos // _HOUR
    if hours < 8:
        m = minutes % 60
        return f"{hours}h{m}m" if m else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d{h}h" if h else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y{dy}d" if dy else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def _micros(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _parse_micros(stamp: Any) -> int | None:
    """A metav1.Time or MicroTime as microseconds since the epoch; None for no time (absent, the
    zero time, or text that is not a time)."""
    if not stamp or not isinstance(stamp, str):
        return None
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return None if moment == _ZERO_TIME else _micros(moment)


class _Since:
    """translateTimestampSince against one `now`. Memoised: the objects of a list share few
    distinct timestamps (a Deployment's pods are created in the same second)."""

    def __init__(self, now: datetime) -> None:
        self.now = _micros(now)
        self._memo: dict[str, str] = {}

    def __call__(self, stamp: Any) -> str:
        if not isinstance(stamp, str):
            return "<unknown>"
        text = self._memo.get(stamp)
        if text is None:
            at = _parse_micros(stamp)
            text = "<unknown>" if at is None else human_duration((self.now - at) * 1000)
            self._memo[stamp] = text
        return text


# --- formatting helpers shared by the printers ------------------------------------------------------


def _get(obj: Mapping[str, Any] | None, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _none(text: str | None) -> str:
    return text or "<none>"


def _format_labels(labels: Mapping[str, Any] | None) -> str:
    """labels.FormatLabels: k=v in key order, <none> when there are none."""
    if not labels:
        return "<none>"
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def _selector_string(selector: Mapping[str, Any] | None) -> str | None:
    """LabelSelectorAsSelector(selector).String(): requirements in key order ("" for no selector
    or an empty one); None where the selector is not one the API could have accepted."""
    if not selector:
        return ""
    reqs: list[tuple[str, str]] = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr.get("key") or "", expr.get("operator"), expr.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                return None
            word = " in " if op == "In" else " notin "
            reqs.append((key, f"{key}{word}({','.join(sorted(values))})"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                return None
            reqs.append((key, key if op == "Exists" else f"!{key}"))
        else:
            return None
    reqs.sort(key=lambda r: r[0])
    return ",".join(text for _, text in reqs)


def _format_selector(selector: Mapping[str, Any] | None) -> str:
    """metav1.FormatLabelSelector: <none> for matching everything (or nothing), <error> for a
    selector that cannot be read."""
    text = _selector_string(selector)
    return "<error>" if text is None else text or "<none>"


def _containers(pod_spec: Mapping[str, Any] | None) -> tuple[str, str]:
    """layoutContainerCells: the containers' names and images, comma-separated."""
    containers = _get(pod_spec, "containers") or ()
    return ",".join(c.get("name") or "" for c in containers), ",".join(c.get("image") or "" for c in containers)


def _quantity(raw: Any) -> str:
    """Quantity.String() of a stored amount; "0" for none, as Go prints the zero Quantity."""
    if raw is None or raw == "":
        return "0"
    try:
        return quantity_string(raw)
    except (QuantityError, TypeError, ValueError):
        return str(raw)


def _intstr(value: Any) -> str:
    return "N/A" if value is None else str(value)


_ACCESS_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                 ("ReadWriteOncePod", "RWOP"))


def _access_modes(modes: Iterable[str] | None) -> str:
    """helper.GetAccessModesAsString: the short names, always in this order."""
    have = set(modes or ())
    return ",".join(short for mode, short in _ACCESS_MODES if mode in have)


def _storage_class(obj: Obj) -> str:
    """GetPersistentVolume(Claim)Class: the beta annotation wins over spec.storageClassName."""
    annotations = _get(obj, "metadata", "annotations") or {}
    if "volume.beta.kubernetes.io/storage-class" in annotations:
        return annotations["volume.beta.kubernetes.io/storage-class"]
    return _get(obj, "spec", "storageClassName") or ""


def _condition_status(conditions: Iterable[Mapping[str, Any]] | None, ctype: str) -> str | None:
    for c in conditions or ():
        if c.get("type") == ctype:
            return c.get("status")
    return None


def _join_host_port(host: str, port: Any) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _more(items: list[str], count: int, limit: int, empty: str) -> str:
    """The first `limit` of `count` items and how many more there are (listWithMoreString)."""
    text = ",".join(items)
    if count > limit:
        return f"{text} + {count - limit} more..."
    return text or empty


# --- columns ----------------------------------------------------------------------------------------

# A column's description is kube-apiserver's: mostly the API's own documentation of a field, read
# from the v1.35 OpenAPI definitions (group.version.Type, field) when first needed.
_Doc = str | tuple[str, str]


class _Column(NamedTuple):
    name: str
    type: str
    format: str
    doc: _Doc
    priority: int


def _col(name: str, doc: _Doc, type_: str = "string", priority: int = 0, fmt: str = "") -> _Column:
    return _Column(name, type_, fmt, doc, priority)


_META_NAME = ("meta.v1.ObjectMeta", "name")
_NAME = _col("Name", _META_NAME, fmt="name")
_AGE = _col("Age", ("meta.v1.ObjectMeta", "creationTimestamp"))
_CONTAINERS = "Names of each container in the template."
_IMAGES = "Images referenced by each container in the template."


def _describe(doc: _Doc) -> str:
    if isinstance(doc, str):
        return doc
    definition, field = doc
    prefix = "io.k8s.apimachinery.pkg.apis." if definition.startswith("meta.") else "io.k8s.api."
    props = schema.definitions().get(prefix + definition, {}).get("properties") or {}
    return (props.get(field) or {}).get("description", "")


def _workload_wide(selector_doc: _Doc) -> tuple[_Column, ...]:
    return (_col("Containers", _CONTAINERS, priority=1), _col("Images", _IMAGES, priority=1),
            _col("Selector", selector_doc, priority=1))


# --- printers: each returns a row's cells, in its columns' order ------------------------------------

_CellsOf = Callable[[Obj, _Since], list[Cell]]


def _pod_cells(pod: Obj, since: _Since) -> list[Cell]:
    """printPod. STATUS is not the phase: it is the reason of the first init container that has
    not finished well, or else of the first container waiting or terminated."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    conditions = status.get("conditions") or ()
    phase = status.get("phase") or "Pending"
    reason = status.get("reason") or phase
    for c in conditions:
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    init_specs = spec.get("initContainers") or ()
    sidecars = {c.get("name") for c in init_specs if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or ()) + sum(1 for c in init_specs if c.get("restartPolicy") == "Always")
    ready = restarts = sidecar_restarts = 0
    last = sidecar_last = None
    initializing = False
    for i, cs in enumerate(status.get("initContainerStatuses") or ()):
        count = _int(cs.get("restartCount"))
        finished = _last_finished(cs)
        restarts += count
        last = _later(last, finished)
        sidecar = cs.get("name") in sidecars
        if sidecar:
            sidecar_restarts += count
            sidecar_last = _later(sidecar_last, finished)
        state = cs.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and _int(terminated.get("exitCode")) == 0:
            continue
        if sidecar and cs.get("started"):
            ready += bool(cs.get("ready"))
            continue
        if terminated is not None:
            if terminated.get("reason"):
                reason = "Init:" + terminated["reason"]
            elif _int(terminated.get("signal")):
                reason = f"Init:Signal:{terminated['signal']}"
            else:
                reason = f"Init:ExitCode:{_int(terminated.get('exitCode'))}"
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _condition_status(conditions, "Initialized") == "True":
        restarts, last = sidecar_restarts, sidecar_last
        running = False
        for cs in reversed(status.get("containerStatuses") or ()):
            restarts += _int(cs.get("restartCount"))
            last = _later(last, _last_finished(cs))
            state = cs.get("state") or {}
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated is not None and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated is not None:
                signal = _int(terminated.get("signal"))
                reason = f"Signal:{signal}" if signal else f"ExitCode:{_int(terminated.get('exitCode'))}"
            elif cs.get("ready") and state.get("running") is not None:
                running = True
                ready += 1
        if reason == "Completed" and running:
            reason = "Running" if _condition_status(conditions, "Ready") == "True" else "NotReady"

    meta = pod.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts and last is not None:
        restarts_cell = f"{restarts} ({human_duration((since.now - last) * 1000)} ago)"

    ips = status.get("podIPs")
    ip = (ips[0].get("ip") if ips else None) or status.get("podIP")
    gates = spec.get("readinessGates") or ()
    gates_cell = "<none>"
    if gates:
        met = sum(1 for g in gates if _condition_status(conditions, g.get("conditionType")) == "True")
        gates_cell = f"{met}/{len(gates)}"
    return [meta.get("name") or "", f"{ready}/{total}", reason, restarts_cell, since(meta.get("creationTimestamp")),
            _none(ip), _none(spec.get("nodeName")), _none(status.get("nominatedNodeName")), gates_cell]


def _last_finished(container_status: Obj) -> int | None:
    return _parse_micros(_get(container_status, "lastState", "terminated", "finishedAt"))


def _later(a: int | None, b: int | None) -> int | None:
    return b if a is None or (b is not None and b > a) else a


_POD_FINISHED = {"Succeeded": "The pod has completed successfully.", "Failed": "The pod failed."}


def _pod_conditions(pod: Obj) -> list[Obj] | None:
    """The row conditions printPod sets: a finished pod's row is marked Completed."""
    phase = _get(pod, "status", "phase")
    if phase not in _POD_FINISHED:
        return None
    return [{"type": "Completed", "status": "True", "reason": phase, "message": _POD_FINISHED[phase]}]


def _node_cells(node: Obj, since: _Since) -> list[Cell]:
    """printNode: Ready / NotReady / Unknown from the Ready condition, SchedulingDisabled when
    cordoned; the roles from node-role.kubernetes.io/<role> and kubernetes.io/role labels."""
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    ready = _condition_status(status.get("conditions"), "Ready")
    states = ["Unknown" if ready is None else "Ready" if ready == "True" else "NotReady"]
    if _get(node, "spec", "unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for key, value in (meta.get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/"):
            if role := key[len("node-role.kubernetes.io/"):]:
                roles.add(role)
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    info = status.get("nodeInfo") or {}
    addresses = status.get("addresses") or ()

    def address(kind: str) -> str:
        return next((a.get("address") or "" for a in addresses if a.get("type") == kind), "<none>")

    return [meta.get("name") or "", ",".join(states), ",".join(sorted(roles)) or "<none>",
            since(meta.get("creationTimestamp")), info.get("kubeletVersion") or "",
            address("InternalIP"), address("ExternalIP"), info.get("osImage") or "<unknown>",
            info.get("kernelVersion") or "<unknown>", info.get("containerRuntimeVersion") or "<unknown>"]


def _event_cells(event: Obj, since: _Since) -> list[Cell]:
    """printEvent, for the core/v1 shape and the events.k8s.io/v1 one (the same stored Event)."""
    if "regarding" in event or "note" in event or "deprecatedSource" in event:
        target, message = event.get("regarding") or {}, event.get("note")
        source = event.get("deprecatedSource") or {}
        first_at, last_at = event.get("deprecatedFirstTimestamp"), event.get("deprecatedLastTimestamp")
        count, controller = event.get("deprecatedCount"), event.get("reportingController")
    else:
        target, message = event.get("involvedObject") or {}, event.get("message")
        source = event.get("source") or {}
        first_at, last_at = event.get("firstTimestamp"), event.get("lastTimestamp")
        count, controller = event.get("count"), event.get("reportingComponent")
    first = since(first_at) if _parse_micros(first_at) is not None else since(event.get("eventTime"))
    last = since(last_at) if _parse_micros(last_at) is not None else first
    count = _int(count)
    series = event.get("series")
    if series is not None:
        last, count = since(series.get("lastObservedTime")), _int(series.get("count"))
    elif count == 0:
        count = 1  # a singleton event of the new API has no count
    kind = (target.get("kind") or "").lower()
    obj = f"{kind}/{target['name']}" if target.get("name") else kind
    component = source.get("component") or controller or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    return [last, event.get("type") or "", event.get("reason") or "", obj, target.get("fieldPath") or "",
            f"{component}, {instance}" if instance else component, (message or "").strip(), first, count,
            _get(event, "metadata", "name") or ""]


def _service_cells(svc: Obj, since: _Since) -> list[Cell]:
    spec = svc.get("spec") or {}
    kind = spec.get("type") or "ClusterIP"
    cluster_ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    external_ips = spec.get("externalIPs") or []
    if kind in ("ClusterIP", "NodePort"):
        external = ",".join(external_ips) or "<none>"
    elif kind == "LoadBalancer":
        ingress = _get(svc, "status", "loadBalancer", "ingress") or ()
        seen = sorted({i.get("ip") or i.get("hostname") for i in ingress if i.get("ip") or i.get("hostname")})
        external = ",".join(seen + external_ips) or "<pending>"
    elif kind == "ExternalName":
        external = spec.get("externalName") or ""
    else:
        external = "<unknown>"
    ports = []
    for p in spec.get("ports") or ():
        node_port = _int(p.get("nodePort"))
        number = f"{_int(p.get('port'))}:{node_port}" if node_port > 0 else str(_int(p.get("port")))
        ports.append(f"{number}/{p.get('protocol') or 'TCP'}")
    meta = svc.get("metadata") or {}
    return [meta.get("name") or "", kind, cluster_ips[0] if cluster_ips else "<none>", external,
            ",".join(ports) or "<none>", since(meta.get("creationTimestamp")), _format_labels(spec.get("selector"))]


def _endpoints_cells(ep: Obj, since: _Since) -> list[Cell]:
    """formatEndpoints: ip:port for every port of every subset, the first three shown."""
    subsets = ep.get("subsets") or ()
    meta = ep.get("metadata") or {}
    if not subsets:
        return [meta.get("name") or "", "<none>", since(meta.get("creationTimestamp"))]
    shown: list[str] = []
    count = 0
    for ss in subsets:
        addresses = [a.get("ip") or "" for a in ss.get("addresses") or ()]
        ports = ss.get("ports") or ()
        if not ports:  # a headless service may have none
            for ip in addresses:
                count += 1
                if len(shown) < 3:
                    shown.append(ip)
            continue
        for p in ports:
            for ip in addresses:
                count += 1
                if len(shown) < 3:
                    shown.append(_join_host_port(ip, _int(p.get("port"))))
    text = ",".join(shown)
    if count > 3:
        text = f"{text} + {count - 3} more..."
    return [meta.get("name") or "", text, since(meta.get("creationTimestamp"))]


def _endpoint_slice_cells(es: Obj, since: _Since) -> list[Cell]:
    ports = es.get("ports") or ()
    shown_ports = [str(p["port"]) if p.get("port") is not None else p.get("name") or "*" for p in ports[:3]]
    addresses = [a for e in es.get("endpoints") or () for a in e.get("addresses") or ()]
    meta = es.get("metadata") or {}
    return [meta.get("name") or "", es.get("addressType") or "", _more(shown_ports, len(ports), 3, "<unset>"),
            _more(addresses[:3], len(addresses), 3, "<unset>"), since(meta.get("creationTimestamp"))]


def _job_cells(job: Obj, since: _Since) -> list[Cell]:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    meta = job.get("metadata") or {}
    succeeded = _int(status.get("succeeded"))
    completions = spec.get("completions")
    parallelism = _int(spec.get("parallelism"), 1)
    if completions is not None:
        done = f"{succeeded}/{_int(completions)}"
    elif parallelism > 1:
        done = f"{succeeded}/1 of {parallelism}"
    else:
        done = f"{succeeded}/1"
    start, end = _parse_micros(status.get("startTime")), _parse_micros(status.get("completionTime"))
    took = "" if start is None else human_duration(((since.now if end is None else end) - start) * 1000)
    conditions = status.get("conditions")

    def true(ctype: str) -> bool:
        return _condition_status(conditions, ctype) == "True"

    if true("Complete"):
        state = "Complete"
    elif true("Failed"):
        state = "Failed"
    elif meta.get("deletionTimestamp"):
        state = "Terminating"
    elif true("Suspended"):
        state = "Suspended"
    elif true("FailureTarget"):
        state = "FailureTarget"
    elif true("SuccessCriteriaMet"):
        state = "SuccessCriteriaMet"
    else:
        state = "Running"
    names, images = _containers(_get(spec, "template", "spec"))
    return [meta.get("name") or "", state, done, took, since(meta.get("creationTimestamp")), names, images,
            _format_selector(spec.get("selector"))]


def _cronjob_cells(cj: Obj, since: _Since) -> list[Cell]:
    spec, status = cj.get("spec") or {}, cj.get("status") or {}
    meta = cj.get("metadata") or {}
    job_spec = _get(spec, "jobTemplate", "spec") or {}
    names, images = _containers(_get(job_spec, "template", "spec"))
    last = since(status["lastScheduleTime"]) if status.get("lastScheduleTime") else "<none>"
    return [meta.get("name") or "", spec.get("schedule") or "", spec.get("timeZone") or "<none>",
            "True" if spec.get("suspend") else "False", len(status.get("active") or ()), last,
            since(meta.get("creationTimestamp")), names, images, _format_selector(job_spec.get("selector"))]


def _deployment_cells(d: Obj, since: _Since) -> list[Cell]:
    spec, status = d.get("spec") or {}, d.get("status") or {}
    meta = d.get("metadata") or {}
    names, images = _containers(_get(spec, "template", "spec"))
    selector = _selector_string(spec.get("selector"))
    return [meta.get("name") or "", f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'), 1)}",
            _int(status.get("updatedReplicas")), _int(status.get("availableReplicas")),
            since(meta.get("creationTimestamp")), names, images, "<invalid>" if selector is None else selector]


def _replicaset_cells(rs: Obj, since: _Since) -> list[Cell]:
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    meta = rs.get("metadata") or {}
    names, images = _containers(_get(spec, "template", "spec"))
    return [meta.get("name") or "", _int(spec.get("replicas"), 1), _int(status.get("replicas")),
            _int(status.get("readyReplicas")), since(meta.get("creationTimestamp")), names, images,
            _format_selector(spec.get("selector"))]


def _rc_cells(rc: Obj, since: _Since) -> list[Cell]:
    spec, status = rc.get("spec") or {}, rc.get("status") or {}
    meta = rc.get("metadata") or {}
    names, images = _containers(_get(spec, "template", "spec"))
    return [meta.get("name") or "", _int(spec.get("replicas"), 1), _int(status.get("replicas")),
            _int(status.get("readyReplicas")), since(meta.get("creationTimestamp")), names, images,
            _format_labels(spec.get("selector"))]


def _statefulset_cells(sts: Obj, since: _Since) -> list[Cell]:
    spec, status = sts.get("spec") or {}, sts.get("status") or {}
    meta = sts.get("metadata") or {}
    names, images = _containers(_get(spec, "template", "spec"))
    return [meta.get("name") or "", f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'), 1)}",
            since(meta.get("creationTimestamp")), names, images]


def _daemonset_cells(ds: Obj, since: _Since) -> list[Cell]:
    spec, status = ds.get("spec") or {}, ds.get("status") or {}
    meta = ds.get("metadata") or {}
    pod_spec = _get(spec, "template", "spec") or {}
    names, images = _containers(pod_spec)
    return [meta.get("name") or "", _int(status.get("desiredNumberScheduled")),
            _int(status.get("currentNumberScheduled")), _int(status.get("numberReady")),
            _int(status.get("updatedNumberScheduled")), _int(status.get("numberAvailable")),
            _format_labels(pod_spec.get("nodeSelector")), since(meta.get("creationTimestamp")), names, images,
            _format_selector(spec.get("selector"))]


def _pdb_cells(pdb: Obj, since: _Since) -> list[Cell]:
    spec = pdb.get("spec") or {}
    meta = pdb.get("metadata") or {}
    return [meta.get("name") or "", _intstr(spec.get("minAvailable")), _intstr(spec.get("maxUnavailable")),
            _int(_get(pdb, "status", "disruptionsAllowed")), since(meta.get("creationTimestamp"))]


def _pod_template_cells(pt: Obj, since: _Since) -> list[Cell]:
    template = pt.get("template") or {}
    names, images = _containers(template.get("spec"))
    return [_get(pt, "metadata", "name") or "", names, images, _format_labels(_get(template, "metadata", "labels"))]


def _pv_cells(pv: Obj, since: _Since) -> list[Cell]:
    spec, meta = pv.get("spec") or {}, pv.get("metadata") or {}
    claim = spec.get("claimRef")
    phase = "Terminating" if meta.get("deletionTimestamp") else _get(pv, "status", "phase") or "Pending"
    return [meta.get("name") or "", _quantity(_get(spec, "capacity", "storage")), _access_modes(spec.get("accessModes")),
            spec.get("persistentVolumeReclaimPolicy") or "Retain", phase,
            f"{claim.get('namespace') or ''}/{claim.get('name') or ''}" if claim is not None else "",
            _storage_class(pv), spec.get("volumeAttributesClassName") or "<unset>",
            _get(pv, "status", "reason") or "", since(meta.get("creationTimestamp")),
            spec.get("volumeMode") or "Filesystem"]


def _pvc_cells(pvc: Obj, since: _Since) -> list[Cell]:
    spec, meta, status = pvc.get("spec") or {}, pvc.get("metadata") or {}, pvc.get("status") or {}
    phase = "Terminating" if meta.get("deletionTimestamp") else status.get("phase") or "Pending"
    volume = spec.get("volumeName") or ""
    capacity = modes = ""
    if volume:
        capacity = _quantity(_get(status, "capacity", "storage"))
        modes = _access_modes(status.get("accessModes"))
    return [meta.get("name") or "", phase, volume, capacity, modes, _storage_class(pvc),
            spec.get("volumeAttributesClassName") or "<unset>", since(meta.get("creationTimestamp")),
            spec.get("volumeMode") or "Filesystem"]


def _storage_class_cells(sc: Obj, since: _Since) -> list[Cell]:
    meta = sc.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    name = meta.get("name") or ""
    if "true" in (annotations.get("storageclass.kubernetes.io/is-default-class"),
                  annotations.get("storageclass.beta.kubernetes.io/is-default-class")):
        name += " (default)"
    return [name, sc.get("provisioner") or "", sc.get("reclaimPolicy") or "Delete",
            sc.get("volumeBindingMode") or "Immediate", bool(sc.get("allowVolumeExpansion")),
            since(meta.get("creationTimestamp"))]


def _csi_driver_cells(d: Obj, since: _Since) -> list[Cell]:
    spec = d.get("spec") or {}
    tokens = spec.get("tokenRequests")
    modes = spec.get("volumeLifecycleModes") or ["Persistent"]
    return [_get(d, "metadata", "name") or "", spec.get("attachRequired", True) is not False,
            bool(spec.get("podInfoOnMount")), bool(spec.get("storageCapacity")),
            "<unset>" if tokens is None else ",".join(t.get("audience") or "" for t in tokens),
            bool(spec.get("requiresRepublish")), ",".join(modes), since(_get(d, "metadata", "creationTimestamp"))]


def _csi_storage_capacity_cells(c: Obj, since: _Since) -> list[Cell]:
    capacity = c.get("capacity")
    return [_get(c, "metadata", "name") or "", c.get("storageClassName") or "",
            "<unset>" if capacity is None else _quantity(capacity)]


def _volume_attachment_cells(va: Obj, since: _Since) -> list[Cell]:
    spec = va.get("spec") or {}
    return [_get(va, "metadata", "name") or "", spec.get("attacher") or "",
            _get(spec, "source", "persistentVolumeName") or "", spec.get("nodeName") or "",
            bool(_get(va, "status", "attached")), since(_get(va, "metadata", "creationTimestamp"))]


def _binding_cells(rb: Obj, since: _Since) -> list[Cell]:
    """A RoleBinding or ClusterRoleBinding: the role it grants, and to whom (rbac.SubjectsStrings)."""
    users, groups, accounts = [], [], []
    for s in rb.get("subjects") or ():
        kind = s.get("kind")
        if kind == "ServiceAccount":
            accounts.append(f"{s.get('namespace') or ''}/{s.get('name') or ''}")
        elif kind == "User":
            users.append(s.get("name") or "")
        elif kind == "Group":
            groups.append(s.get("name") or "")
    ref = rb.get("roleRef") or {}
    return [_get(rb, "metadata", "name") or "", f"{ref.get('kind') or ''}/{ref.get('name') or ''}",
            since(_get(rb, "metadata", "creationTimestamp")), ", ".join(users), ", ".join(groups), ", ".join(accounts)]


def _controller_revision_cells(cr: Obj, since: _Since) -> list[Cell]:
    meta = cr.get("metadata") or {}
    controller = "<none>"
    owner = next((r for r in meta.get("ownerReferences") or () if r.get("controller")), None)
    if owner is not None:
        group, _, _ = (owner.get("apiVersion") or "").rpartition("/")
        kind = owner.get("kind") or ""
        group_kind = f"{kind}.{group}" if group else kind
        controller = f"{group_kind.lower()}/{owner.get('name') or ''}" if group_kind else owner.get("name") or ""
    return [meta.get("name") or "", controller, _int(cr.get("revision")), since(meta.get("creationTimestamp"))]


def _resource_quota_cells(rq: Obj, since: _Since) -> list[Cell]:
    """printResourceQuota: used/hard for each resource the quota tracks, limits.* apart."""
    hard = _get(rq, "status", "hard") or {}
    used = _get(rq, "status", "used") or {}
    requests, limits = [], []
    for name in sorted(hard):
        text = f"{name}: {_quantity(used.get(name))}/{_quantity(hard[name])}"
        (limits if name.startswith("limits.") else requests).append(text)
    return [_get(rq, "metadata", "name") or "", ", ".join(requests), ", ".join(limits),
            since(_get(rq, "metadata", "creationTimestamp"))]


def _ingress_cells(ing: Obj, since: _Since) -> list[Cell]:
    spec = ing.get("spec") or {}
    rules = spec.get("rules") or ()
    hosts: list[str] = []
    more = False  # formatHosts: once three hosts are listed, any further rule makes "+ N more"
    for rule in rules:
        if len(hosts) == 3:
            more = True
        if not more and rule.get("host"):
            hosts.append(rule["host"])
    host_cell = ",".join(hosts) or "*"
    if hosts and more:
        host_cell = f"{host_cell} + {len(rules) - 3} more..."
    ingress = _get(ing, "status", "loadBalancer", "ingress") or ()
    address = ",".join(sorted({i.get("ip") or i.get("hostname") for i in ingress if i.get("ip") or i.get("hostname")}))
    return [_get(ing, "metadata", "name") or "", spec.get("ingressClassName") or "<none>", host_cell, address,
            "80, 443" if spec.get("tls") else "80", since(_get(ing, "metadata", "creationTimestamp"))]


def _ingress_class_cells(ic: Obj, since: _Since) -> list[Cell]:
    spec = ic.get("spec") or {}
    params = spec.get("parameters")
    text = "<none>"
    if params is not None:
        text = params.get("kind") or ""
        if params.get("apiGroup") is not None:
            text += "." + params["apiGroup"]
        text += "/" + (params.get("name") or "")
    return [_get(ic, "metadata", "name") or "", spec.get("controller") or "", text,
            since(_get(ic, "metadata", "creationTimestamp"))]


def _priority_class_cells(pc: Obj, since: _Since) -> list[Cell]:
    return [_get(pc, "metadata", "name") or "", _int(pc.get("value")), bool(pc.get("globalDefault")),
            since(_get(pc, "metadata", "creationTimestamp")), pc.get("preemptionPolicy") or "PreemptLowerPriority"]


def resource_claim_state(claim: Obj) -> str:
    """A claim's STATE: `deleted` while it is being deleted, `pending` until it is allocated
    (unless deleted), then `allocated` and, while some consumer holds it, `reserved`."""
    states = []
    deleting = bool(_get(claim, "metadata", "deletionTimestamp"))
    if deleting:
        states.append("deleted")
    if _get(claim, "status", "allocation") is None:
        if not deleting:
            states.append("pending")
    else:
        states.append("allocated")
        if _get(claim, "status", "reservedFor"):
            states.append("reserved")
    return ",".join(states)


def _named(*fields: Callable[[Obj], Cell]) -> _CellsOf:
    """A printer whose cells are the name, the given fields, then the age."""

    def cells(obj: Obj, since: _Since) -> list[Cell]:
        meta = obj.get("metadata") or {}
        return [meta.get("name") or "", *(f(obj) for f in fields), since(meta.get("creationTimestamp"))]

    return cells


def _secret_keys(secret: Obj) -> int:
    # stringData is merged into data when a Secret is written, so it counts as data
    return len((secret.get("data") or {}).keys() | (secret.get("stringData") or {}).keys())


def _hpa_metric(spec: Obj, status: Obj | None) -> str:
    """One metric of formatHPAMetrics: `current/target`, `<unknown>` until the controller reports."""
    kind = spec.get("type")
    source_key = {"External": "external", "Pods": "pods", "Object": "object", "Resource": "resource",
                  "ContainerResource": "containerResource"}.get(kind or "")
    if source_key is None:
        return "<unknown type>"
    source = spec.get(source_key) or {}
    target = source.get("target") or {}
    current = (status or {}).get(source_key) if status else None
    now = (current or {}).get("current") or {}
    if kind in ("Resource", "ContainerResource"):
        name = source.get("name", "")
        if target.get("averageValue") is not None:
            return f"{name}: {now.get('averageValue') if current else '<unknown>'}/{target['averageValue']}"
        used = f"{now['averageUtilization']}%" if now.get("averageUtilization") is not None else "<unknown>"
        goal = f"{target['averageUtilization']}%" if target.get("averageUtilization") is not None else "<auto>"
        return f"{name}: {used}/{goal}"
    if kind == "Pods":
        return f"{now.get('averageValue') if current else '<unknown>'}/{target.get('averageValue')}"
    if target.get("averageValue") is not None:
        value = now.get("averageValue") if now.get("averageValue") is not None else "<unknown>"
        return f"{value}/{target['averageValue']} (avg)"
    return f"{now.get('value') if current else '<unknown>'}/{target.get('value')}"


def _hpa_targets(hpa: Obj) -> str:
    """formatHPAMetrics: the first two metrics, then how many more."""
    specs = _get(hpa, "spec", "metrics") or []
    if not specs:
        return "<none>"
    statuses = _get(hpa, "status", "currentMetrics") or []
    shown = [_hpa_metric(spec, statuses[i] if i < len(statuses) else None) for i, spec in enumerate(specs)]
    text = ", ".join(shown[:2])
    return f"{text} + {len(shown) - 2} more..." if len(shown) > 2 else text


def _hpa_cells(hpa: Obj, since: _Since) -> list[Cell]:
    spec, meta = hpa.get("spec") or {}, hpa.get("metadata") or {}
    ref = spec.get("scaleTargetRef") or {}
    min_pods = spec.get("minReplicas")
    return [meta.get("name") or "", f"{ref.get('kind', '')}/{ref.get('name', '')}", _hpa_targets(hpa),
            "<unset>" if min_pods is None else str(min_pods), spec.get("maxReplicas", 0),
            _get(hpa, "status", "currentReplicas") or 0, since(meta.get("creationTimestamp"))]


def _param_kind(policy: Obj) -> str:
    kind = _get(policy, "spec", "paramKind")
    return "<unset>" if kind is None else f"{kind.get('apiVersion', '')}/{kind.get('kind', '')}"


def _param_ref(binding: Obj) -> str:
    ref = _get(binding, "spec", "paramRef")
    if ref is None:
        return "<unset>"
    if ref.get("name"):
        return f"{ref.get('namespace') or '*'}/{ref['name']}"  # a name without a namespace: any
    return _format_selector(ref["selector"]) if ref.get("selector") is not None else "<unset>"


class _Printer(NamedTuple):
    columns: tuple[_Column, ...]
    cells: _CellsOf
    conditions: Callable[[Obj], list[Obj] | None] | None = None  # the row's, for kinds that set them


_PRINTERS: dict[str, _Printer] = {
    "Pod": _Printer((
        _NAME,
        _col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
        _col("Status", "The aggregate status of the containers in this pod."),
        _col("Restarts", "The number of times the containers in this pod have been restarted and when the last "
             "container in this pod has restarted."),
        _AGE,
        _col("IP", ("core.v1.PodStatus", "podIP"), priority=1),
        _col("Node", ("core.v1.PodSpec", "nodeName"), priority=1),
        _col("Nominated Node", ("core.v1.PodStatus", "nominatedNodeName"), priority=1),
        _col("Readiness Gates", ("core.v1.PodSpec", "readinessGates"), priority=1),
    ), _pod_cells, _pod_conditions),
    "PodTemplate": _Printer((
        _NAME,
        _col("Containers", _CONTAINERS),
        _col("Images", _IMAGES),
        _col("Pod Labels", "The labels for the pod template."),
    ), _pod_template_cells),
    "PodDisruptionBudget": _Printer((
        _NAME,
        _col("Min Available", "The minimum number of pods that must be available."),
        _col("Max Unavailable", "The maximum number of pods that may be unavailable."),
        _col("Allowed Disruptions", "Calculated number of pods that may be disrupted at this time.", "integer"),
        _AGE,
    ), _pdb_cells),
    "ReplicationController": _Printer((
        _NAME,
        _col("Desired", ("core.v1.ReplicationControllerSpec", "replicas"), "integer"),
        _col("Current", ("core.v1.ReplicationControllerStatus", "replicas"), "integer"),
        _col("Ready", ("core.v1.ReplicationControllerStatus", "readyReplicas"), "integer"),
        _AGE,
        *_workload_wide(("core.v1.ReplicationControllerSpec", "selector")),
    ), _rc_cells),
    "ReplicaSet": _Printer((
        _NAME,
        _col("Desired", ("apps.v1.ReplicaSetSpec", "replicas"), "integer"),
        _col("Current", ("apps.v1.ReplicaSetStatus", "replicas"), "integer"),
        _col("Ready", ("apps.v1.ReplicaSetStatus", "readyReplicas"), "integer"),
        _AGE,
        *_workload_wide(("apps.v1.ReplicaSetSpec", "selector")),
    ), _replicaset_cells),
    "DaemonSet": _Printer((
        _NAME,
        _col("Desired", ("apps.v1.DaemonSetStatus", "desiredNumberScheduled"), "integer"),
        _col("Current", ("apps.v1.DaemonSetStatus", "currentNumberScheduled"), "integer"),
        _col("Ready", ("apps.v1.DaemonSetStatus", "numberReady"), "integer"),
        _col("Up-to-date", ("apps.v1.DaemonSetStatus", "updatedNumberScheduled"), "integer"),
        _col("Available", ("apps.v1.DaemonSetStatus", "numberAvailable"), "integer"),
        _col("Node Selector", ("core.v1.PodSpec", "nodeSelector")),
        _AGE,
        *_workload_wide(("apps.v1.DaemonSetSpec", "selector")),
    ), _daemonset_cells),
    "Job": _Printer((
        _NAME,
        _col("Status", "Status of the job."),
        _col("Completions", ("batch.v1.JobStatus", "succeeded")),
        _col("Duration", "Time required to complete the job."),
        _AGE,
        *_workload_wide(("batch.v1.JobSpec", "selector")),
    ), _job_cells),
    "CronJob": _Printer((
        _NAME,
        _col("Schedule", ("batch.v1.CronJobSpec", "schedule")),
        _col("Timezone", ("batch.v1.CronJobSpec", "timeZone")),
        _col("Suspend", ("batch.v1.CronJobSpec", "suspend"), "boolean"),
        _col("Active", ("batch.v1.CronJobStatus", "active"), "integer"),
        _col("Last Schedule", ("batch.v1.CronJobStatus", "lastScheduleTime")),
        _AGE,
        *_workload_wide(("batch.v1.JobSpec", "selector")),
    ), _cronjob_cells),
    "Service": _Printer((
        _NAME,
        _col("Type", ("core.v1.ServiceSpec", "type")),
        _col("Cluster-IP", ("core.v1.ServiceSpec", "clusterIP")),
        _col("External-IP", ("core.v1.ServiceSpec", "externalIPs")),
        _col("Port(s)", ("core.v1.ServiceSpec", "ports")),
        _AGE,
        _col("Selector", ("core.v1.ServiceSpec", "selector"), priority=1),
    ), _service_cells),
    "Ingress": _Printer((
        _NAME,
        _col("Class", "The name of the IngressClass resource that should be used for additional configuration"),
        _col("Hosts", "Hosts that incoming requests are matched against before the ingress rule"),
        _col("Address", "Address is a list containing ingress points for the load-balancer"),
        _col("Ports", "Ports of TLS configurations that open"),
        _AGE,
    ), _ingress_cells),
    "IngressClass": _Printer((
        _NAME,
        _col("Controller", "Controller that is responsible for handling this class"),
        _col("Parameters", "A reference to a resource with additional parameters"),
        _AGE,
    ), _ingress_class_cells),
    "StatefulSet": _Printer((
        _NAME,
        _col("Ready", "Number of the pod with ready state"),
        _AGE,
        _col("Containers", _CONTAINERS, priority=1),
        _col("Images", _IMAGES, priority=1),
    ), _statefulset_cells),
    "Endpoints": _Printer((
        _NAME,
        _col("Endpoints", ("core.v1.Endpoints", "subsets")),
        _AGE,
    ), _endpoints_cells),
    "Node": _Printer((
        _NAME,
        _col("Status", "The status of the node"),
        _col("Roles", "The roles of the node"),
        _AGE,
        _col("Version", ("core.v1.NodeSystemInfo", "kubeletVersion")),
        _col("Internal-IP", ("core.v1.NodeStatus", "addresses"), priority=1),
        _col("External-IP", ("core.v1.NodeStatus", "addresses"), priority=1),
        _col("OS-Image", ("core.v1.NodeSystemInfo", "osImage"), priority=1),
        _col("Kernel-Version", ("core.v1.NodeSystemInfo", "kernelVersion"), priority=1),
        _col("Container-Runtime", ("core.v1.NodeSystemInfo", "containerRuntimeVersion"), priority=1),
    ), _node_cells),
    "Event": _Printer((
        _col("Last Seen", ("core.v1.Event", "lastTimestamp")),
        _col("Type", ("core.v1.Event", "type")),
        _col("Reason", ("core.v1.Event", "reason")),
        _col("Object", ("core.v1.Event", "involvedObject")),
        _col("Subobject", ("core.v1.ObjectReference", "fieldPath"), priority=1),
        _col("Source", ("core.v1.Event", "source"), priority=1),
        _col("Message", ("core.v1.Event", "message")),
        _col("First Seen", ("core.v1.Event", "firstTimestamp"), priority=1),
        _col("Count", ("core.v1.Event", "count"), priority=1),
        _col("Name", _META_NAME, priority=1, fmt="name"),
    ), _event_cells),
    "Namespace": _Printer((
        _NAME,
        _col("Status", "The status of the namespace"),
        _AGE,
    ), _named(lambda ns: _get(ns, "status", "phase") or "Active")),
    "Secret": _Printer((
        _NAME,
        _col("Type", ("core.v1.Secret", "type")),
        _col("Data", ("core.v1.Secret", "data")),
        _AGE,
    ), _named(lambda s: s.get("type") or "Opaque", _secret_keys)),
    "ServiceAccount": _Printer((
        _NAME,
        _col("Secrets", ("core.v1.ServiceAccount", "secrets")),
        _AGE,
    ), _named(lambda sa: len(sa.get("secrets") or ()))),
    "PersistentVolume": _Printer((
        _NAME,
        _col("Capacity", ("core.v1.PersistentVolumeSpec", "capacity")),
        _col("Access Modes", ("core.v1.PersistentVolumeSpec", "accessModes")),
        _col("Reclaim Policy", ("core.v1.PersistentVolumeSpec", "persistentVolumeReclaimPolicy")),
        _col("Status", ("core.v1.PersistentVolumeStatus", "phase")),
        _col("Claim", ("core.v1.PersistentVolumeSpec", "claimRef")),
        _col("StorageClass", "StorageClass of the pv"),
        _col("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
        _col("Reason", ("core.v1.PersistentVolumeStatus", "reason")),
        _AGE,
        _col("VolumeMode", ("core.v1.PersistentVolumeSpec", "volumeMode"), priority=1),
    ), _pv_cells),
    "PersistentVolumeClaim": _Printer((
        _NAME,
        _col("Status", ("core.v1.PersistentVolumeClaimStatus", "phase")),
        _col("Volume", ("core.v1.PersistentVolumeClaimSpec", "volumeName")),
        _col("Capacity", ("core.v1.PersistentVolumeClaimStatus", "capacity")),
        _col("Access Modes", ("core.v1.PersistentVolumeClaimStatus", "accessModes")),
        _col("StorageClass", "StorageClass of the pvc"),
        _col("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
        _AGE,
        _col("VolumeMode", ("core.v1.PersistentVolumeClaimSpec", "volumeMode"), priority=1),
    ), _pvc_cells),
    "Deployment": _Printer((
        _NAME,
        _col("Ready", "Number of the pod with ready state"),
        _col("Up-to-date", ("apps.v1.DeploymentStatus", "updatedReplicas")),
        _col("Available", ("apps.v1.DeploymentStatus", "availableReplicas")),
        _AGE,
        *_workload_wide(("apps.v1.DeploymentSpec", "selector")),
    ), _deployment_cells),
    "ConfigMap": _Printer((
        _NAME,
        _col("Data", ("core.v1.ConfigMap", "data")),
        _AGE,
    ), _named(lambda cm: len(cm.get("data") or ()) + len(cm.get("binaryData") or ()))),
    "NetworkPolicy": _Printer((
        _NAME,
        _col("Pod-Selector", ("networking.v1.NetworkPolicySpec", "podSelector")),
        _AGE,
    ), _named(lambda np: _format_selector(_get(np, "spec", "podSelector") or {}))),
    "RoleBinding": _Printer((
        _NAME,
        _col("Role", ("rbac.v1.RoleBinding", "roleRef")),
        _AGE,
        _col("Users", "Users in the roleBinding", priority=1),
        _col("Groups", "Groups in the roleBinding", priority=1),
        _col("ServiceAccounts", "ServiceAccounts in the roleBinding", priority=1),
    ), _binding_cells),
    "ClusterRoleBinding": _Printer((
        _NAME,
        _col("Role", ("rbac.v1.ClusterRoleBinding", "roleRef")),
        _AGE,
        _col("Users", "Users in the clusterRoleBinding", priority=1),
        _col("Groups", "Groups in the clusterRoleBinding", priority=1),
        _col("ServiceAccounts", "ServiceAccounts in the clusterRoleBinding", priority=1),
    ), _binding_cells),
    "Lease": _Printer((
        _NAME,
        _col("Holder", ("coordination.v1.LeaseSpec", "holderIdentity")),
        _AGE,
    ), _named(lambda lease: _get(lease, "spec", "holderIdentity") or "")),
    "StorageClass": _Printer((
        _NAME,
        _col("Provisioner", ("storage.v1.StorageClass", "provisioner")),
        _col("ReclaimPolicy", ("storage.v1.StorageClass", "reclaimPolicy")),
        _col("VolumeBindingMode", ("storage.v1.StorageClass", "volumeBindingMode")),
        _col("AllowVolumeExpansion", ("storage.v1.StorageClass", "allowVolumeExpansion")),
        _AGE,
    ), _storage_class_cells),
    "ControllerRevision": _Printer((
        _NAME,
        _col("Controller", "Controller of the object"),
        _col("Revision", ("apps.v1.ControllerRevision", "revision")),
        _AGE,
    ), _controller_revision_cells),
    "ResourceQuota": _Printer((
        _NAME,
        _col("Request", "Request represents a minimum amount of cpu/memory that a container may consume."),
        _col("Limit", "Limits control the maximum amount of cpu/memory that a container may use independent of "
             "contention on the node."),
        _AGE,
    ), _resource_quota_cells),
    "PriorityClass": _Printer((
        _NAME,
        _col("Value", ("scheduling.v1.PriorityClass", "value"), "integer"),
        _col("Global-Default", ("scheduling.v1.PriorityClass", "globalDefault"), "boolean"),
        _AGE,
        _col("PreemptionPolicy", ("scheduling.v1.PriorityClass", "preemptionPolicy")),
    ), _priority_class_cells),
    "RuntimeClass": _Printer((
        _NAME,
        _col("Handler", ""),  # upstream reads ObjectMeta's doc of a "handler" field, which has none
        _AGE,
    ), _named(lambda rc: rc.get("handler") or "")),
    "VolumeAttachment": _Printer((
        _NAME,
        _col("Attacher", ("storage.v1.VolumeAttachmentSpec", "attacher"), fmt="name"),
        _col("PV", ("storage.v1.VolumeAttachmentSource", "persistentVolumeName")),
        _col("Node", ("storage.v1.VolumeAttachmentSpec", "nodeName")),
        _col("Attached", ("storage.v1.VolumeAttachmentStatus", "attached"), "boolean"),
        _AGE,
    ), _volume_attachment_cells),
    "HorizontalPodAutoscaler": _Printer((
        _NAME,
        _col("Reference", ("autoscaling.v2.HorizontalPodAutoscalerSpec", "scaleTargetRef")),
        _col("Targets", ("autoscaling.v2.HorizontalPodAutoscalerSpec", "metrics")),
        _col("MinPods", ("autoscaling.v2.HorizontalPodAutoscalerSpec", "minReplicas")),
        _col("MaxPods", ("autoscaling.v2.HorizontalPodAutoscalerSpec", "maxReplicas")),
        _col("Replicas", ("autoscaling.v2.HorizontalPodAutoscalerStatus", "currentReplicas")),
        _AGE,
    ), _hpa_cells),
    "MutatingWebhookConfiguration": _Printer((
        _NAME,
        _col("Webhooks", "Webhooks indicates the number of webhooks registered in this configuration", "integer"),
        _AGE,
    ), _named(lambda config: len(config.get("webhooks") or ()))),
    "ValidatingWebhookConfiguration": _Printer((
        _NAME,
        _col("Webhooks", "Webhooks indicates the number of webhooks registered in this configuration", "integer"),
        _AGE,
    ), _named(lambda config: len(config.get("webhooks") or ()))),
    "ValidatingAdmissionPolicy": _Printer((
        _NAME,
        _col("Validations", "Validations indicates the number of validation rules defined in this configuration",
             "integer"),
        _col("ParamKind", "ParamKind specifies the kind of resources used to parameterize this policy"),
        _AGE,
    ), _named(lambda policy: len(_get(policy, "spec", "validations") or ()), _param_kind)),
    "ValidatingAdmissionPolicyBinding": _Printer((
        _NAME,
        _col("PolicyName", "PolicyName indicates the policy definition which the policy binding binded to"),
        _col("ParamRef", "ParamRef indicates the param resource which sets the configration param"),
        _AGE,
    ), _named(lambda binding: _get(binding, "spec", "policyName") or "", _param_ref)),
    "EndpointSlice": _Printer((
        _NAME,
        _col("AddressType", ("discovery.v1.EndpointSlice", "addressType")),
        _col("Ports", ("discovery.v1.EndpointSlice", "ports")),
        _col("Endpoints", ("discovery.v1.EndpointSlice", "endpoints")),
        _AGE,
    ), _endpoint_slice_cells),
    "CSINode": _Printer((
        _NAME,
        _col("Drivers", "Drivers indicates the number of CSI drivers registered on the node", "integer"),
        _AGE,
    ), _named(lambda n: len(_get(n, "spec", "drivers") or ()))),
    "CSIDriver": _Printer((
        _NAME,
        _col("AttachRequired", ("storage.v1.CSIDriverSpec", "attachRequired"), "boolean"),
        _col("PodInfoOnMount", ("storage.v1.CSIDriverSpec", "podInfoOnMount"), "boolean"),
        _col("StorageCapacity", ("storage.v1.CSIDriverSpec", "storageCapacity"), "boolean"),
        _col("TokenRequests", ("storage.v1.CSIDriverSpec", "tokenRequests")),
        _col("RequiresRepublish", ("storage.v1.CSIDriverSpec", "requiresRepublish"), "boolean"),
        _col("Modes", ("storage.v1.CSIDriverSpec", "volumeLifecycleModes")),
        _AGE,
    ), _csi_driver_cells),
    "CSIStorageCapacity": _Printer((
        _NAME,
        _col("StorageClassName", ("storage.v1.CSIStorageCapacity", "storageClassName")),
        _col("Capacity", ("storage.v1.CSIStorageCapacity", "capacity")),
    ), _csi_storage_capacity_cells),
    "DeviceClass": _Printer((_NAME, _AGE), _named()),
    "DeviceTaintRule": _Printer((_NAME, _AGE), _named()),
    "ResourceClaim": _Printer((
        _NAME,
        _col("State", "A summary of the current state (allocated, pending, reserved, etc.)."),
        _AGE,
    ), _named(resource_claim_state)),
    "ResourceClaimTemplate": _Printer((_NAME, _AGE), _named()),
    "ResourceSlice": _Printer((
        _NAME,
        _col("Node", ("resource.v1.ResourceSliceSpec", "nodeName")),
        _col("Driver", ("resource.v1.ResourceSliceSpec", "driver")),
        _col("Pool", ("resource.v1.ResourcePool", "name")),
        _AGE,
    ), _named(lambda s: _get(s, "spec", "nodeName") or "", lambda s: _get(s, "spec", "driver") or "",
              lambda s: _get(s, "spec", "pool", "name") or "")),
}

# The default table convertor's columns: what a kind without a printer (Role, ClusterRole,
# LimitRange, a custom resource) shows.
_DEFAULT_COLUMNS = (_NAME, _col("Created At", ("meta.v1.ObjectMeta", "creationTimestamp"), "date"))


@cache
def _column_definitions(kind: str | None) -> tuple[Obj, ...]:
    columns = _PRINTERS[kind].columns if kind is not None else _DEFAULT_COLUMNS
    return tuple({"name": c.name, "type": c.type, "format": c.format, "description": _describe(c.doc),
                  "priority": c.priority} for c in columns)


def _created_at(obj: Obj, since: _Since) -> list[Cell]:
    """The default convertor's cells: the name and the creation time in RFC 3339, UTC."""
    meta = obj.get("metadata") or {}
    at = _parse_micros(meta.get("creationTimestamp"))
    moment = _ZERO_TIME if at is None else _EPOCH + timedelta(microseconds=at)
    return [meta.get("name") or "", moment.strftime("%Y-%m-%dT%H:%M:%SZ")]


def _row_object(obj: Obj, include_object: str) -> Obj | None:
    if include_object == "Object":
        return obj
    if include_object == "None":
        return None
    return {"kind": "PartialObjectMetadata", "apiVersion": _META, "metadata": obj.get("metadata") or {}}


def to_table(kind: str, objs: list[Obj], now: datetime, include_object: str = "Metadata",
             resource_version: str = "", continue_token: str | None = None, no_headers: bool = False,
             remaining_item_count: int | None = None) -> Obj:
    """The Table kube-apiserver answers a list or get of `objs` (all of `kind`) with.

    Each row's `object` is the object (`Object`), its metadata as a PartialObjectMetadata
    (`Metadata`, also for ""), or null (`None`). The list's paging (`continue`,
    `remainingItemCount`) goes in the Table's metadata. `no_headers` leaves out the column
    definitions (null), as the server does for the second and later events of a watch. ValueError
    for an includeObject the API does not know (the message is kube-apiserver's)."""
    include_object = include_object or "Metadata"
    if include_object not in INCLUDE_OBJECT:
        raise ValueError(f'unrecognized includeObject value: "{include_object}"')
    printer = _PRINTERS.get(kind)
    since = _Since(now)
    cells_of, conditions_of = (printer.cells, printer.conditions) if printer else (_created_at, None)
    rows: list[Obj] = []
    for obj in objs:
        row: Obj = {"cells": cells_of(obj, since)}
        if conditions_of is not None and (conditions := conditions_of(obj)):
            row["conditions"] = conditions
        row["object"] = _row_object(obj, include_object)
        rows.append(row)
    metadata: Obj = {}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    if continue_token:
        metadata["continue"] = continue_token
    if remaining_item_count is not None:
        metadata["remainingItemCount"] = remaining_item_count
    columns = None if no_headers else [dict(c) for c in _column_definitions(kind if printer else None)]
    return {"kind": "Table", "apiVersion": _META, "metadata": metadata, "columnDefinitions": columns,
            "rows": rows if rows or printer else None}


def custom_table(columns: list[Obj], cell: Callable[[Obj, Obj], Any], objs: list[Obj], now: datetime,
                 include_object: str = "Metadata", resource_version: str = "", continue_token: str | None = None,
                 no_headers: bool = False, remaining_item_count: int | None = None) -> Obj:
    """The Table of custom objects, as apiextensions-apiserver's table convertor makes it: the name,
    then the definition's `additionalPrinterColumns` (an Age column when it has none), each cell
    what `cell(obj, column)` finds at the column's JSONPath, `date` columns as ages."""
    include_object = include_object or "Metadata"
    if include_object not in INCLUDE_OBJECT:
        raise ValueError(f'unrecognized includeObject value: "{include_object}"')
    columns = columns or [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
                           "description": _describe(("meta.v1.ObjectMeta", "creationTimestamp"))}]
    since = _Since(now)
    rows: list[Obj] = []
    for obj in objs:
        cells: list[Any] = [(obj.get("metadata") or {}).get("name") or ""]
        for column in columns:
            value = cell(obj, column)
            cells.append(since(value) if column.get("type") == "date" and value is not None else value)
        rows.append({"cells": cells, "object": _row_object(obj, include_object)})
    metadata: Obj = {}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    if continue_token:
        metadata["continue"] = continue_token
    if remaining_item_count is not None:
        metadata["remainingItemCount"] = remaining_item_count
    definitions = [{"name": "Name", "type": "string", "format": "name", "description": _describe(_META_NAME),
                    "priority": 0}] + [
        {"name": c.get("name", ""), "type": c.get("type", "string"), "format": c.get("format", ""),
         "description": c.get("description") or
         f"Custom resource definition column (in JSONPath format): {c.get('jsonPath', '')}",
         "priority": c.get("priority", 0)} for c in columns]
    return {"kind": "Table", "apiVersion": _META, "metadata": metadata,
            "columnDefinitions": None if no_headers else definitions, "rows": rows}
