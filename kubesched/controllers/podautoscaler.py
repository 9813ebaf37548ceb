"""The HorizontalPodAutoscaler controller (pkg/controller/podautoscaler/horizontal.go, v1.35).

Every 15 seconds (--horizontal-pod-autoscaler-sync-period) each HPA reads its target's scale,
asks each metric how many replicas it wants, takes the largest, lets its behavior (or the
defaults without one) stabilise and rate-limit that, and sets the target's replicas through its
scale. The status says what was seen (currentReplicas, desiredReplicas, currentMetrics,
lastScaleTime) and three conditions say why: AbleToScale, ScalingActive, ScalingLimited, with
upstream's reasons and messages; a rescale is a SuccessfulRescale Event.

Resource and ContainerResource metrics (cpu, memory; Utilization or AverageValue targets) read
what the simulated kubelets report as usage, the numbers metrics.k8s.io (`kubectl top`) shows.
No custom or external metrics API exists here, so Pods, Object and External metrics fail as they
do on a cluster without one: ScalingActive False with upstream's FailedGet...Metric reasons.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubesched.api.features import DEFAULT_FEATURE_GATES, FeatureGates
from kubesched.api.objects import Obj
from kubesched.api.quantity import canonical, milli_value, parse_quantity
from kubesched.api.selectors import LabelSelector, SelectorError
from kubesched.apiserver.errors import APIError
from kubesched.apiserver.server import APIServer
from kubesched.controllers import podautoscalerbehavior as behaviors
from kubesched.controllers import replicacalculator as calc
from kubesched.controllers.scaletarget import Scale, ScaleError, get_scale, set_replicas
from kubesched.runtime.clock import Clock, Timer
from kubesched.store.base import DELETED, WatchEvent
from kubesched.store.podindex import object_key

SYNC_PERIOD = 15.0  # --horizontal-pod-autoscaler-sync-period
METRICS_WINDOW = 10.0  # the window metrics-server reports its samples over
SOURCE = "horizontal-pod-autoscaler"
KIND = "HorizontalPodAutoscaler"

# The usage of running pods, by pod uid: each running container's amounts (cpu in millicores,
# memory in bytes), as metrics-server reports them; pods it has no sample of are absent.
ResourceMetrics = Callable[[Sequence[Obj]], Mapping[str, Mapping[str, Mapping[str, int]]]]

_NO_CUSTOM_METRICS = "unable to fetch metrics from custom metrics API: no custom metrics API " \
                     "(custom.metrics.k8s.io) registered"
_NO_EXTERNAL_METRICS = "unable to fetch metrics from external metrics API: no external metrics API " \
                       "(external.metrics.k8s.io) registered"


class _MetricError(Exception):
    """A metric that gave no proposal: the error, and the reason of the condition it sets."""

    def __init__(self, message: str, reason: str, condition: tuple[str, str, str, str] | None) -> None:
        super().__init__(message)
        self.reason = reason
        self.condition = condition


def _milli_quantity(milli: int) -> str:
    """resource.NewMilliQuantity(v, DecimalSI).String()."""
    return canonical(parse_quantity(f"{milli}m"), "DecimalSI")


class HorizontalPodAutoscalerController:
    def __init__(self, api: APIServer, clock: Clock, metrics: ResourceMetrics,
                 features: FeatureGates = DEFAULT_FEATURE_GATES) -> None:
        self.api = api
        self.clock = clock
        self.metrics = metrics
        self.configurable_tolerance = features.enabled("HPAConfigurableTolerance")
        self._due: dict[tuple[str, str], Timer] = {}
        self._history: dict[tuple[str, str], behaviors.History] = {}
        self._last_event: dict[tuple[str, str, str], str] = {}
        # Each HPA's selector as last read (None: not yet), to find pods two HPAs would scale.
        self.selectors: dict[tuple[str, str], LabelSelector | None] = {}

    def start(self) -> None:
        for hpa in self.api.store.list(KIND):
            self.selectors.setdefault(object_key(hpa), None)
            self._enqueue(object_key(hpa))
        self.api.store.watch(self._on_hpa, {KIND})

    def _on_hpa(self, ev: WatchEvent) -> None:
        key = object_key(ev.obj)
        if ev.type == DELETED:
            timer = self._due.pop(key, None)
            if timer is not None:
                timer.cancel()
            self._history.pop(key, None)
            self.selectors.pop(key, None)
            self._last_event = {k: v for k, v in self._last_event.items() if k[:2] != key}
        else:
            self.selectors.setdefault(key, None)
            self._enqueue(key)

    def _enqueue(self, key: tuple[str, str]) -> None:
        """AddRateLimited with the HPA's fixed-interval limiter: a key waits a whole period, and a
        key already waiting keeps its turn. Periodic housekeeping: it does not keep a run going."""
        if key not in self._due:
            self._due[key] = self.clock.call_at(self.clock.now() + SYNC_PERIOD, lambda: self._sync(key), daemon=True)

    def _sync(self, key: tuple[str, str]) -> None:
        self._due.pop(key, None)
        hpa = self.api.store.get(KIND, *key)
        if hpa is None:
            self._history.pop(key, None)
            return
        # A conflict or a vanished object: the next period tries again, as upstream requeues.
        with contextlib.suppress(APIError):
            _Reconcile(self, hpa, self._history.setdefault(key, behaviors.History())).run()
        self._enqueue(key)

    def event(self, hpa: Obj, etype: str, reason: str, message: str) -> None:
        """Record an Event on the HPA; a repeat of the last one with that reason (a metric that
        fails every period) is folded into it, as the event recorder's aggregation does."""
        key = (*object_key(hpa), reason)
        if self._last_event.get(key) == message:
            return
        self._last_event[key] = message
        self.api.record_event(hpa, etype, reason, message, source=SOURCE)

    def tolerances(self, hpa: Obj) -> calc.Tolerances:
        """tolerancesForHpa: the controller's 0.1 each way, or the behavior's own tolerance
        (HPAConfigurableTolerance, beta and on in v1.35)."""
        behavior = (hpa.get("spec") or {}).get("behavior")
        if not behavior or not self.configurable_tolerance:
            return calc.Tolerances()

        def of(rules: Any) -> float:
            raw = (rules or {}).get("tolerance") if isinstance(rules, dict) else None
            return calc.DEFAULT_TOLERANCE if raw is None else float(parse_quantity(raw))
        return calc.Tolerances(of(behavior.get("scaleDown")), of(behavior.get("scaleUp")))


