"""An hourly cost estimate for `up --dry-run`: a small price table, on-demand, Linux.

Prices: AWS's public on-demand price list for us-east-1 / us-west-2 (the same for these types),
read on 2026-11-20 from https://aws.amazon.com/ec2/pricing/on-demand/ and
https://aws.amazon.com/rds/postgresql/pricing/. Other regions cost up to ~30% more; spot costs
less and varies. A type missing from the table is shown as unknown, not guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

PRICES_AS_OF = "2026-11-20"
EC2_HOURLY = {
    "t3.medium": 0.0416,
    "t3.large": 0.0832,
    "m5.large": 0.096,
    "m5.xlarge": 0.192,
    "m5.2xlarge": 0.384,
    "m6i.large": 0.096,
    "m6i.xlarge": 0.192,
    "c5.xlarge": 0.17,
    "g4dn.xlarge": 0.526,
    "g4dn.2xlarge": 0.752,
    "g4dn.12xlarge": 3.912,
    "g4dn.metal": 7.824,
    "g5.xlarge": 1.006,
    "g5.12xlarge": 5.672,
    "g5.48xlarge": 16.288,
    "p3.2xlarge": 3.06,
    "p3.8xlarge": 12.24,
    "p4d.24xlarge": 32.7726,
}
RDS_HOURLY = {
    "db.t4g.micro": 0.016,
    "db.t4g.medium": 0.065,
    "db.m7g.large": 0.168,
    "db.m6g.large": 0.152,
    "db.r7g.large": 0.239,
}
GP3_GB_MONTH = 0.08
RDS_GP3_GB_MONTH = 0.115
EIP_HOURLY = 0.005  # every public IPv4 address, attached or not, since 2024-02
HOURS_PER_MONTH = 730


@dataclass(frozen=True)
class CostLine:
    item: str
    hourly: float | None


def estimate(
    master_type: str,
    db_class: str,
    db_gib: int,
    compute_type: str,
    aux_type: str,
    max_agents: int,
) -> list[CostLine]:
    """Always-on lines first, then the most the elastic pools can add at full scale."""

    def ec2(kind: str) -> float | None:
        return EC2_HOURLY.get(kind)

    rds = RDS_HOURLY.get(db_class)
    compute = ec2(compute_type)
    aux = ec2(aux_type)
    return [
        CostLine(f"master {master_type} + 50 GiB gp3", _plus(ec2(master_type), 50 * GP3_GB_MONTH)),
        CostLine(f"database {db_class} + {db_gib} GiB", _plus(rds, db_gib * RDS_GP3_GB_MONTH)),
        CostLine("Elastic IP", EIP_HOURLY),
        CostLine(
            f"compute pool at most {max_agents} x {compute_type}",
            None if compute is None else compute * max_agents,
        ),
        CostLine(
            f"aux pool at most {max_agents} x {aux_type}",
            None if aux is None else aux * max_agents,
        ),
    ]


def _plus(hourly: float | None, per_month: float) -> float | None:
    return None if hourly is None else hourly + per_month / HOURS_PER_MONTH
