"""Feature gates: the `--feature-gates` kube-scheduler v1.35 accepts, and what kubesched does with them.

The table is kube-scheduler's: every gate registered on its feature gate (Kubernetes' own,
k8s.io/apiserver's, client-go's, component-base's logging and metrics gates, and the controller
manager's and zpages' that pkg/features registers too), each with the default, maturity and
lock it has at v1.35. A gate is recognised, parsed and refused exactly as component-base does it,
so a setting that works on kube-scheduler works here and an error reads the same.

kubesched then adds one rule: a gate may only take a value other than its v1.35 default when
kubesched implements that value (IMPLEMENTED). Otherwise the run would silently behave as the
default while the user believes the gate is on (or off).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

KUBERNETES_VERSION = "1.35"


class Stage(Enum):
    """A gate's maturity (component-base's prerelease)."""

    ALPHA = "ALPHA"
    BETA = "BETA"
    GA = ""
    DEPRECATED = "DEPRECATED"


@dataclass(frozen=True)
class Spec:
    default: bool
    stage: Stage
    locked: bool = False  # LockToDefault: setting the other value is an error


ALPHA, BETA, GA, DEPRECATED = Stage.ALPHA, Stage.BETA, Stage.GA, Stage.DEPRECATED
LOCKED_GA = Spec(True, GA, locked=True)


def _gates(spec: Spec, names: str) -> dict[str, Spec]:
    """`spec` for each of the space-separated `names`."""
    return dict.fromkeys(names.split(), spec)


# What each gate is at v1.35 (the newest of its versioned specs that is not after 1.35). Grouped by
# what it is; within a group, alphabetical.
KNOWN: dict[str, Spec] = {
    # The special gates: set every alpha (beta) gate that is not set by name.
    "AllAlpha": Spec(False, ALPHA),
    "AllBeta": Spec(False, BETA),
    **_gates(Spec(False, ALPHA), """
        APIServingWithRoutine AllowUnsafeMalformedObjectDeletion CBORServingAndStorage CSIVolumeHealth
        ClientsAllowCBOR ClientsPreferCBOR CloudControllerManagerWatchBasedRoutesReconciliation
        CloudControllerManagerWebhook ComponentFlagz ComponentStatusz ConstrainedImpersonation
        ContainerStopSignals CPUManagerPolicyAlphaOptions CrossNamespaceVolumeDataSource CustomCPUCFSQuotaPeriod
        DRAConsumableCapacity DRADeviceBindingConditions DRADeviceTaintRules DRADeviceTaints DRAExtendedResource
        DRAPartitionableDevices EventedPLEG GangScheduling GenericWorkload HPAScaleToZero ImageVolumeWithDigest
        InPlacePodLevelResourcesVerticalScaling InPlacePodVerticalScalingExclusiveCPUs
        InPlacePodVerticalScalingExclusiveMemory InTreePluginPortworxUnregister KubeletInUserNamespace
        LoggingAlphaOptions MemoryQoS MutablePVNodeAffinity MutablePodResourcesForSuspendedJobs
        MutableSchedulingDirectivesForSuspendedJobs NodeDeclaredFeatures PodAndContainerStatsFromCRI
        PodLogsQuerySplitStreams QOSReserved ReduceDefaultCrashLoopBackOffDecay RelaxedServiceNameValidation
        ResourceHealthStatus RestartAllContainersOnContainerExits RuntimeClassInImageCriApi
        StorageCapacityScoring StorageVersionAPI StrictIPCIDRValidation TaintTolerationComparisonOperators
        TopologyManagerPolicyAlphaOptions UnknownVersionInteroperabilityProxy UserNamespacesHostNetworkSupport
        VolumeLimitScaling WindowsCPUAndMemoryAffinity
    """),
    **_gates(Spec(False, BETA), """
        ClusterTrustBundle ClusterTrustBundleProjection ConcurrentWatchObjectDecode CoordinatedLeaderElection
        CRDObservedGenerationTracking DeclarativeValidationTakeover LocalStorageCapacityIsolationFSQuotaMonitoring
        MutatingAdmissionPolicy NodeLogQuery PodCertificateRequest SELinuxMount SchedulerAsyncAPICalls
        StorageVersionMigrator WatchCacheInitializationPostStartHook
    """),
    # SchedulerAsyncAPICalls above: on in v1.35.0, off from the v1.35 patch release that fixed the
    # scheduling throughput it cost; kubesched follows the fixed release.
    **_gates(Spec(True, BETA), """
        APIResponseCompression APIServerIdentity AllowParsingUserUIDFromCertAuth
        AuthorizePodWebsocketUpgradeCreatePermission CPUManagerPolicyBetaOptions CSIServiceAccountTokenSecrets
        ClearingNominatedNodeNameAfterBinding ContainerCheckpoint ContainerRestartRules ContextualLogging
        DRAAdminAccess DRAPrioritizedList DRAResourceClaimDeviceStatus DRASchedulerFilterTimeout
        DeclarativeValidation DeploymentReplicaSetTerminatingReplicas DetectCacheInconsistency
        DisableCPUQuotaWithExclusiveCPUs EnvFiles ExternalServiceAccountTokenSigner GracefulNodeShutdown
        GracefulNodeShutdownBasedOnPodPriority HPAConfigurableTolerance HostnameOverride ImageVolume
        InOrderInformers InOrderInformersBatchProcess KubeletCrashLoopBackOffMax KubeletEnsureSecretPulledImages
        KubeletFineGrainedAuthz KubeletPSI KubeletPodResourcesDynamicResources KubeletPodResourcesGet
        KubeletSeparateDiskGC KubeletServiceAccountTokenForCredentialProviders ListFromCacheSnapshot
        LoggingBetaOptions MatchLabelKeysInPodTopologySpread MatchLabelKeysInPodTopologySpreadSelectorMerge
        MaxUnavailableStatefulSet MutableCSINodeAllocatableCount NominatedNodeNameForExpectation OpenAPIEnums
        OpportunisticBatching PodDeletionCost PodLevelResources PodReadyToStartContainersCondition
        PodTopologyLabelsAdmission PortForwardWebsockets PreventStaticPodAPIReferences ProcMountType
        ReloadKubeletServerCertificateFile RemoteRequestHeaderUID RotateKubeletServerCertificate
        SELinuxChangePolicy SELinuxMountReadWriteOncePod SchedulerAsyncPreemption SchedulerPopFromBackoffQ
        ServiceAccountNodeAudienceRestriction SizeBasedListCostEstimate StatefulSetSemanticRevisionComparison
        StorageVersionHash StructuredAuthenticationConfigurationEgressSelector
        StructuredAuthenticationConfigurationJWKSMetrics TokenRequestServiceAccountUIDValidation
        TopologyManagerPolicyBetaOptions TranslateStreamCloseWebsocketRequests UnauthenticatedHTTP2DOSMitigation
        UserNamespacesSupport WatchList WatchListClient WindowsGracefulNodeShutdown
    """),
    **_gates(Spec(True, GA), "InformerResourceVersion TopologyManagerPolicyOptions VolumeAttributesClass"),
    **_gates(LOCKED_GA, """
        APIServerTracing AnonymousAuthConfigurableEndpoints AnyVolumeDataSource AuthorizeNodeWithSelectors
        AuthorizeWithSelectors BtreeWatchCache CPUManagerPolicyOptions CRDValidationRatcheting CSIMigrationPortworx
        ComponentSLIs ConsistentListFromCache CustomResourceFieldSelectors DisableAllocatorDualWrite
        DynamicResourceAllocation ExecProbeTimeout HonorPVReclaimPolicy ImageMaximumGCAge InPlacePodVerticalScaling
        JobBackoffLimitPerIndex JobManagedBy JobPodReplacementPolicy JobSuccessPolicy KubeletCgroupDriverFromCRI
        KubeletTracing LogarithmicScaleDown MatchLabelKeysInPodAffinity MemoryManager MultiCIDRServiceAllocator
        NFTablesProxyMode NodeInclusionPolicyInPodTopologySpread NodeSwap OrderedNamespaceDeletion
        PodLifecycleSleepAction PodLifecycleSleepActionAllowZero PodObservedGenerationTracking
        PodSchedulingReadiness PreferSameTrafficDistribution RecoverVolumeExpansionFailure RecursiveReadOnlyMounts
        RelaxedDNSSearchValidation RelaxedEnvironmentVariableValidation ResilientWatchCacheInitialization
        RetryGenerateName SchedulerQueueingHints SeparateTaintEvictionController ServiceAccountTokenJTI
        ServiceAccountTokenNodeBinding ServiceAccountTokenNodeBindingValidation ServiceAccountTokenPodNodeInfo
        ServiceTrafficDistribution SidecarContainers StreamingCollectionEncodingToJSON
        StreamingCollectionEncodingToProtobuf StructuredAuthenticationConfiguration
        StructuredAuthorizationConfiguration SupplementalGroupsPolicy SystemdWatchdog TopologyAwareHints WinDSR
        WinOverlay
    """),
    **_gates(Spec(False, DEPRECATED), """
        AllowDNSOnlyNodeCSR AllowInsecureKubeletCertificateSigningRequests ChangeContainerStatusOnKubeletRestart
        GitRepoVolumeDriver InPlacePodVerticalScalingAllocatedStatus KMSv1 KubeletRegistrationGetOnExistsOnly
        SeparateCacheWatchRPC WindowsHostNetwork
    """),
    **_gates(Spec(True, DEPRECATED), "DisableNodeKubeProxyVersion KubeletPodResourcesListUseActivePods StorageNamespaceIndex"),
    "AggregatedDiscoveryRemoveBetaType": Spec(True, DEPRECATED, locked=True),
    "AllowOverwriteTerminationGracePeriodSeconds": Spec(False, DEPRECATED, locked=True),
    "WatchFromStorageWithoutResourceVersion": Spec(False, DEPRECATED, locked=True),
}

SPECIAL = {"AllAlpha": ALPHA, "AllBeta": BETA}  # the stage each special gate sets

# Gates whose value other than the v1.35 default kubesched implements (a default value always is).
IMPLEMENTED: frozenset[str] = frozenset({
    "DRAAdminAccess",  # off: a request for admin access cannot be allocated
    "DRAPrioritizedList",  # off: a claim with firstAvailable keeps its pod unschedulable
    "DRAPartitionableDevices",  # on: devices that share a pool's counters (MIG-style partitions)
    "DRAConsumableCapacity",  # on: devices shared by several claims within their capacity (fractional GPUs)
    "DRADeviceTaints",  # on: device taints and request tolerations, NoExecute evicting
    "DRADeviceBindingConditions",  # on: PreBind waits for devices' binding conditions
    "DRADeviceTaintRules",  # on: DeviceTaintRules taint the devices they select
    "DRAExtendedResource",  # on: `nvidia.com/gpu: 1` served from a DeviceClass's extendedResourceName
    "HPAConfigurableTolerance",  # off: the HPA controller keeps its 0.1 whatever a behavior's tolerance says
})


class FeatureGateError(ValueError):
    """A feature-gate setting kube-scheduler (or kubesched) refuses; `gate` is the name it was set by."""

    def __init__(self, gate: str, message: str) -> None:
        super().__init__(message)
        self.gate = gate


_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_bool(text: str) -> bool:
    """Go's strconv.ParseBool, whose spellings kube-scheduler's flag accepts."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"strconv.ParseBool: parsing {_go_quote(text)}: invalid syntax")


