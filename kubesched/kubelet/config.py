"""The eviction part of a KubeletConfiguration (kubelet.config.k8s.io/v1beta1), as kubelet v1.35 reads it.

Why each rule (pkg/kubelet/eviction/helpers.go ParseThresholdConfig, cmd/kubelet/app/server.go,
pkg/kubelet/apis/config/v1beta1/defaults.go):

* ``evictionHard`` absent gets the Linux defaults (memory.available<100Mi, nodefs.available<10%,
  nodefs.inodesFree<5%, imagefs.available<15%, imagefs.inodesFree<5%). Given at all, it replaces
  them: signals it leaves out have no hard threshold, unless ``mergeDefaultEvictionSettings: true``.
* A threshold is a quantity (must be positive) or a percentage of the signal's capacity; ``0%`` and
  ``100%`` switch the threshold off. Percentages are float32, as upstream parses them, so 10% of a
  capacity is computed with the same rounding.
* Every soft threshold needs a grace period. A threshold whose grace period is 0 is hard: that is
  how upstream tells them apart, so a soft one with ``0s`` behaves as a hard one.
* The hard memory.available threshold is also applied to the pods' cgroup (allocatableMemory.available)
  while ``enforceNodeAllocatable`` contains ``pods`` (the default).
* ``evictionPressureTransitionPeriod`` 0 (or absent) means 5m; ``evictionMaxPodGracePeriod`` defaults to 0.

Bad values are reported by :func:`problems` (field path, message) so a scenario is refused before it runs.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubesched.api.duration import DurationError, parse_duration
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.api.validation.objects import shape_problems

MEMORY_AVAILABLE = "memory.available"
ALLOCATABLE_MEMORY_AVAILABLE = "allocatableMemory.available"  # internal: the pods' cgroup
NODEFS_AVAILABLE = "nodefs.available"
NODEFS_INODES_FREE = "nodefs.inodesFree"
IMAGEFS_AVAILABLE = "imagefs.available"
IMAGEFS_INODES_FREE = "imagefs.inodesFree"
PID_AVAILABLE = "pid.available"
# The signals a configuration may name, in the order ties between met thresholds are broken.
SIGNALS = (MEMORY_AVAILABLE, NODEFS_AVAILABLE, NODEFS_INODES_FREE, IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE,
           PID_AVAILABLE)

DEFAULT_EVICTION_HARD = {MEMORY_AVAILABLE: "100Mi", NODEFS_AVAILABLE: "10%", NODEFS_INODES_FREE: "5%",
                         IMAGEFS_AVAILABLE: "15%", IMAGEFS_INODES_FREE: "5%"}
DEFAULT_TRANSITION_PERIOD = 300.0
MAP_FIELDS = ("evictionHard", "evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim")
# The fields the simulated kubelets act on; why each other one is ignored (the rest: see ignored_fields).
READ_FIELDS = ("apiVersion", "kind", *MAP_FIELDS, "evictionMaxPodGracePeriod",
               "evictionPressureTransitionPeriod", "mergeDefaultEvictionSettings", "enforceNodeAllocatable")
IGNORED_BECAUSE = {
    "maxPods": "a node's pod capacity comes from its Node object",
    "podsPerCore": "a node's pod capacity comes from its Node object",
    "systemReserved": "a node's allocatable comes from its Node object",
    "kubeReserved": "a node's allocatable comes from its Node object",
    "reservedMemory": "a node's allocatable comes from its Node object",
    "registerWithTaints": "a node's taints come from its Node object",
    "featureGates": "kubesched simulates the default feature gates",
}
# The other fields of kubelet.config.k8s.io/v1beta1 KubeletConfiguration (v1.35): how the kubelet
# serves, authenticates, talks to its runtime, manages cgroups, images, logs and DNS. None of them
# changes where a pod is scheduled or which pod is evicted.
KUBELET_FIELDS = frozenset(["enableServer", "staticPodPath", "podLogsDir", "syncFrequency", "fileCheckFrequency", "httpCheckFrequency", "staticPodURL", "staticPodURLHeader", "address", "port", "readOnlyPort", "tlsCertFile", "tlsPrivateKeyFile", "tlsCipherSuites", "tlsMinVersion", "rotateCertificates", "serverTLSBootstrap", "authentication", "authorization", "registryPullQPS", "registryBurst", "imagePullCredentialsVerificationPolicy", "preloadedImagesVerificationAllowlist", "eventRecordQPS", "eventBurst", "enableDebuggingHandlers", "enableContentionProfiling", "healthzPort", "healthzBindAddress", "oomScoreAdj", "clusterDomain", "clusterDNS", "streamingConnectionIdleTimeout", "nodeStatusUpdateFrequency", "nodeStatusReportFrequency", "nodeLeaseDurationSeconds", "imageMinimumGCAge", "imageMaximumGCAge", "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "volumeStatsAggPeriod", "kubeletCgroups", "systemCgroups", "cgroupRoot", "cgroupsPerQOS", "cgroupDriver", "cpuManagerPolicy", "singleProcessOOMKill", "cpuManagerPolicyOptions", "cpuManagerReconcilePeriod", "memoryManagerPolicy", "topologyManagerPolicy", "topologyManagerScope", "topologyManagerPolicyOptions", "qosReserved", "runtimeRequestTimeout", "hairpinMode", "podCIDR", "podPidsLimit", "resolvConf", "runOnce", "cpuCFSQuota", "cpuCFSQuotaPeriod", "nodeStatusMaxImages", "maxOpenFiles", "contentType", "kubeAPIQPS", "kubeAPIBurst", "serializeImagePulls", "maxParallelImagePulls", "enableControllerAttachDetach", "protectKernelDefaults", "makeIPTablesUtilChains", "iptablesMasqueradeBit", "iptablesDropBit", "failSwapOn", "memorySwap", "containerLogMaxSize", "containerLogMaxFiles", "containerLogMaxWorkers", "containerLogMonitorInterval", "configMapAndSecretChangeDetectionStrategy", "reservedSystemCPUs", "showHiddenMetricsForVersion", "systemReservedCgroup", "kubeReservedCgroup", "allowedUnsafeSysctls", "volumePluginDir", "providerID", "kernelMemcgNotification", "logging", "enableSystemLogHandler", "enableSystemLogQuery", "shutdownGracePeriod", "shutdownGracePeriodCriticalPods", "shutdownGracePeriodByPodPriority", "crashLoopBackOff", "enableProfilingHandler", "enableDebugFlagsHandler", "seccompDefault", "memoryThrottlingFactor", "registerNode", "tracing", "localStorageCapacityIsolation", "containerRuntimeEndpoint", "imageServiceEndpoint", "failCgroupV1", "userNamespaces"])
# The types of the fields kubesched reads or names (an api.validation.check_shape schema); the
# eviction values themselves are checked by problems().
SHAPE: dict[str, Any] = {
    "evictionHard": {"*": str}, "evictionSoft": {"*": str}, "evictionSoftGracePeriod": {"*": str},
    "evictionMinimumReclaim": {"*": str}, "systemReserved": {"*": str}, "kubeReserved": {"*": str},
    "featureGates": {"*": bool}, "maxPods": int, "evictionMaxPodGracePeriod": int,
    "evictionPressureTransitionPeriod": str, "mergeDefaultEvictionSettings": bool,
    "enforceNodeAllocatable": [str],
}
ENFORCE_OPTIONS = ("pods", "system-reserved", "kube-reserved", "system-reserved-compressible",
                   "kube-reserved-compressible", "none")

_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


class ConfigError(ValueError):
    """A bad eviction setting: `path` is the field inside the KubeletConfiguration."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def _float32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


