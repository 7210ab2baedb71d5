"""Provider blocks of resource pools: parse them, and the slots each instance brings.

The models live in `config_common` (keys of every cloud), `config_aws` and `config_gcp`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from provisioners.config_aws import (
    SPOT_PRICE_ON_DEMAND,
    AwsInstanceTypeOffer,
    AwsNetworkInterface,
    AwsProviderConfig,
    AwsTag,
    aws_instance_type_slots,
)
from provisioners.config_common import ProviderConfigBase, default_agent_install
from provisioners.config_gcp import (
    GcpInstanceType,
    GcpMachineOffer,
    GcpNetworkInterface,
    GcpProviderConfig,
    GcpServiceAccount,
)
from provisioners.offers import Offer, OfferSettings
from provisioners.prices import Price, aws_price, gcp_price
from resource_pools.config import ResourcesConfig
from resource_pools.config_errors import Loc, Problem, raise_config_error

__all__ = [
    "SPOT_PRICE_ON_DEMAND",
    "AwsInstanceTypeOffer",
    "AwsNetworkInterface",
    "AwsProviderConfig",
    "AwsTag",
    "GcpInstanceType",
    "GcpMachineOffer",
    "GcpNetworkInterface",
    "GcpProviderConfig",
    "GcpServiceAccount",
    "ProviderConfig",
    "ProviderConfigBase",
    "aws_instance_type_slots",
    "default_agent_install",
    "max_pool_slots",
    "offer_settings",
    "parse_pool_providers",
    "parse_provider",
    "pool_offers",
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
    """Slots one instance of the pool's unit (first) type brings: GPUs, or 1 CPU slot for a
    GPU-less one if cpu_slots_allowed."""
    return pool_offers(config)[0].slots


def _slots(slots: int, config: ProviderConfig) -> int:
    return 1 if slots == 0 and config.cpu_slots_allowed else slots


def pool_offers(config: ProviderConfig) -> tuple[Offer, ...]:
    """The pool's offers: each type x each subnet/zone, in config order (type first).

    A spot pool with spot_fallback_after also gets each type on-demand, marked as fallback.
    Prices come from the entry, else the repository's price table, else 0 (unknown: ranked by
    config order, and never held back by max_hourly_cost).
    """
    kinds: list[tuple[str, int, Price | None, str, int]] = []
    if isinstance(config, AwsProviderConfig):
        for entry in config.offer_types:
            table = aws_price(entry.type)
            price = _overridden(table, entry.price_per_hour, entry.spot_price_per_hour)
            kinds.append((entry.type, _slots(entry.resolved_slots or 0, config), price, "", 0))
        locations = config.subnets
    else:
        for m in config.offer_types:
            table = gcp_price(m.machine_type, m.gpu_type, m.gpu_num)
            price = _overridden(table, m.price_per_hour, m.spot_price_per_hour)
            slots = _slots(m.resolved_slots, config)
            kinds.append((m.machine_type, slots, price, m.gpu_type, m.gpu_num))
        locations = config.offer_zones
    markets = [config.is_spot]
    if config.is_spot and config.spot_fallback_after is not None:
        markets.append(False)
    offers: list[Offer] = []
    for spot in markets:
        for kind, slots, price, gpu_type, gpu_num in kinds:
            for location in locations:
                offers.append(
                    Offer(
                        instance_type=kind,
                        location=location,
                        slots=slots,
                        spot=spot,
                        price_per_hour=price.of(spot=spot) if price is not None else 0.0,
                        rank=len(offers),
                        fallback=config.is_spot and not spot,
                        gpu_type=gpu_type,
                        gpu_num=gpu_num,
                    )
                )
    return tuple(offers)


def _overridden(table: Price | None, on_demand: float | None, spot: float | None) -> Price | None:
    if table is None and on_demand is None and spot is None:
        return None
    base_on_demand = on_demand if on_demand is not None else (table.on_demand if table else 0.0)
    base_spot = spot if spot is not None else (table.spot if table else base_on_demand)
    return Price(on_demand=base_on_demand, spot=base_spot)


def offer_settings(config: ProviderConfig) -> OfferSettings:
    return OfferSettings(
        backoff=config.capacity_backoff,
        backoff_max=config.capacity_backoff_max,
        max_hourly_cost=config.max_hourly_cost,
        on_demand_after=config.spot_fallback_after if config.is_spot else None,
    )


def max_pool_slots(config: ProviderConfig) -> int:
    """Slots a provider pool can ever hold: max_instances times the largest offer's slots. A job
    asking more is refused at submission ("slots requested exceeds cluster capacity"), as in
    Determined."""
    return config.max_instances * max(offer.slots for offer in pool_offers(config))
