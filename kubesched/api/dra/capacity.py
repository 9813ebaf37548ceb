"""Consumable capacity (KEP-5075, the alpha gate DRAConsumableCapacity): one device, several claims.

A device that says `allowMultipleAllocations: true` is not taken whole by an allocation: each
request it serves gets a share (a `shareID`) and consumes part of each of the device's
capacities, recorded in the result's `consumedCapacity`, and the device stays available while
what every share consumes fits. How much a request consumes of a capacity follows the capacity's
`requestPolicy`: nothing asked means the policy's `default` (the whole capacity without one); an
amount below `validRange.min` becomes the minimum, one between steps rounds up to the next
`step` from the minimum, one between `validValues` rounds up to the next listed value; a
consumption the policy then does not admit (above `max`, off the steps, not a listed value)
rules the device out. Every capacity of the device is consumed, asked for or not.

The arithmetic is upstream's (k8s.io/dynamic-resource-allocation/structured, experimental
variant, as v1.35 selects it when the gate is on): steps are counted in whole units
(Quantity.Value, rounding up), amounts compare exactly.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubesched.api.quantity import QuantityError, canonical, parse_quantity, quantity_format, quantity_string

Obj = dict[str, Any]
Amount = int | Fraction  # whole amounts as ints: the search adds and compares them a great deal
Amounts = dict[str, Amount]  # capacity name -> amount
# What a request consumes of each capacity: the amount and how the result prints it.
Consumption = dict[str, tuple[Amount, str]]


def amount(raw: Any) -> Amount:
    """A quantity's exact value, an int when it is whole."""
    q = parse_quantity(raw)
    return q.numerator if q.denominator == 1 else q


@dataclass(frozen=True)
class Policy:
    """A capacity's requestPolicy, parsed."""

    default: Amount | None
    default_text: str
    minimum: Amount | None
    minimum_text: str
    maximum: Amount | None
    step: Amount | None
    step_format: str
    valid_values: tuple[tuple[Amount, str], ...] | None


@dataclass(frozen=True)
class Capacity:
    """One capacity of a device: its value and how requests consume it."""

    value: Amount
    value_text: str
    policy: Policy | None


def _quantity(raw: Any) -> tuple[Amount, str]:
    return amount(raw), quantity_string(raw)


def _policy(raw: Obj) -> Policy:
    default = raw.get("default")
    valid_range = raw.get("validRange") or None
    values = raw.get("validValues")
    minimum = maximum = step = None
    minimum_text = step_format = ""
    if valid_range is not None:
        if valid_range.get("min") is not None:
            minimum, minimum_text = _quantity(valid_range["min"])
        if valid_range.get("max") is not None:
            maximum = amount(valid_range["max"])
        if valid_range.get("step") is not None:
            step, step_format = amount(valid_range["step"]), quantity_format(valid_range["step"])
    return Policy(
        default=amount(default) if default is not None else None,
        default_text=quantity_string(default) if default is not None else "",
        minimum=minimum, minimum_text=minimum_text, maximum=maximum, step=step, step_format=step_format,
        valid_values=tuple(_quantity(v) for v in values) if values is not None else None)


_parsed: dict[str, dict[str, Capacity] | None] = {}


def device_capacity(signature: str, capacity: Obj | None) -> dict[str, Capacity] | None:
    """A device's capacities, parsed once per distinct capacity map (`signature` names it);
    None when a quantity does not parse (validation keeps such slices out)."""
    if signature in _parsed:
        return _parsed[signature]
    try:
        found: dict[str, Capacity] | None = {
            name: Capacity(*_quantity((cap or {}).get("value", "0")),
                           _policy(cap["requestPolicy"]) if (cap or {}).get("requestPolicy") else None)
            for name, cap in (capacity or {}).items()}
    except QuantityError:
        found = None
    _parsed[signature] = found
    return found


def requested(spec: Obj) -> Amounts | None:
    """A request's or subrequest's `capacity.requests` (None: it asks for no capacity)."""
    asked = (spec.get("capacity") or {}).get("requests")
    if asked is None:
        return None
    return {name: amount(value) for name, value in asked.items()}