@dataclass(frozen=True)
class ThresholdValue:
    """A quantity, or a fraction of the signal's capacity (float32 as upstream keeps it)."""

    quantity: int | Fraction | None = None  # exact; an int when whole (cheap to compare)
    percentage: float = 0.0
    text: str = ""  # as written, to show the quantity as Kubernetes would

    def amount(self, capacity: int) -> int | Fraction:
        """evictionapi.GetThresholdQuantity: the quantity, else int64(capacity * percentage)."""
        if self.quantity is not None:
            return self.quantity
        return int(capacity * self.percentage)


@dataclass(frozen=True)
class Threshold:
    signal: str
    value: ThresholdValue
    grace_period: float = 0.0  # seconds; 0 makes it a hard threshold
    min_reclaim: ThresholdValue | None = None

    @property
    def hard(self) -> bool:
        return self.grace_period == 0


@dataclass
class EvictionConfig:
    thresholds: list[Threshold] = field(default_factory=list)
    max_pod_grace_period: int = 0
    pressure_transition_period: float = DEFAULT_TRANSITION_PERIOD

    def hard_value(self, signal: str) -> ThresholdValue | None:
        return next((t.value for t in self.thresholds if t.signal == signal and t.hard), None)


def _exact(amount: Fraction) -> int | Fraction:
    return amount.numerator if amount.denominator == 1 else amount


