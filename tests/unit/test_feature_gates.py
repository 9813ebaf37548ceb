"""kube-scheduler's --feature-gates as kubesched reads it: component-base's syntax, defaults and
messages, then kubesched's refusal of values it does not implement."""

from __future__ import annotations

import pytest

from kubesched.api import features
from kubesched.api.features import DEFAULT_FEATURE_GATES, KNOWN, FeatureGateError, FeatureGates, Stage


def refused(value: str) -> FeatureGateError:
    with pytest.raises(FeatureGateError) as e:
        FeatureGates.parse(value)
    return e.value


def test_v1_35_defaults() -> None:
    gates = DEFAULT_FEATURE_GATES
    assert gates.enabled("DRAPrioritizedList") and gates.enabled("DRAAdminAccess")
    assert gates.enabled("DynamicResourceAllocation") and gates.enabled("SchedulerQueueingHints")
    assert not gates.enabled("DRAConsumableCapacity") and not gates.enabled("DRAPartitionableDevices")
    assert not gates.enabled("DRADeviceTaints") and not gates.enabled("DRAExtendedResource")
    assert not gates.enabled("GangScheduling") and gates.enabled("OpportunisticBatching")
    assert gates.changed() == {}


def test_every_gate_kube_scheduler_knows_is_recognised() -> None:
    # Kubernetes', k8s.io/apiserver's, client-go's and component-base's (logging, metrics) gates.
    for name in ("DRADeviceBindingConditions", "CustomCPUCFSQuotaPeriod", "RuntimeClassInImageCriApi",
                 "WatchList", "CRDValidationRatcheting", "WatchListClient", "InOrderInformersBatchProcess",
                 "ContextualLogging", "LoggingAlphaOptions", "ComponentSLIs", "ComponentFlagz", "AllAlpha"):
        FeatureGates({name: KNOWN[name].default})
    assert len(KNOWN) == 220


def test_syntax_trims_spaces_skips_empty_items_and_the_last_setting_wins() -> None:
    gates = FeatureGates.parse(" DRAPrioritizedList = true ,,DRAAdminAccess=1,DRAAdminAccess=T,")
    assert gates.settings == {"DRAPrioritizedList": True, "DRAAdminAccess": True}
    assert FeatureGates.parse("") == DEFAULT_FEATURE_GATES


@pytest.mark.parametrize(("value", "message"), [
    ("Foo=true", "unrecognized feature gate: Foo"),
    ("DRAPrioritizedList", "missing bool value for DRAPrioritizedList"),
    ("DRAPrioritizedList=yes",
     'invalid value of DRAPrioritizedList=yes, err: strconv.ParseBool: parsing "yes": invalid syntax'),
    ("DRAPrioritizedList=", 'invalid value of DRAPrioritizedList=, err: strconv.ParseBool: parsing "": invalid syntax'),
    ('A=x"\t', 'invalid value of A=x", err: strconv.ParseBool: parsing "x\\"": invalid syntax'),
    ("DynamicResourceAllocation=false",
     "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true"),
    ("AllowOverwriteTerminationGracePeriodSeconds=1",
     "cannot set feature gate AllowOverwriteTerminationGracePeriodSeconds to true, feature is locked to false"),
    ("SchedulerQueueingHints=false,DynamicResourceAllocation=f",
     "[cannot set feature gate DynamicResourceAllocation to false, feature is locked to true, "
     "cannot set feature gate SchedulerQueueingHints to false, feature is locked to true]"),
    # An unknown name is told alone, before any locked gate.
    ("DynamicResourceAllocation=false,Zzz=true", "unrecognized feature gate: Zzz"),
])
def test_component_base_messages(value: str, message: str) -> None:
    assert str(refused(value)) == message


def test_a_value_other_than_the_default_is_refused_unless_implemented() -> None:
    e = refused("MemoryQoS=true")
    assert (e.gate, str(e)) == ("MemoryQoS", "feature gate MemoryQoS=true is not implemented by kubesched")
    e = refused("GracefulNodeShutdown=false,MemoryQoS=true")
    assert str(e) == "feature gates GracefulNodeShutdown=false, MemoryQoS=true are not implemented by kubesched"
    # Restating a default is no change, for a locked gate too.
    assert FeatureGates.parse("MemoryQoS=false,DynamicResourceAllocation=true") == DEFAULT_FEATURE_GATES


def test_all_alpha_and_all_beta_set_the_gates_not_set_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    alpha = [n for n, s in KNOWN.items() if s.stage is Stage.ALPHA and n != "AllAlpha"]
    beta_on = [n for n, s in KNOWN.items() if s.stage is Stage.BETA and s.default and n != "AllBeta"]
    # Kubelet gates: the scheduler has nothing to implement for them.
    e = refused("AllAlpha=true")
    assert e.gate == "AllAlpha" and "MemoryQoS=true" in str(e) and "EventedPLEG=true" in str(e)
    e = refused("AllBeta=false")
    assert e.gate == "AllBeta" and "GracefulNodeShutdown=false" in str(e) and "KubeletPSI=false" in str(e)

    monkeypatch.setattr(features, "IMPLEMENTED", frozenset(alpha + beta_on))
    gates = FeatureGates.parse("AllAlpha=true,MemoryQoS=false,AllBeta=false,DRAAdminAccess=true")
    assert gates.enabled("DRAConsumableCapacity") and gates.enabled("GangScheduling")
    assert not gates.enabled("MemoryQoS")  # set by name: AllAlpha leaves it
    assert not gates.enabled("DRAPrioritizedList") and gates.enabled("DRAAdminAccess")
    assert gates.enabled("DynamicResourceAllocation")  # GA: neither touches it
    assert FeatureGates.parse("AllAlpha=false") == DEFAULT_FEATURE_GATES


def test_later_settings_win() -> None:
    scenario = FeatureGates({"DRAPartitionableDevices": True, "DRAPrioritizedList": False})
    merged = scenario.overridden_by(FeatureGates.parse("DRAPartitionableDevices=false"))
    assert merged.changed() == {"DRAPrioritizedList": False}


def test_problems_name_the_setting_each_comes_from() -> None:
    found = features.problems({"Foo": True, "DynamicResourceAllocation": False, "AllAlpha": True, "MemoryQoS": False})
    assert [e.gate for e in found] == ["AllAlpha", "DynamicResourceAllocation", "Foo"]
    assert str(found[0]).startswith("feature gates APIServingWithRoutine=true, ")
    assert "MemoryQoS" not in str(found[0])  # set by name, to its default
    assert str(found[1]) == "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true"
    assert str(found[2]) == "unrecognized feature gate: Foo"
    assert features.problems({"DRAPrioritizedList": True}) == []


def test_an_unknown_gate_asked_for_is_a_programming_error() -> None:
    with pytest.raises(KeyError, match="DRAPriortizedList"):
        DEFAULT_FEATURE_GATES.enabled("DRAPriortizedList")