class _Reconcile:
    """One reconcileAutoscaler pass over one HPA."""

    def __init__(self, controller: HorizontalPodAutoscalerController, hpa: Obj, history: behaviors.History) -> None:
        self.c = controller
        self.api = controller.api
        self.hpa = hpa
        self.history = history
        self.now = controller.clock.now()
        self.status: Obj = dict(hpa.get("status") or {})
        self.conditions: list[Obj] = [dict(c) for c in self.status.get("conditions") or ()]

    # ---- status ----------------------------------------------------------------------------------

    def condition(self, ctype: str, status: str, reason: str, message: str) -> None:
        """setCondition: the transition time moves only when the status does."""
        found = next((c for c in self.conditions if c.get("type") == ctype), None)
        if found is None:
            found = {"type": ctype}
            self.conditions.append(found)
        if found.get("status") != status:
            found["lastTransitionTime"] = self.api.timestamp()
        found.update(status=status, reason=reason, message=message)

    def write_status(self, current: int, desired: int, metrics: list[Obj] | None, rescaled: bool) -> None:
        """setStatus and updateStatusIfNeeded: written only when it changed."""
        status: Obj = {"currentReplicas": current, "desiredReplicas": desired}
        if self.status.get("lastScaleTime") or rescaled:
            status["lastScaleTime"] = self.api.timestamp() if rescaled else self.status["lastScaleTime"]
        if metrics:
            status["currentMetrics"] = metrics
        status["conditions"] = self.conditions
        if "observedGeneration" in self.status:
            status["observedGeneration"] = self.status["observedGeneration"]
        if status == (self.hpa.get("status") or {}):
            return
        meta = self.hpa["metadata"]

        def mutate(stored: Obj) -> None:
            stored.clear()
            stored.update(status)
        self.api.update_status(KIND, meta.get("namespace", ""), meta["name"], mutate)

    # ---- the pass --------------------------------------------------------------------------------

    def run(self) -> None:
        hpa, spec = self.hpa, self.hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        namespace = hpa["metadata"].get("namespace", "")
        try:
            scale = get_scale(self.api, namespace, str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""),
                              str(ref.get("name") or ""))
        except (ScaleError, SelectorError) as e:
            message = e.message if isinstance(e, SelectorError) else str(e)
            self.c.event(hpa, "Warning", "FailedGetScale", message)
            self.condition("AbleToScale", "False", "FailedGetScale",
                           f"the HPA controller was unable to get the target's current scale: {message}")
            self.write_status(int(self.status.get("currentReplicas") or 0),
                              int(self.status.get("desiredReplicas") or 0), self.status.get("currentMetrics"), False)
            return
        self.condition("AbleToScale", "True", "SucceededGetScale",
                       "the HPA controller was able to get the target's current scale")
        current = scale.spec_replicas
        self.history.record_initial(current, self.now)
        low, high = int(spec.get("minReplicas") or 1), int(spec.get("maxReplicas") or 0)
        statuses: list[Obj] | None = None
        desired, reason, rescale = 0, "", True
        if current == 0 and low != 0:
            rescale = False
            self.condition("ScalingActive", "False", "ScalingDisabled",
                           "scaling is disabled since the replica count of the target is zero")
        elif current > high:
            reason, desired = "Current number of replicas above Spec.MaxReplicas", high
        elif current < low:
            reason, desired = "Current number of replicas below Spec.MinReplicas", low
        else:
            proposal, metric, statuses, failure = self.replicas_for_metrics(scale, spec.get("metrics") or [])
            if proposal < 0:
                self.write_status(current, int(self.status.get("desiredReplicas") or 0), statuses, False)
                self.c.event(hpa, "Warning", "FailedComputeMetricsReplicas", str(failure))
                return
            desired = max(desired, proposal)
            if desired > current:
                reason = f"{metric} above target"
            elif desired < current:
                reason = "All metrics below target"
            behavior = spec.get("behavior")
            if behavior is None:
                desired, conditions = behaviors.normalize(self.history, current, desired, low, high, self.now)
            else:
                desired, conditions = behaviors.normalize_with_behaviors(
                    self.history, behavior, current, desired, low, high, self.now)
            for cond in conditions:
                self.condition(*cond)
            rescale = desired != current
        if rescale:
            try:
                set_replicas(self.api, scale, desired)
            except APIError as e:
                self.c.event(hpa, "Warning", "FailedRescale", f"New size: {desired}; reason: {reason}; error: {e}")
                self.condition("AbleToScale", "False", "FailedUpdateScale",
                               f"the HPA controller was unable to update the target scale: {e}")
                self.write_status(current, int(self.status.get("desiredReplicas") or 0), statuses, False)
                return
            self.condition("AbleToScale", "True", "SucceededRescale",
                           f"the HPA controller was able to update the target scale to {desired}")
            self.c.event(hpa, "Normal", "SuccessfulRescale", f"New size: {desired}; reason: {reason}")
            rules = spec.get("behavior")
            if rules is not None:
                self.history.store_scale_event(rules.get("scaleUp" if desired > current else "scaleDown") or {},
                                               current, desired, self.now)
        else:
            desired = current
        self.write_status(current, desired, statuses, rescale)

    def replicas_for_metrics(self, scale: Scale, specs: list[Obj]) -> tuple[int, str, list[Obj] | None, str]:
        """computeReplicasForMetrics: the largest proposal, its metric's name and every metric's
        status; -1 when every metric failed, or some did and the rest would scale down."""
        hpa = self.hpa
        if scale.selector is None:
            self.c.event(hpa, "Warning", "SelectorRequired", "selector is required")
            self.condition("ScalingActive", "False", "InvalidSelector", "the HPA target's scale is missing a selector")
            return -1, "", None, "selector is required"
        namespace = hpa["metadata"].get("namespace", "")
        pods = [p for p in self.api.store.list("Pod", namespace) if scale.selector.matches(p["metadata"].get("labels") or {})]
        key = object_key(hpa)
        self.c.selectors[key] = scale.selector
        controlling = sorted(k for k, selector in self.c.selectors.items() if k[0] == namespace and selector is not None
                             and any(selector.matches(p["metadata"].get("labels") or {}) for p in pods))
        if len(controlling) > 1:
            message = f"pods by selector {scale.selector_text} are controlled by multiple HPAs: " \
                      f"[{' '.join('/'.join(k) for k in controlling)}]"
            self.c.event(hpa, "Warning", "AmbiguousSelector", message)
            self.condition("ScalingActive", "False", "AmbiguousSelector", message)
            return -1, "", None, message
        statuses: list[Obj] = []
        replicas, metric, invalid, first = 0, "", 0, None
        for spec in specs:
            try:
                proposal, name, status = self.replicas_for_metric(spec, scale, pods)
            except _MetricError as e:
                statuses.append({"type": ""})
                if invalid == 0:
                    first = e
                invalid += 1
                continue
            statuses.append(status)
            if replicas == 0 or proposal > replicas:
                replicas, metric = proposal, name
        failure = f"invalid metrics ({invalid} invalid out of {len(specs)}), first error is: {first}" if first else ""
        if first is not None and (invalid >= len(specs) or replicas < scale.spec_replicas):
            if first.condition is not None:
                self.condition(*first.condition)
            return -1, "", statuses, failure
        self.condition("ScalingActive", "True", "ValidMetricFound",
                       f"the HPA was able to successfully calculate a replica count from {metric}")
        return replicas, metric, statuses, failure

    def unable(self, reason: str, error: str) -> _MetricError:
        """getUnableComputeReplicaCountCondition: a Warning Event and the condition to set."""
        self.c.event(self.hpa, "Warning", reason, error)
        return _MetricError(error, reason, ("ScalingActive", "False", reason,
                                            f"the HPA was unable to compute the replica count: {error}"))

    def replicas_for_metric(self, spec: Obj, scale: Scale, pods: list[Obj]) -> tuple[int, str, Obj]:
        mtype = spec.get("type")
        if mtype == "Resource":
            source = spec.get("resource") or {}
            return self.resource_metric(source, "", scale, pods, "Resource", "resource")
        if mtype == "ContainerResource":
            source = spec.get("containerResource") or {}
            return self.resource_metric(source, str(source.get("container") or ""), scale, pods,
                                        "ContainerResource", "containerResource")
        if mtype == "Pods":
            name = ((spec.get("pods") or {}).get("metric") or {}).get("name", "")
            error = f"unable to get metric {name}: {_NO_CUSTOM_METRICS}"
            raise _MetricError(f"failed to get pods metric value: {error}", "FailedGetPodsMetric",
                               self.unable("FailedGetPodsMetric", error).condition)
        if mtype == "Object":
            source = spec.get("object") or {}
            name = (source.get("metric") or {}).get("name", "")
            described = source.get("describedObject") or {}
            error = f"unable to get metric {name}: {described.get('kind', '')} on " \
                    f"{self.hpa['metadata'].get('namespace', '')} {described.get('name', '')}/{_NO_CUSTOM_METRICS}"
            raise _MetricError(f"failed to get object metric value: {error}", "FailedGetObjectMetric",
                               self.unable("FailedGetObjectMetric", error).condition)
        if mtype == "External":
            name = ((spec.get("external") or {}).get("metric") or {}).get("name", "")
            error = f"unable to get external metric {self.hpa['metadata'].get('namespace', '')}/{name}: " \
                    f"{_NO_EXTERNAL_METRICS}"
            raise _MetricError(f"failed to get {name} external metric value: {error}", "FailedGetExternalMetric",
                               self.unable("FailedGetExternalMetric", error).condition)
        error = f'unknown metric source type "{mtype}"'
        raise _MetricError(error, "InvalidMetricSourceType", self.unable("InvalidMetricSourceType", error).condition)

    def resource_metric(self, source: Obj, container: str, scale: Scale, pods: list[Obj], mtype: str,
                        field: str) -> tuple[int, str, Obj]:
        """computeStatusForResourceMetric(Generic): a Utilization or AverageValue target."""
        resource = str(source.get("name") or "")
        target = source.get("target") or {}
        reason = "FailedGetResourceMetric" if mtype == "Resource" else "FailedGetContainerResourceMetric"
        wrap = f"failed to get {resource} resource metric value" if mtype == "Resource" else \
            f"failed to get {container} container metric value"
        tolerances = self.c.tolerances(self.hpa)
        current = scale.spec_replicas
        try:
            if target.get("averageValue") is not None:
                try:
                    metrics = self.pod_metrics(pods, resource, container)
                    wanted = milli_value(parse_quantity(target["averageValue"]))
                    replicas, usage = calc.raw_resource_replicas(
                        current, wanted, resource, tolerances, pods, metrics, self.now, self.api.seconds)
                except calc.ReplicaError as e:
                    raise calc.ReplicaError(f"failed to get {resource} usage: {e}") from None
                value: Obj = {"averageValue": _milli_quantity(usage)}
                name = f"{resource} resource"
            elif target.get("averageUtilization") is not None:
                try:
                    metrics = self.pod_metrics(pods, resource, container)
                    replicas, utilization, raw = calc.resource_replicas(
                        current, int(target["averageUtilization"]), resource, tolerances, pods, metrics, container,
                        self.now, self.api.seconds)
                except calc.ReplicaError as e:
                    raise calc.ReplicaError(f"failed to get {resource} utilization: {e}") from None
                value = {"averageUtilization": utilization, "averageValue": _milli_quantity(raw)}
                name = f"{resource} resource utilization (percentage of request)" if mtype == "Resource" else \
                    f"{resource} container resource utilization (percentage of request)"
            else:
                raise calc.ReplicaError("invalid resource metric source: neither an average utilization target "
                                        "nor an average value (usage) target was set")
        except calc.ReplicaError as e:
            raise _MetricError(f"{wrap}: {e}", reason, self.unable(reason, str(e)).condition) from None
        status: Obj = {"name": resource, "current": value}
        if container:
            status["container"] = container
        return replicas, name, {"type": mtype, field: status}

    def pod_metrics(self, pods: list[Obj], resource: str, container: str) -> calc.PodMetrics:
        """GetResourceMetric: the selected pods' usage of `resource` in milli-units."""
        usage = self.c.metrics(pods)
        if not usage:
            raise calc.ReplicaError(f"unable to get metrics for resource {resource}: no metrics returned from "
                                    "resource metrics API")
        scale = 1 if resource == "cpu" else 1000
        out: calc.PodMetrics = {}
        for pod in pods:
            containers = usage.get(pod["metadata"].get("uid", ""))
            if containers is None:
                continue
            if container:
                if container not in containers:
                    raise calc.ReplicaError(
                        f"unable to get metrics for resource {resource}: failed to get container metrics: container "
                        f"{container} not present in metrics for pod {pod['metadata'].get('namespace', '')}/"
                        f"{pod['metadata']['name']}")
                amounts = [containers[container]]
            else:
                amounts = list(containers.values())
            if not amounts or any(resource not in a for a in amounts):
                continue
            out[pod["metadata"]["name"]] = calc.PodMetric(sum(a[resource] for a in amounts) * scale, self.now,
                                                          METRICS_WINDOW)
        return out