def _percentage(text: str, path: str) -> float:
    number = text[:-1]
    if not _FLOAT.fullmatch(number):
        raise ConfigError(path, f'strconv.ParseFloat: parsing "{number}": invalid syntax')
    try:
        return _float32(_float32(float(number)) / 100)
    except OverflowError:
        raise ConfigError(path, f'strconv.ParseFloat: parsing "{number}": value out of range') from None


def _amount(raw: Any, path: str) -> tuple[float | None, int | Fraction | None]:
    """(fraction, None) for "N%", else (None, quantity): how both thresholds and minimum
    reclaims are written; each caller checks its own bounds."""
    text = str(raw)
    if text.endswith("%"):
        return _percentage(text, path), None
    try:
        return None, _exact(parse_quantity(raw))
    except QuantityError as e:
        raise ConfigError(path, str(e)) from None


def _threshold_value(signal: str, raw: Any, path: str) -> ThresholdValue | None:
    """parseThresholdStatement; None for a threshold that is switched off (0% or 100%)."""
    text = str(raw)
    if text in ("0%", "100%"):
        return None
    pct, amount = _amount(raw, path)
    if pct is not None:
        if pct < 0:
            raise ConfigError(path, f"eviction percentage threshold {signal} must be >= 0%: {text}")
        if pct > 1:
            raise ConfigError(path, f"eviction percentage threshold {signal} must be <= 100%: {text}")
        return ThresholdValue(percentage=pct, text=text)
    assert amount is not None
    if amount <= 0:
        raise ConfigError(path, f"eviction threshold {signal} must be positive: {text}")
    return ThresholdValue(quantity=amount, text=text)


def _min_reclaim(signal: str, raw: Any, path: str) -> ThresholdValue:
    text = str(raw)
    pct, amount = _amount(raw, path)
    if pct is not None:
        if pct <= 0:
            raise ConfigError(path, f"eviction percentage minimum reclaim {signal} must be positive: {text}")
        return ThresholdValue(percentage=pct, text=text)
    assert amount is not None
    if amount < 0:
        raise ConfigError(path, f"negative eviction minimum reclaim specified for {signal}")
    return ThresholdValue(quantity=amount, text=text)


