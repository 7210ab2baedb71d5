"""Task config policies (`det config-policies`, Determined 0.38): what an admin fixes in every
config of a workload type, globally or in one workspace, and the bounds a config must keep.

A policy is YAML or JSON with two optional parts:

    invariant_config:   # values that replace the user's (the user's config is kept elsewhere)
      description: "team run"
      resources: {resource_pool: gpus}
    constraints:        # a submission outside them is refused, saying which one and why
      resources: {max_slots: 8}
      priority_limit: 10   # no priority number below this (lower numbers go first)

The global policy wins over the workspace's where both set the same key. Pure: text in,
policies out; a config and the effective policy in, the config to run or the refusal out.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from controlplane.domain.errors import InvalidArgument

WORKLOADS = ("EXPERIMENT", "NTSC")
MAX_POLICY_BYTES = 64 * 1024


@dataclass(frozen=True)
class Policy:
    invariant: dict[str, Any] = field(default_factory=dict)
    max_slots: int | None = None
    priority_limit: int | None = None

    @property
    def empty(self) -> bool:
        return not self.invariant and self.max_slots is None and self.priority_limit is None

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.invariant:
            out["invariant_config"] = copy.deepcopy(self.invariant)
        constraints: dict[str, Any] = {}
        if self.max_slots is not None:
            constraints["resources"] = {"max_slots": self.max_slots}
        if self.priority_limit is not None:
            constraints["priority_limit"] = self.priority_limit
        if constraints:
            out["constraints"] = constraints
        return out


def workload(value: str) -> str:
    upper = value.upper()
    if upper not in WORKLOADS:
        raise InvalidArgument(f"invalid workload type: {value}; use EXPERIMENT or NTSC")
    return upper


def parse(text: str) -> Policy:
    """A policy from its YAML or JSON text, or InvalidArgument naming what is wrong."""
    if len(text.encode()) > MAX_POLICY_BYTES:
        raise InvalidArgument(f"a config policy is at most {MAX_POLICY_BYTES} bytes")
    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise InvalidArgument(f"the config policy is not valid YAML or JSON: {exc}") from None
    return from_mapping(data)


def from_mapping(data: Any) -> Policy:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidArgument("a config policy is a mapping with invariant_config and constraints")
    unknown = set(data) - {"invariant_config", "constraints"}
    if unknown:
        raise InvalidArgument(f"unknown config policy keys: {', '.join(sorted(map(str, unknown)))}")
    invariant = data.get("invariant_config") or {}
    if not isinstance(invariant, dict):
        raise InvalidArgument("invariant_config must be a mapping")
    try:
        json.dumps(invariant)
    except (TypeError, ValueError):
        raise InvalidArgument("invariant_config holds values a config cannot") from None
    constraints = data.get("constraints") or {}
    if not isinstance(constraints, dict):
        raise InvalidArgument("constraints must be a mapping")
    unknown = set(constraints) - {"resources", "priority_limit"}
    if unknown:
        raise InvalidArgument(
            f"unknown constraints: {', '.join(sorted(map(str, unknown)))} "
            "(supported: resources.max_slots, priority_limit)"
        )
    resources = constraints.get("resources") or {}
    if not isinstance(resources, dict) or set(resources) - {"max_slots"}:
        raise InvalidArgument("constraints.resources may only hold max_slots")
    max_slots = _int(resources.get("max_slots"), "constraints.resources.max_slots", minimum=0)
    limit = _int(constraints.get("priority_limit"), "constraints.priority_limit", minimum=1)
    policy = Policy(invariant=invariant, max_slots=max_slots, priority_limit=limit)
    _consistent(policy)
    return policy


def _int(value: Any, where: str, *, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value < 2**31:
        raise InvalidArgument(f"{where} must be a whole number of at least {minimum}")
    return value


def _consistent(policy: Policy) -> None:
    """An invariant config may not itself break the policy's constraints."""
    violations = violations_of(policy.invariant, policy)
    if violations:
        raise InvalidArgument(
            "the invariant config breaks the constraints: " + "; ".join(violations)
        )


def effective(global_policy: Policy | None, workspace_policy: Policy | None) -> Policy:
    """The policy that applies: the workspace's, with the global's keys taking precedence."""
    ws = workspace_policy or Policy()
    gl = global_policy or Policy()
    return Policy(
        invariant=_overlay(ws.invariant, gl.invariant),
        max_slots=gl.max_slots if gl.max_slots is not None else ws.max_slots,
        priority_limit=gl.priority_limit if gl.priority_limit is not None else ws.priority_limit,
    )


def _overlay(under: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(under)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _overlay(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def apply_invariant(config: dict[str, Any], policy: Policy) -> dict[str, Any]:
    """The user's config with the invariant values in place of theirs."""
    return _overlay(config, policy.invariant)


def violations_of(config: dict[str, Any], policy: Policy) -> list[str]:
    """Why `config` breaks the constraints (empty: it keeps them)."""
    resources = config.get("resources") if isinstance(config.get("resources"), dict) else {}
    out = []
    if policy.max_slots is not None:
        for key in ("slots_per_trial", "slots", "max_slots"):
            value = resources.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > policy.max_slots:
                out.append(f"resources.{key} {value} is above the limit of {policy.max_slots}")
    if policy.priority_limit is not None:
        priority = resources.get("priority")
        is_int = isinstance(priority, int) and not isinstance(priority, bool)
        if is_int and priority < policy.priority_limit:
            out.append(
                f"resources.priority {priority} is above the limit: priorities go from "
                f"{policy.priority_limit} down (a larger number waits longer)"
            )
    return out


def check(config: dict[str, Any], policy: Policy) -> None:
    problems = violations_of(config, policy)
    if problems:
        raise InvalidArgument(
            "the config breaks this cluster's config policies: " + "; ".join(problems)
        )
