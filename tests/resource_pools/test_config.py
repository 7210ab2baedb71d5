"""Master config for resource management (reference §6): defaults, validation, all-or-nothing."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from resource_pools.config import (
    FittingPolicy,
    ResourceManagerConfig,
    ResourcePoolConfig,
    ResourcesConfig,
    SchedulerConfig,
    SchedulerType,
    format_config_errors,
    format_go_duration,
    parse_go_duration,
)


def _errors(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        ResourcesConfig.from_master_config(data)
    return format_config_errors(caught.value)


# --- defaults ---------------------------------------------------------------------------------


def test_empty_config_gets_agent_rm_priority_scheduler_and_one_default_pool() -> None:
    config = ResourcesConfig.from_master_config({})

    rm = config.resource_manager
    assert rm.type == "agent"
    assert rm.cluster_name == "default"
    assert rm.scheduler == SchedulerConfig()
    assert rm.scheduler.type is SchedulerType.PRIORITY
    assert rm.scheduler.fitting_policy is FittingPolicy.BEST
    assert rm.scheduler.allow_heterogeneous_fits is False
    assert rm.scheduler.preemption is False
    assert rm.scheduler.default_priority == 42
    assert (rm.default_aux_resource_pool, rm.default_compute_resource_pool) == ("default",) * 2
    assert rm.no_default_resource_pools is False
    assert (rm.require_authentication, rm.client_ca, rm.metadata) == (False, "", {})
    assert [pool.pool_name for pool in config.resource_pools] == ["default"]


def test_pool_defaults() -> None:
    pool = ResourcePoolConfig(pool_name="p")

    assert pool.description == ""
    assert pool.provider is None
    assert pool.scheduler is None
    assert pool.max_aux_containers_per_agent == 100
    assert pool.agent_reconnect_wait == timedelta(seconds=25)
    assert pool.task_container_defaults is None


def test_null_sections_mean_defaults() -> None:
    config = ResourcesConfig.from_master_config(
        {"resource_manager": None, "resource_pools": None, "scheduler": None, "provisioner": None}
    )

    assert config == ResourcesConfig()


def test_models_are_frozen() -> None:
    config = ResourcesConfig()

    with pytest.raises(ValidationError):
        config.resource_manager.scheduler.preemption = True  # type: ignore[misc]


def test_other_master_keys_are_left_to_the_master_settings() -> None:
    config = ResourcesConfig.from_master_config({"port": 8080, "db": {"url": "sqlite://"}})

    assert config == ResourcesConfig()


# --- the all-or-nothing scheduler rule (§6.3) ---------------------------------------------------

DOCS_EXAMPLE: dict[str, Any] = {
    "resource_manager": {
        "type": "agent",
        "scheduler": {"type": "fair_share", "fitting_policy": "best"},
        "default_aux_resource_pool": "pool1",
        "default_compute_resource_pool": "pool1",
    },
    "resource_pools": [{"pool_name": "pool1", "scheduler": {"fitting_policy": "worst"}}],
}


def test_docs_example_pool_block_takes_builtin_defaults_not_the_rm_values() -> None:
    config = ResourcesConfig.from_master_config(DOCS_EXAMPLE)

    scheduler = config.effective_scheduler("pool1")
    assert scheduler.type is SchedulerType.PRIORITY
    assert scheduler.fitting_policy is FittingPolicy.WORST
    assert config.resource_manager.scheduler.type is SchedulerType.FAIR_SHARE


def test_rm_priority_pool_sets_only_worst_keeps_priority() -> None:
    config = ResourcesConfig.from_master_config(
        {
            "resource_manager": {"scheduler": {"type": "priority", "preemption": True}},
            "resource_pools": [{"pool_name": "default", "scheduler": {"fitting_policy": "worst"}}],
        }
    )

    scheduler = config.effective_scheduler(config.pool("default"))
    assert scheduler == SchedulerConfig(fitting_policy=FittingPolicy.WORST)
    assert scheduler.preemption is False


def test_pool_without_scheduler_inherits_the_rm_scheduler_whole() -> None:
    rm_scheduler = {"type": "round_robin", "fitting_policy": "worst", "allow_heterogeneous_fits": 1}
    config = ResourcesConfig.from_master_config(
        {
            "resource_manager": {"scheduler": rm_scheduler},
            "resource_pools": [{"pool_name": "default"}],
        }
    )

    assert config.effective_scheduler("default") is config.resource_manager.scheduler
    assert config.effective_scheduler("default").type is SchedulerType.ROUND_ROBIN


def test_empty_pool_scheduler_block_still_counts_as_a_block() -> None:
    config = ResourcesConfig.from_master_config(
        {
            "resource_manager": {"scheduler": {"type": "fair_share"}},
            "resource_pools": [{"pool_name": "default", "scheduler": {}}],
        }
    )

    assert config.effective_scheduler("default") == SchedulerConfig()


def test_effective_scheduler_of_an_unknown_pool_name_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        ResourcesConfig().effective_scheduler("nope")


# --- scheduler settings ------------------------------------------------------------------------


def test_round_robin_is_accepted() -> None:
    scheduler = SchedulerConfig.model_validate({"type": "round_robin"})

    assert scheduler.type is SchedulerType.ROUND_ROBIN
    assert "Resolute implements it" in (SchedulerConfig.model_fields["type"].description or "")


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ({"type": "fair_share"}, True),
        ({"type": "priority"}, False),
        ({"type": "priority", "preemption": True}, True),
        ({"preemption": True}, True),
        ({"type": "round_robin"}, False),
    ],
)
def test_is_preemptible_by_scheduler(block: dict[str, Any], expected: bool) -> None:
    assert SchedulerConfig.model_validate(block).is_preemptible is expected


def test_pool_level_block_decides_preemptibility() -> None:
    config = ResourcesConfig.from_master_config(
        {
            "resource_manager": {"scheduler": {"type": "fair_share"}},
            "resource_pools": [{"pool_name": "default", "scheduler": {"type": "priority"}}],
        }
    )

    assert config.resource_manager.scheduler.is_preemptible is True
    assert config.effective_scheduler("default").is_preemptible is False


def test_nested_priority_block_is_read_like_the_flat_keys() -> None:
    nested = SchedulerConfig.model_validate(
        {"type": "priority", "priority": {"preemption": True, "default_priority": 10}}
    )

    assert nested == SchedulerConfig(preemption=True, default_priority=10)


@pytest.mark.parametrize("priority", [1, 99])
def test_default_priority_bounds_are_inclusive(priority: int) -> None:
    assert SchedulerConfig(default_priority=priority).default_priority == priority


def test_fair_share_is_reported_as_deprecated() -> None:
    config = ResourcesConfig.from_master_config(DOCS_EXAMPLE)

    assert config.deprecation_notes() == [
        "resource_manager.scheduler: the fair_share scheduler is deprecated"
    ]
    assert ResourcesConfig().deprecation_notes() == []


# --- the pre-0.14 format -----------------------------------------------------------------------


def test_legacy_format_becomes_one_default_pool() -> None:
    provisioner = {"provider": "aws", "max_instances": 5}
    config = ResourcesConfig.from_master_config(
        {"scheduler": {"type": "fair_share", "fitting_policy": "worst"}, "provisioner": provisioner}
    )

    assert config.resource_manager.scheduler.type is SchedulerType.FAIR_SHARE
    assert config.resource_manager.scheduler.fitting_policy is FittingPolicy.WORST
    (pool,) = config.resource_pools
    assert pool.pool_name == "default"
    assert pool.provider == provisioner
    assert pool.scheduler is None
    assert config.effective_scheduler(pool).type is SchedulerType.FAIR_SHARE


def test_legacy_scheduler_alone_gives_a_static_default_pool() -> None:
    config = ResourcesConfig.from_master_config({"scheduler": {"type": "priority"}})

    assert config.pool("default").provider is None


def test_legacy_errors_name_the_legacy_keys() -> None:
    assert _errors({"scheduler": {"fitting_policy": "random"}}) == [
        "scheduler.fitting_policy: Input should be 'best' or 'worst'"
    ]


# --- deprecated keys ---------------------------------------------------------------------------


def test_deprecated_rm_keys_are_mapped() -> None:
    rm = ResourceManagerConfig.model_validate(
        {"name": "old", "default_cpu_resource_pool": "cpu", "default_gpu_resource_pool": "gpu"}
    )

    assert rm.cluster_name == "old"
    assert (rm.default_aux_resource_pool, rm.default_compute_resource_pool) == ("cpu", "gpu")


@pytest.mark.parametrize(("cluster_name", "expected"), [("", "old"), ("new", "new")])
def test_deprecated_name_is_used_only_when_cluster_name_is_empty(
    cluster_name: str, expected: str
) -> None:
    rm = ResourceManagerConfig.model_validate({"name": "old", "cluster_name": cluster_name})

    assert rm.cluster_name == expected


def test_deprecated_pool_key_is_mapped() -> None:
    pool = ResourcePoolConfig.model_validate({"pool_name": "p", "max_cpu_containers_per_agent": 7})

    assert pool.max_aux_containers_per_agent == 7


def test_same_value_under_old_and_new_key_is_fine() -> None:
    rm = ResourceManagerConfig.model_validate(
        {"default_cpu_resource_pool": "a", "default_aux_resource_pool": "a"}
    )

    assert rm.default_aux_resource_pool == "a"


def test_no_default_resource_pools_empties_the_defaults() -> None:
    config = ResourcesConfig.from_master_config(
        {"resource_manager": {"no_default_resource_pools": True}, "resource_pools": []}
    )

    rm = config.resource_manager
    assert (rm.default_aux_resource_pool, rm.default_compute_resource_pool) == ("", "")
    assert config.resource_pools == ()


def test_agent_reattach_and_kubernetes_namespace_are_accepted() -> None:
    pool = ResourcePoolConfig.model_validate(
        {"pool_name": "p", "agent_reattach_enabled": False, "kubernetes_namespace": "ns"}
    )

    assert pool.kubernetes_namespace == "ns"


def test_task_container_defaults_and_provider_are_kept_as_given() -> None:
    tcd = {"shm_size_bytes": 1024, "bind_mounts": [{"host_path": "/a", "container_path": "/a"}]}
    pool = ResourcePoolConfig.model_validate(
        {"pool_name": "p", "task_container_defaults": tcd, "provider": {"type": "gcp"}}
    )

    assert pool.task_container_defaults == tcd
    assert pool.provider == {"type": "gcp"}


# --- durations ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("25s", timedelta(seconds=25)),
        ("1m30s", timedelta(seconds=90)),
        ("1h", timedelta(hours=1)),
        ("1.5h", timedelta(minutes=90)),
        ("2h45m30.5s", timedelta(hours=2, minutes=45, seconds=30.5)),
        ("300ms", timedelta(milliseconds=300)),
        ("10us", timedelta(microseconds=10)),
        ("10µs", timedelta(microseconds=10)),
        ("1500ns", timedelta(microseconds=2)),
        (".5s", timedelta(milliseconds=500)),
        ("0", timedelta(0)),
        (0, timedelta(0)),
        (40, timedelta(seconds=40)),
        (2.5, timedelta(seconds=2.5)),
        (timedelta(minutes=1), timedelta(minutes=1)),
    ],
)
def test_agent_reconnect_wait_reads_go_durations_and_seconds(
    given: Any, expected: timedelta
) -> None:
    pool = ResourcePoolConfig.model_validate({"pool_name": "p", "agent_reconnect_wait": given})

    assert pool.agent_reconnect_wait == expected


@pytest.mark.parametrize("given", ["25", "1d", "s", "", "1m 30s", "-5s", -1, True, "nan", [1]])
def test_bad_durations_are_refused_with_the_key_path(given: Any) -> None:
    errors = _errors({"resource_pools": [{"pool_name": "default", "agent_reconnect_wait": given}]})

    assert len(errors) == 1
    assert errors[0].startswith("resource_pools[0].agent_reconnect_wait: ")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(0), "0s"),
        (timedelta(seconds=25), "25s"),
        (timedelta(seconds=90), "1m30s"),
        (timedelta(hours=1), "1h0m0s"),
        (timedelta(seconds=1.5), "1.5s"),
        (timedelta(milliseconds=250), "250ms"),
        (timedelta(microseconds=1500), "1.5ms"),
        (timedelta(microseconds=7), "7µs"),
    ],
)
def test_durations_are_written_like_go(value: timedelta, text: str) -> None:
    assert format_go_duration(value) == text
    assert parse_go_duration(text) == value


def test_json_dump_reloads_to_an_equal_config() -> None:
    config = ResourcesConfig.from_master_config(DOCS_EXAMPLE)

    dumped = config.model_dump(mode="json")

    assert dumped["resource_pools"][0]["agent_reconnect_wait"] == "25s"
    assert ResourcesConfig.model_validate(dumped) == config


# --- invalid configs ---------------------------------------------------------------------------

INVALID: list[tuple[str, dict[str, Any], str]] = [
    (
        "bad fitting policy",
        {"resource_manager": {"scheduler": {"fitting_policy": "random"}}},
        "resource_manager.scheduler.fitting_policy: Input should be 'best' or 'worst'",
    ),
    (
        "bad scheduler type",
        {"resource_manager": {"scheduler": {"type": "fifo"}}},
        "resource_manager.scheduler.type: Input should be 'priority', 'fair_share' or "
        "'round_robin'",
    ),
    (
        "priority 0",
        {"resource_manager": {"scheduler": {"default_priority": 0}}},
        "resource_manager.scheduler.default_priority: Input should be greater than or equal to 1",
    ),
    (
        "priority 100",
        {"resource_manager": {"scheduler": {"default_priority": 100}}},
        "resource_manager.scheduler.default_priority: Input should be less than or equal to 99",
    ),
    (
        "priority 0 in a nested priority block",
        {"resource_manager": {"scheduler": {"priority": {"default_priority": 0}}}},
        "resource_manager.scheduler.priority.default_priority: Input should be greater than or "
        "equal to 1",
    ),
    (
        "priority given flat and nested",
        {"resource_manager": {"scheduler": {"preemption": True, "priority": {"preemption": True}}}},
        "resource_manager.scheduler.priority.preemption: preemption is given both here and next "
        "to type; give it once",
    ),
    (
        "preemption under fair_share",
        {"resource_manager": {"scheduler": {"type": "fair_share", "preemption": True}}},
        "resource_manager.scheduler.preemption: applies only to the priority scheduler, not to "
        "fair_share",
    ),
    (
        "default_priority under round_robin",
        {
            "resource_pools": [
                {
                    "pool_name": "default",
                    "scheduler": {"type": "round_robin", "default_priority": 5},
                }
            ]
        },
        "resource_pools[0].scheduler.default_priority: applies only to the priority scheduler, "
        "not to round_robin",
    ),
    (
        "duplicate pool names",
        {
            "resource_pools": [
                {"pool_name": "default"},
                {"pool_name": "a"},
                {"pool_name": "default"},
            ]
        },
        "resource_pools[2].pool_name: pool name 'default' is already used by resource_pools[0]",
    ),
    (
        "default compute pool missing",
        {
            "resource_manager": {"default_compute_resource_pool": "gpu"},
            "resource_pools": [{"pool_name": "default"}],
        },
        "resource_manager.default_compute_resource_pool: pool 'gpu' is not in resource_pools "
        "(defined: default)",
    ),
    (
        "default aux pool missing because the pools are named otherwise",
        {
            "resource_manager": {"default_compute_resource_pool": "a"},
            "resource_pools": [{"pool_name": "a"}],
        },
        "resource_manager.default_aux_resource_pool: pool 'default' is not in resource_pools "
        "(defined: a)",
    ),
    (
        "empty pool list",
        {"resource_pools": []},
        "resource_manager.default_aux_resource_pool: pool 'default' is not in resource_pools "
        "(defined: none)",
    ),
    (
        "empty default pool without the flag",
        {"resource_manager": {"default_aux_resource_pool": ""}},
        "resource_manager.default_aux_resource_pool: must name a pool unless "
        "no_default_resource_pools is true",
    ),
    (
        "default pool set with no_default_resource_pools",
        {
            "resource_manager": {
                "no_default_resource_pools": True,
                "default_compute_resource_pool": "default",
            }
        },
        "resource_manager.default_compute_resource_pool: must be empty when "
        "no_default_resource_pools is true",
    ),
    (
        "negative aux cap",
        {"resource_pools": [{"pool_name": "default", "max_aux_containers_per_agent": -1}]},
        "resource_pools[0].max_aux_containers_per_agent: Input should be greater than or equal "
        "to 0",
    ),
    (
        "deprecated key conflicts with its replacement",
        {
            "resource_pools": [
                {
                    "pool_name": "default",
                    "max_cpu_containers_per_agent": 3,
                    "max_aux_containers_per_agent": 4,
                }
            ]
        },
        "resource_pools[0].max_cpu_containers_per_agent: deprecated max_cpu_containers_per_agent "
        "conflicts with max_aux_containers_per_agent; keep only max_aux_containers_per_agent",
    ),
    (
        "unknown key in resource_manager",
        {"resource_manager": {"schedular": {}}},
        "resource_manager.schedular: Extra inputs are not permitted",
    ),
    (
        "unknown key in the scheduler",
        {"resource_manager": {"scheduler": {"fit": "best"}}},
        "resource_manager.scheduler.fit: Extra inputs are not permitted",
    ),
    (
        "unknown key in a nested priority block",
        {"resource_manager": {"scheduler": {"priority": {"weight": 2}}}},
        "resource_manager.scheduler.priority.weight: Extra inputs are not permitted",
    ),
    (
        "unknown key in a pool",
        {"resource_pools": [{"pool_name": "default", "max_slots": 4}]},
        "resource_pools[0].max_slots: Extra inputs are not permitted",
    ),
    (
        "unknown key in a pool scheduler",
        {"resource_pools": [{"pool_name": "default", "scheduler": {"typo": 1}}]},
        "resource_pools[0].scheduler.typo: Extra inputs are not permitted",
    ),
    (
        "unknown key beside the legacy keys",
        {"scheduler": {"type": "priority", "fitting": "best"}},
        "scheduler.fitting: Extra inputs are not permitted",
    ),
    (
        "rm type kubernetes",
        {"resource_manager": {"type": "kubernetes"}},
        "resource_manager.type: resource manager type 'kubernetes' is not supported; Resolute has "
        "only 'agent'",
    ),
    (
        "mixed old and new format",
        {"scheduler": {"type": "priority"}, "resource_pools": [{"pool_name": "default"}]},
        "scheduler: the pre-0.14 key 'scheduler' cannot be combined with 'resource_pools'; move "
        "scheduler to resource_manager.scheduler and provisioner to a pool's provider",
    ),
    (
        "mixed old provisioner and new resource_manager",
        {"provisioner": {"provider": "gcp"}, "resource_manager": {"type": "agent"}},
        "provisioner: the pre-0.14 key 'provisioner' cannot be combined with 'resource_manager'; "
        "move scheduler to resource_manager.scheduler and provisioner to a pool's provider",
    ),
    (
        "empty pool_name",
        {"resource_pools": [{"pool_name": ""}]},
        "resource_pools[0].pool_name: pool_name must not be empty",
    ),
    (
        "missing pool_name",
        {"resource_pools": [{"description": "x"}]},
        "resource_pools[0].pool_name: Field required",
    ),
    (
        "pools given as a mapping",
        {"resource_pools": {"pool_name": "default"}},
        "resource_pools: Input should be a valid tuple",
    ),
]


@pytest.mark.parametrize(
    ("data", "expected"), [case[1:] for case in INVALID], ids=[case[0] for case in INVALID]
)
def test_invalid_config_error_names_the_key_path(data: dict[str, Any], expected: str) -> None:
    assert expected in _errors(data)


def test_unknown_top_level_key_is_refused_by_the_model() -> None:
    with pytest.raises(ValidationError) as caught:
        ResourcesConfig.model_validate({"resource_pool": []})

    assert format_config_errors(caught.value) == ["resource_pool: Extra inputs are not permitted"]


def test_several_errors_are_reported_together() -> None:
    errors = _errors(
        {
            "resource_manager": {"scheduler": {"fitting_policy": "x", "default_priority": 0}},
            "resource_pools": [{"pool_name": "default", "max_aux_containers_per_agent": -1}],
        }
    )

    assert [error.split(":")[0] for error in errors] == [
        "resource_manager.scheduler.fitting_policy",
        "resource_manager.scheduler.default_priority",
        "resource_pools[0].max_aux_containers_per_agent",
    ]


def test_every_field_has_a_description() -> None:
    models = [SchedulerConfig, ResourceManagerConfig, ResourcePoolConfig, ResourcesConfig]

    missing = [
        f"{model.__name__}.{name}"
        for model in models
        for name, field in model.model_fields.items()
        if not field.description
    ]
    assert missing == []
