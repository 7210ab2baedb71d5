"""What `up` accepts: cluster ids (they become stack names, tag values and SSM paths), flags."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.deploy.aws.options import DeployOptions, check_cluster_id


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"cluster_id": "a/b"}, "invalid cluster id"),
        ({"cluster_id": "nul\x00"}, "invalid cluster id"),
        ({"cluster_id": "1starts-with-digit"}, "invalid cluster id"),
        ({"cluster_id": "x" * 64}, "invalid cluster id"),
        ({"keypair": " "}, "--keypair"),
        ({"max_dynamic_agents": 0}, "--max-dynamic-agents"),
        ({"max_aux_containers_per_agent": 0}, "--max-aux-containers-per-agent"),
        ({"db_size": 19}, "--db-size"),
        ({"scheduler_type": "lottery"}, "--scheduler-type"),
        ({"max_idle_agent_period": "ten minutes"}, "--max-idle-agent-period"),
        ({"spot_max_price": "1,5"}, "--spot-max-price"),
        ({"inbound_cidr": "10.0.0.1/8"}, "--inbound-cidr"),
        ({"inbound_cidr": "everyone"}, "--inbound-cidr"),
        ({"master_cert_name": "m.example"}, "--master-cert-name needs"),
        ({"subnet_ids": ("subnet-1",)}, "--subnet-ids needs --vpc-id"),
        ({"vpc_id": "vpc-1", "subnet_ids": ("subnet-1",)}, "two subnets"),
        ({"extra_tags": (("aws:x", "y"),)}, "reserved tag key"),
        ({"extra_tags": (("resolute-cluster", "y"),)}, "reserved tag key"),
    ],
)
def test_bad_options_are_refused_with_the_flag_named(overrides: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        DeployOptions(**{"cluster_id": "c1", "keypair": "k", **overrides})


def test_good_options_become_parameters() -> None:
    options = DeployOptions(
        cluster_id="team-a",
        keypair="k",
        max_dynamic_agents=9,
        spot=True,
        spot_max_price="0.90",
        vpc_id="vpc-1",
        subnet_ids=("subnet-1", "subnet-2"),
    )
    params = options.parameters("wheels/abc/resolute-1.0-py3-none-any.whl", "1.0")
    assert params["MaxDynamicAgents"] == "9" and params["Spot"] == "true"
    assert params["SubnetIds"] == "subnet-1,subnet-2" and params["SpotMaxPrice"] == "0.90"
    assert {"Key": "resolute-cluster", "Value": "team-a"} in options.stack_tags()


@given(st.text(alphabet=string.printable + "\x00é/", max_size=80))
def test_cluster_ids_are_safe_as_stack_names_and_paths(text: str) -> None:
    try:
        check_cluster_id(text)
    except ValueError:
        return
    assert re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*", text) and len(text) <= 63


def test_database_url_quotes_the_password_and_requires_tls() -> None:
    from sqlalchemy.engine import make_url

    from cli.deploy.aws.boot import database_url

    url = make_url(database_url("db.example", 5432, "p@ss/w:rd?#"))
    assert url.password == "p@ss/w:rd?#" and url.host == "db.example"
    assert url.database == "resolute" and url.query == {"ssl": "require"}
