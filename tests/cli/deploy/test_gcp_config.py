"""GcpDeployment: Determined's defaults, the checks on each setting, the stored variables."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.deploy.gcp_config import (
    CLUSTER_ID,
    DeployConfigError,
    GcpDeployment,
    parse_labels,
)

BASE = {"cluster_id": "c1", "project_id": "my-project-1"}


def test_defaults_follow_determined_and_derive_from_the_cluster() -> None:
    d = GcpDeployment(**BASE)
    assert (d.region, d.zone, d.network) == ("us-west1", "us-west1-b", "c1-net")
    assert (d.master_instance_type, d.compute_agent_instance_type) == (
        "n1-standard-2",
        "n1-standard-32",
    )
    assert (d.gpu_type, d.gpu_num, d.max_dynamic_agents, d.scheduler_type) == (
        "nvidia-tesla-t4", 4, 5, "fair_share",
    )  # fmt: skip
    assert d.state_bucket == "c1-my-project-1-tfstate"
    assert d.allow_data_deletion is False


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"cluster_id": "C1"}, "--cluster-id 'C1'"),
        ({"cluster_id": "a/b"}, "--cluster-id"),
        ({"cluster_id": "a\x00b"}, "--cluster-id"),
        ({"cluster_id": "ends-"}, "--cluster-id"),
        ({"cluster_id": ""}, "--cluster-id"),
        ({"project_id": "x"}, "--project-id"),
        ({"zone": "us-east1-b"}, "not in --region"),
        ({"inbound_cidr": "nonsense"}, "--inbound-cidr"),
        ({"master_port": 0}, "--port 0"),
        ({"max_dynamic_agents": 0}, "--max-dynamic-agents"),
        ({"min_dynamic_agents": 6}, "above --max-dynamic-agents"),
        ({"max_idle_agent_period": "10 minutes"}, "Go duration"),
        ({"scheduler_type": "fifo"}, "--scheduler-type"),
        ({"preemption_enabled": True}, "needs --scheduler-type priority"),
        ({"db_size": 5}, "--db-size"),
        ({"labels": {"Team": "x"}}, "not a valid GCP label"),
        ({"labels": {"resolute-agents": "x"}}, "Resolute's own"),
    ],
)
def test_bad_settings_are_refused_with_the_flag_named(overrides: dict, message: str) -> None:
    with pytest.raises(DeployConfigError, match=message.replace("(", r"\(")):
        GcpDeployment(**{**BASE, **overrides})


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(DeployConfigError) as caught:
        GcpDeployment(cluster_id="C", project_id="x", db_size=1)
    assert str(caught.value).count(";") == 2


@given(st.from_regex(CLUSTER_ID, fullmatch=True), st.integers(1, 40), st.booleans())
def test_the_stored_variables_load_back_to_the_same_deployment(
    cluster_id: str, agents: int, preemptible: bool
) -> None:
    d = GcpDeployment(
        cluster_id=cluster_id,
        project_id="my-project-1",
        max_dynamic_agents=agents,
        preemptible=preemptible,
        labels={"team": "ml"},
    )
    assert GcpDeployment(**json.loads(json.dumps(d.tfvars()))) == d


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [([], {}), (["a=b", "c="], {"a": "b", "c": ""}), (["a=b=c"], {"a": "b=c"})],
)
def test_parse_labels(pairs: list[str], expected: dict) -> None:
    assert parse_labels(pairs) == expected


def test_a_label_without_equals_is_refused() -> None:
    with pytest.raises(DeployConfigError, match="write key=value"):
        parse_labels(["novalue"])