def _go_quote(text: str) -> str:
    """`text` as Go's %q writes it: double-quoted, with backslash escapes for what is not printable."""
    escapes = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t", "\v": r"\v",
               "\\": r"\\", '"': r"\""}
    out = []
    for c in text:
        if c in escapes:
            out.append(escapes[c])
        elif c.isprintable():
            out.append(c)
        elif ord(c) < 0x80:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) < 0x10000:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return '"' + "".join(out) + '"'


def parse_flag(value: str) -> dict[str, bool]:
    """`A=true,B=false` (spaces around names and values trimmed, empty items skipped) as
    component-base's Set reads it; a later setting of a name wins."""
    settings: dict[str, bool] = {}
    for item in value.split(","):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep:
            raise FeatureGateError(name, f"missing bool value for {name}")
        raw = raw.strip()
        try:
            settings[name] = parse_bool(raw)
        except ValueError as e:
            raise FeatureGateError(name, f"invalid value of {name}={raw}, err: {e}") from None
    return settings


def _go_bool(value: bool) -> str:
    return "true" if value else "false"


class FeatureGates:
    """An immutable set of gate values: v1.35's defaults, overridden by `settings` (name -> value)
    as kube-scheduler's `--feature-gates` overrides them. Invalid settings raise FeatureGateError,
    checked as component-base checks them (unknown names, locked gates) and then by kubesched's
    rule that a value other than the default must be IMPLEMENTED."""

    __slots__ = ("_settings", "_values")

    def __init__(self, settings: Mapping[str, bool] | None = None) -> None:
        self._settings: dict[str, bool] = dict(settings or {})
        values, unknown, locked, missing = _resolve(self._settings)
        # Told as upstream tells them: an unknown name alone, then the locked gates together.
        if unknown:
            raise unknown[0]
        if len(locked) == 1:
            raise locked[0]
        if locked:  # utilerrors.NewAggregate's form
            raise FeatureGateError(locked[0].gate, "[" + ", ".join(str(e) for e in locked) + "]")
        if missing:
            raise _not_implemented(next(iter(missing)), [g for gates in missing.values() for g in gates], values)
        self._values = values

    @classmethod
    def parse(cls, value: str) -> FeatureGates:
        """The gates a `--feature-gates` value sets."""
        return cls(parse_flag(value))

    def enabled(self, name: str) -> bool:
        """Whether gate `name` is on. An unknown name is a programming error (upstream panics)."""
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(f"feature {name!r} is not registered in FeatureGate") from None

    def overridden_by(self, other: FeatureGates) -> FeatureGates:
        """These settings with `other`'s on top (the command line's over a scenario's)."""
        return FeatureGates({**self._settings, **other._settings})

    @property
    def settings(self) -> dict[str, bool]:
        """What was set, by name, as given (the special gates included)."""
        return dict(self._settings)

    def changed(self) -> dict[str, bool]:
        """The gates whose value is not v1.35's default, by name (the special gates left out)."""
        return {name: value for name, value in sorted(self._values.items())
                if value != KNOWN[name].default and name not in SPECIAL}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FeatureGates) and self.changed() == other.changed()

    def __hash__(self) -> int:
        return hash(frozenset(self.changed().items()))

    def __repr__(self) -> str:
        return f"FeatureGates({self.changed()})"


