"""DynamicResourcesArgs as kube-scheduler v1.35 reads and validates them."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.features import FeatureGates
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.config import SchedulerConfig, build_profiles, check_fields
from kubesched.scheduler.framework import ConfigError, Handle

BINDING = "DRADeviceBindingConditions=true"


def plugin(args: dict[str, Any], gates: str = "") -> Any:
    handle = Handle(Cache())
    if gates:
        handle.features = FeatureGates.parse(gates)
    config = SchedulerConfig.from_object({"profiles": [{"pluginConfig": [{"name": "DynamicResources", "args": args}]}]})
    profile = build_profiles(config, handle)["default-scheduler"]
    return next(pl for pl in profile.at("preBind") if pl.name == "DynamicResources")


def test_binding_timeout_defaults_to_ten_minutes_and_is_read_from_the_args() -> None:
    assert plugin({}).binding_timeout == 600
    assert plugin({"bindingTimeout": "1m30s"}, BINDING).binding_timeout == 90
    assert plugin({"filterTimeout": "0s"}).binding_timeout == 600  # zero: no filter timeout
    assert list(check_fields({"profiles": [{"pluginConfig": [{"name": "DynamicResources", "args": {
        "bindingTimeout": "60s", "filterTimeout": "5s"}}]}]})) == []


@pytest.mark.parametrize(("args", "gates", "message"), [
    ({"bindingTimeout": "60s"}, "",
     "bindingTimeout: Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled"),
    ({"bindingTimeout": "500ms"}, BINDING, "bindingTimeout: Invalid value: 500ms: must be at least 1 second"),
    ({"filterTimeout": "-1s"}, "", "filterTimeout: Invalid value: -1s: must be zero or positive"),
    ({"filterTimeout": "soon"}, "", 'filterTimeout: "soon" is not a duration'),
])
def test_args_are_validated_as_upstream_does(args: dict[str, Any], gates: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        plugin(args, gates)
    assert str(e.value) == f"profiles[0].pluginConfig[DynamicResources].args.{message}"
