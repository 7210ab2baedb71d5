"""Provider blocks of resource pools: parse them, and the slots each instance brings.

The models live in `config_common` (keys of every cloud), `config_aws` and `config_gcp`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from provisioners.config_aws import (
    SPOT_PRICE_ON_DEMAND,
    AwsNetworkInterface,
    AwsProviderConfig,
    AwsTag,
    aws_instance_type_slots,
)
from provisioners.config_common import ProviderConfigBase, default_agent_install
from provisioners.config_gcp import (
    GcpInstanceType,
    GcpNetworkInterface,
    GcpProviderConfig,
    GcpServiceAccount,
)
from resource_pools.config import ResourcesConfig
from resource_pools.config_errors import Loc, Problem, raise_config_error

__all__ = [
    "SPOT_PRICE_ON_DEMAND",
    "AwsNetworkInterface",
    "AwsProviderConfig",
    "AwsTag",
    "GcpInstanceType",
    "GcpNetworkInterface",
    "GcpProviderConfig",
    "GcpServiceAccount",
    "ProviderConfig",
    "ProviderConfigBase",
    "aws_instance_type_slots",
    "default_agent_install",
    "max_pool_slots",
    "parse_pool_providers",
    "parse_provider",
    "slots_per_instance",
]

ProviderConfig = AwsProviderConfig | GcpProviderConfig
_MODELS: dict[str, type[AwsProviderConfig] | type[GcpProviderConfig]] = {
    "aws": AwsProviderConfig,
    "gcp": GcpProviderConfig,
}
_TITLE = "ProviderConfig"


def parse_provider(data: Mapping[str, Any]) -> ProviderConfig:
    """Validate one provider block, chosen by its `type` (aws or gcp).

    Also reads the older spellings: `provider: aws` for `type: aws`, and the nested form
    `{aws: {...}}` / `{gcp: {...}}`. Raises ValidationError whose
    locations are key paths inside the block.
    """
    if not isinstance(data, Mapping):
        reason = "a provider must be a mapping with type: aws or type: gcp"
        raise_config_error(_TITLE, ((), reason, data))
    flat = dict(data)
    type_key = "type"
    if "type" not in flat and "provider" in flat:  # the pre-0.14 spelling
        type_key = "provider"
        flat["type"] = flat.pop("provider")
    flat, nested_under = _flatten_nested(flat)
    kind = flat.get("type")
    model = _MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise_config_error(_TITLE, ((type_key,), _type_problem(kind), kind))
    if nested_under is None:
        return model.model_validate(flat)
    try:
        return model.model_validate(flat)
    except ValidationError as exc:
        raise_config_error(_TITLE, *_problems(exc, (), nested_under))


def _type_problem(kind: object) -> str:
    if kind is None:
        return "a provider needs a type: aws or gcp"
    if kind == "hpc":
        return "type hpc (Slurm/PBS launchers) is not supported by Resolute; use aws or gcp"
    return f"unknown provider type {kind!r}; use aws or gcp"


def _flatten_nested(data: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, set[str]] | None]:
    """`{aws: {...}, max_instances: 3}` → one flat block; also says which keys were nested."""
    if "type" in data:
        return data, None
    nested = [k for k in _MODELS if isinstance(data.get(k), Mapping)]
    if len(nested) != 1:
        return data, None
    kind = nested[0]
    inner = dict(data.pop(kind))
    clashes = sorted(set(inner) & set(data))
    if clashes:
        reason = f"{clashes[0]!r} is given both inside and outside {kind!r}; keep one"
        raise_config_error(_TITLE, ((kind, clashes[0]), reason, inner[clashes[0]]))
    return {**data, **inner, "type": kind}, (kind, set(inner))


def _problems(
    exc: ValidationError, prefix: Loc, nested: tuple[str, set[str]] | None = None
) -> list[Problem]:
    problems: list[Problem] = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        if nested is not None and loc and loc[0] in nested[1]:
            loc = (nested[0], *loc)
        problems.append((prefix + loc, error["msg"].removeprefix("Value error, "), error["input"]))
    return problems


def parse_pool_providers(
    resources: ResourcesConfig, *, legacy: bool = False
) -> dict[str, ProviderConfig]:
    """The parsed provider of each pool that has one, by pool name.

    Checks every pool's block and each fallback_pool (it must name another pool of
    `resources`). Raises one ValidationError listing every problem, located as
    `resource_pools[i].provider.<key>` (or `provisioner.<key>` for the pre-0.14 format,
    `legacy=True`).
    """
    providers: dict[str, ProviderConfig] = {}
    problems: list[Problem] = []
    names = [pool.pool_name for pool in resources.resource_pools]
    for index, pool in enumerate(resources.resource_pools):
        if pool.provider is None:
            continue
        prefix: Loc = ("provisioner",) if legacy else ("resource_pools", index, "provider")
        try:
            provider = parse_provider(pool.provider)
        except ValidationError as exc:
            problems.extend(_problems(exc, prefix))
            continue
        providers[pool.pool_name] = provider
        fallback = provider.fallback_pool
        if fallback is None:
            continue
        if fallback == pool.pool_name:
            reason = "must name another pool, not this one"
            problems.append(((*prefix, "fallback_pool"), reason, fallback))
        elif fallback not in names:
            reason = f"pool {fallback!r} is not in resource_pools (defined: {', '.join(names)})"
            problems.append(((*prefix, "fallback_pool"), reason, fallback))
    if problems:
        raise_config_error(ResourcesConfig.__name__, *problems)
    return providers


def slots_per_instance(config: ProviderConfig) -> int:
    """Slots one instance brings: GPUs, or 1 CPU slot for a GPU-less one if cpu_slots_allowed."""
    if isinstance(config, AwsProviderConfig):
        slots = config.instance_slots
        if slots is None:
            slots = aws_instance_type_slots(config.instance_type) or 0
    else:
        slots = config.instance_type.gpu_num
    if slots == 0 and config.cpu_slots_allowed:
        return 1
    return slots


def max_pool_slots(config: ProviderConfig) -> int:
    """Slots a provider pool can ever hold: max_instances times slots per instance. A job asking
    more is refused at submission ("slots requested exceeds cluster capacity"), as in Determined."""
    return config.max_instances * slots_per_instance(config)