def problems(settings: Mapping[str, bool]) -> list[FeatureGateError]:
    """Every problem with `settings`, each naming the setting it comes from (a gate's value set by
    AllAlpha or AllBeta is that special gate's), in name order: for a file, whose every problem is
    told with its field path at once."""
    values, unknown, locked, missing = _resolve(settings)
    found = [*unknown, *locked, *(_not_implemented(by, gates, values) for by, gates in missing.items())]
    return sorted(found, key=lambda e: e.gate)


def _resolve(settings: Mapping[str, bool]) -> tuple[dict[str, bool], list[FeatureGateError],
                                                      list[FeatureGateError], dict[str, list[str]]]:
    """Every gate's value under `settings`, the unknown names, the locked gates set to the other
    value, and the gates left at a value kubesched does not implement by the setting that gave it.
    Names are taken in sorted order, so what is told first is the same on every run (upstream's
    order is a Go map's)."""
    values = {name: spec.default for name, spec in KNOWN.items()}
    unknown: list[FeatureGateError] = []
    locked: list[FeatureGateError] = []
    for name in sorted(settings):
        spec = KNOWN.get(name)
        value = settings[name]
        if spec is None:
            unknown.append(FeatureGateError(name, f"unrecognized feature gate: {name}"))
        elif spec.locked and value != spec.default:
            locked.append(FeatureGateError(name, f"cannot set feature gate {name} to {_go_bool(value)}, "
                                                 f"feature is locked to {_go_bool(spec.default)}"))
        else:
            values[name] = value
    set_by = {name: name for name in settings}
    for special, stage in SPECIAL.items():
        if special in settings:  # a gate set by name keeps its own value
            for name, spec in KNOWN.items():
                if spec.stage is stage and name not in SPECIAL and name not in settings:
                    values[name] = settings[special]
                    set_by[name] = special
    missing: dict[str, list[str]] = {}
    for name in sorted(values):
        if values[name] != KNOWN[name].default and name not in IMPLEMENTED and name not in SPECIAL:
            missing.setdefault(set_by[name], []).append(name)
    return values, unknown, locked, missing


def _not_implemented(by: str, gates: list[str], values: Mapping[str, bool]) -> FeatureGateError:
    shown = ", ".join(f"{name}={_go_bool(values[name])}" for name in sorted(gates))
    if len(gates) == 1:
        return FeatureGateError(by, f"feature gate {shown} is not implemented by kubesched")
    return FeatureGateError(by, f"feature gates {shown} are not implemented by kubesched")


def names(stage: Stage) -> list[str]:
    """The gates at `stage`, sorted (AllAlpha and AllBeta left out)."""
    return sorted(name for name, spec in KNOWN.items() if spec.stage is stage and name not in SPECIAL)


DEFAULT_FEATURE_GATES = FeatureGates()  # v1.35's defaults; immutable, so one is shared
