"""The dry-run's hourly estimate: list prices per type, and how the total grows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.deploy.gcp_config import GcpDeployment
from cli.deploy.gcp_inventory import hourly_cost, machine_hourly, sql_hourly


@pytest.mark.parametrize(
    ("machine_type", "usd"),
    [
        ("n1-standard-1", 0.0475),  # Google's published price of the smallest N1
        ("n1-standard-32", 1.52),
        ("n2-standard-2", 0.0971),
        ("n1-highcpu-4", 0.1417),
        ("g2-standard-8", None),  # its price includes an L4: not guessed
        ("custom-8-30720", None),
        ("n1-standard", None),
    ],
)
def test_machine_prices(machine_type: str, usd: float | None) -> None:
    price = machine_hourly(machine_type)
    assert price == pytest.approx(usd, abs=0.001) if usd is not None else price is None


@pytest.mark.parametrize(
    ("tier", "disk", "usd"),
    [
        ("db-custom-1-3840", 20, 0.0722),
        ("db-custom-2-7680", 100, 0.1584),
        ("db-f1-micro", 20, None),
    ],
)
# vCPU $0.0413/h, memory $0.007/GB-h, SSD $0.17/GB-month (Enterprise edition, us-central1).
def test_cloud_sql_prices(tier: str, disk: int, usd: float | None) -> None:
    price = sql_hourly(tier, disk)
    assert price == pytest.approx(usd, abs=0.001) if usd is not None else price is None


@given(st.integers(1, 50), st.integers(0, 4))
def test_more_agents_or_gpus_never_cost_less(agents: int, gpus: int) -> None:
    gpu_num = {0: 0, 1: 1, 2: 2, 3: 4, 4: 4}[gpus]

    def cost(**kw: object) -> float:
        d = GcpDeployment(cluster_id="c1", project_id="my-project-1", **kw)  # type: ignore[arg-type]
        total = hourly_cost(d).at_max
        assert total is not None
        return total

    assert cost(max_dynamic_agents=agents + 1, gpu_num=gpu_num) > cost(
        max_dynamic_agents=agents, gpu_num=gpu_num
    )
    assert cost(max_dynamic_agents=agents, gpu_num=4) >= cost(
        max_dynamic_agents=agents, gpu_num=gpu_num
    )