def _entries(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """The map field `key` with only supported signals (the others are reported by `problems`)."""
    return {s: v for s, v in (obj.get(key) or {}).items() if s in SIGNALS}


def _duration(raw: Any, path: str) -> float:
    """A Go duration string (metav1.Duration): a bare number of seconds is not one."""
    try:
        if not isinstance(raw, str):
            raise DurationError(raw)
        return parse_duration(raw)
    except DurationError as e:
        raise ConfigError(path, str(e)) from None


def _grace_period(signal: str, raw: Any) -> float:
    path = f"evictionSoftGracePeriod.{signal}"
    seconds = _duration(raw, path)
    if seconds < 0:
        raise ConfigError(path, f"invalid eviction grace period specified: {raw}, must be a positive value")
    return seconds


def _check_enforce(obj: dict[str, Any]) -> list[str]:
    options = obj.get("enforceNodeAllocatable")
    options = ["pods"] if options is None else options
    for option in options:
        if option not in ENFORCE_OPTIONS:
            raise ConfigError("enforceNodeAllocatable", f'invalid option "{option}" specified for '
                              "EnforceNodeAllocatable setting. Valid options are "
                              + ", ".join(f'"{o}"' for o in ENFORCE_OPTIONS[:-1]) + ' or "none"')
    if "none" in options and len(options) > 1:
        raise ConfigError("enforceNodeAllocatable",
                          'invalid combination of options: "none" cannot be combined with other options')
    return options


def _hard_map(obj: dict[str, Any]) -> dict[str, Any]:
    hard = obj.get("evictionHard")
    if hard is None:
        return dict(DEFAULT_EVICTION_HARD)
    if obj.get("mergeDefaultEvictionSettings"):
        return {**DEFAULT_EVICTION_HARD, **_entries(obj, "evictionHard")}
    return _entries(obj, "evictionHard")


def parse(obj: dict[str, Any] | None) -> EvictionConfig:
    """The eviction settings of a KubeletConfiguration (None: all defaults). Raises ConfigError."""
    obj = obj or {}
    for key in MAP_FIELDS:
        for signal in obj.get(key) or {}:
            if signal not in SIGNALS:
                raise ConfigError(f"{key}.{signal}", f"unsupported eviction signal {signal}")
    hard = _hard_map(obj)
    soft = _entries(obj, "evictionSoft")
    graces = {s: _grace_period(s, v) for s, v in _entries(obj, "evictionSoftGracePeriod").items()}
    reclaims = {s: _min_reclaim(s, v, f"evictionMinimumReclaim.{s}")
                for s, v in _entries(obj, "evictionMinimumReclaim").items()}
    thresholds = []
    for signal in SIGNALS:  # a fixed order: upstream's is map order
        if signal in hard:
            value = _threshold_value(signal, hard[signal], f"evictionHard.{signal}")
            if value is not None:
                thresholds.append(Threshold(signal, value, 0.0, reclaims.get(signal)))
    for signal in SIGNALS:
        if signal in soft:
            value = _threshold_value(signal, soft[signal], f"evictionSoft.{signal}")
            if signal not in graces:
                raise ConfigError(f"evictionSoftGracePeriod.{signal}",
                                  f"grace period must be specified for the soft eviction threshold {signal}")
            if value is not None:
                thresholds.append(Threshold(signal, value, graces[signal], reclaims.get(signal)))
    if "pods" in _check_enforce(obj):
        thresholds += [Threshold(ALLOCATABLE_MEMORY_AVAILABLE, t.value, 0.0, t.min_reclaim)
                       for t in thresholds if t.signal == MEMORY_AVAILABLE and t.hard]
    transition = obj.get("evictionPressureTransitionPeriod")
    period = 0.0 if transition is None else _duration(transition, "evictionPressureTransitionPeriod")
    return EvictionConfig(thresholds, int(obj.get("evictionMaxPodGracePeriod") or 0),
                          period or DEFAULT_TRANSITION_PERIOD)


def ignored_fields(obj: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, message) for what a KubeletConfiguration sets that changes nothing in a simulation:
    only the eviction settings do. A real node's file (an EKS AMI's sets a dozen fields about
    serving, TLS, cgroups and DNS) gets one line naming the fields that play no part in scheduling
    or eviction; a field that does in a real cluster but is read elsewhere here (`maxPods`: the
    Node object) gets a line of its own saying where, and so does a field the kubelet does not
    have (a misspelt `evictionHrad`), rather than being silently dropped."""
    found: list[tuple[str, str]] = []
    unrelated: list[str] = []
    for key in obj:
        if key in READ_FIELDS:
            continue
        if key in IGNORED_BECAUSE:
            found.append((key, "ignored: " + IGNORED_BECAUSE[key]))
        elif key in KUBELET_FIELDS:
            unrelated.append(key)
        else:
            found.append((key, "ignored: not a KubeletConfiguration field; kubesched's kubelets read only "
                               "the eviction settings"))
    if unrelated:
        found.insert(0, ("", f"ignored, as they play no part in scheduling or eviction: {', '.join(unrelated)}"))
    return found


def check_configuration(obj: dict[str, Any]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(problems, warnings) of a KubeletConfiguration as input, each (field path, message): values
    of the wrong type; when there are none, a warning for each field the simulated kubelets ignore."""
    found = shape_problems(obj, SHAPE)
    return found, [] if found else ignored_fields(obj)


def problems(obj: dict[str, Any]) -> list[tuple[str, str]]:
    """Everything wrong with a KubeletConfiguration's eviction settings, as (field path, message).

    The kubelet refuses to start on the first of these; all of them are reported so they can be
    fixed in one go."""
    found: list[tuple[str, str]] = []

    def check(fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except ConfigError as e:
            found.append((e.path, e.message))

    for key in MAP_FIELDS:
        for signal, raw in (obj.get(key) or {}).items():
            path = f"{key}.{signal}"
            if signal not in SIGNALS:
                found.append((path, f"unsupported eviction signal {signal}"))
            elif key == "evictionSoftGracePeriod":
                check(_grace_period, signal, raw)
            elif key == "evictionMinimumReclaim":
                check(_min_reclaim, signal, raw, path)
            else:
                check(_threshold_value, signal, raw, path)
    graces = obj.get("evictionSoftGracePeriod") or {}
    for signal in _entries(obj, "evictionSoft"):
        if signal not in graces:
            found.append((f"evictionSoftGracePeriod.{signal}",
                          f"grace period must be specified for the soft eviction threshold {signal}"))
    check(_check_enforce, obj)
    if obj.get("evictionPressureTransitionPeriod") is not None:
        check(_duration, obj["evictionPressureTransitionPeriod"], "evictionPressureTransitionPeriod")
    return found