def requested_text(spec: Obj) -> dict[str, str]:
    return {name: quantity_string(amount) for name, amount in ((spec.get("capacity") or {}).get("requests") or {}).items()}


def _whole(q: Amount) -> int:
    """Quantity.Value: the amount in whole units, rounded up."""
    return math.ceil(q)


def _consumed(asked: Amount | None, asked_text: str, cap: Capacity) -> tuple[Amount, str]:
    """calculateConsumedCapacity: what one request consumes of one capacity."""
    policy = cap.policy
    if asked is None:
        if policy is not None and policy.default is not None:
            return policy.default, policy.default_text
        return cap.value, cap.value_text
    if policy is None:
        return asked, asked_text
    if policy.minimum is not None:
        if asked < policy.minimum:
            return policy.minimum, policy.minimum_text
        if policy.step is None:
            return asked, asked_text
        lowest, step = _whole(policy.minimum), _whole(policy.step)
        steps = -(-(_whole(asked) - lowest) // step)
        rounded = lowest + step * steps
        return rounded, canonical(rounded, policy.step_format)
    if policy.valid_values is not None:
        for value, text in policy.valid_values:
            if asked <= value:
                return value, text
    return asked, asked_text


def _violates(consumed: Amount, policy: Policy | None) -> bool:
    """violatesPolicy: a consumption the capacity's policy does not admit."""
    if policy is None or (policy.default is not None and consumed == policy.default):
        return False
    if policy.minimum is not None:
        if policy.maximum is not None and consumed > policy.maximum:
            return True
        if policy.step is not None:
            return (_whole(consumed) - _whole(policy.minimum)) % _whole(policy.step) != 0
        return False
    if policy.valid_values:
        return all(consumed != value for value, _ in policy.valid_values)
    return False


def consumption(capacities: Mapping[str, Capacity], asked: Amounts | None, asked_text: Mapping[str, str]
                ) -> Consumption | None:
    """What a request consumes of each of a device's capacities, or None when the device cannot
    serve it at all: a capacity it asks for that the device does not have, or an amount the
    policy does not admit."""
    if asked and any(name not in capacities for name in asked):
        return None
    out: Consumption = {}
    for name, cap in capacities.items():
        consumed = _consumed(asked.get(name) if asked else None, asked_text.get(name, ""), cap)
        if _violates(consumed[0], cap.policy):
            return None
        out[name] = consumed
    return out


def fits(capacities: Mapping[str, Capacity], consumed: Consumption, held: Amounts | None,
         allocating: Amounts | None) -> bool:
    """CmpRequestOverCapacity's last step: this consumption on top of what allocated shares hold
    and what this allocation attempt already gives out stays within every capacity."""
    for name, (total, _) in consumed.items():
        if held is not None:
            total += held.get(name, 0)
        if allocating is not None:
            total += allocating.get(name, 0)
        if total > capacities[name].value:
            return False
    return True


def add(into: Amounts, amounts: Mapping[str, Amount], sign: int = 1) -> None:
    for name, value in amounts.items():
        into[name] = into.get(name, 0) + sign * value


def result_consumption(result: Obj) -> Amounts:
    """An allocation result's `consumedCapacity`, parsed."""
    return {name: amount(value) for name, value in (result.get("consumedCapacity") or {}).items()}


def share_id(claim: Obj, index: int) -> str:
    """A share's id: a UUID derived from the claim and the result's position, so a run is
    reproducible and no two shares ever collide (upstream draws a random one)."""
    meta = claim["metadata"]
    key = meta.get("uid") or f"{meta.get('namespace', '')}/{meta['name']}"
    digest = hashlib.sha1(f"{key}#{index}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def stamp_share_ids(claim: Obj, allocation: Obj) -> None:
    """Give the shares of an allocation computed for another claim asking alike this claim's ids."""
    for i, result in enumerate((allocation.get("devices") or {}).get("results") or ()):
        if "shareID" in result:
            result["shareID"] = share_id(claim, i)
