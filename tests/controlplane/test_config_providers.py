"""Master settings: each pool's provider is validated at start-up, errors name their key path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from controlplane.config import MasterSettings, load_settings
from provisioners.config import AwsProviderConfig, GcpProviderConfig

AWS = {"type": "aws", "region": "us-west-2", "image_id": "ami-1", "ssh_key_name": "k"}
GCP = {"type": "gcp", "project": "p", "zone": "us-central1-a"}


def _refused(**settings: Any) -> str:
    with pytest.raises(ValidationError) as info:
        MasterSettings(**settings)
    return str(info.value)


def test_static_pools_have_no_providers() -> None:
    assert MasterSettings().providers == {}


def test_providers_are_parsed_by_pool() -> None:
    settings = MasterSettings(
        resource_pools=[
            {"pool_name": "default"},
            {"pool_name": "spot", "provider": {**AWS, "spot": True, "fallback_pool": "od"}},
            {"pool_name": "od", "provider": GCP},
        ]
    )
    providers = settings.providers
    assert isinstance(providers["spot"], AwsProviderConfig)
    assert isinstance(providers["od"], GcpProviderConfig)
    assert providers["spot"].fallback_pool == "od"


@pytest.mark.parametrize(
    ("provider", "message"),
    [
        ({**AWS, "max_instances": 0}, "resource_pools[1].provider.max_instances: Input should be"),
        (
            {**AWS, "min_instances": 4, "max_instances": 2},
            "resource_pools[1].provider.max_instances: must be >= min_instances (4)",
        ),
        ({**AWS, "ssh_key_name": ""}, "resource_pools[1].provider.ssh_key_name: must not be"),
        ({**GCP, "instance_type": {"gpu_num": 3}}, "resource_pools[1].provider.instance_type.gpu_"),
        ({"type": "hpc"}, "resource_pools[1].provider.type: type hpc (Slurm/PBS launchers) is not"),
        ({**AWS, "fallback_pool": "gpu"}, "resource_pools[1].provider.fallback_pool: must name an"),
        (
            {**AWS, "fallback_pool": "x"},
            "resource_pools[1].provider.fallback_pool: pool 'x' is not",
        ),
    ],
)
def test_bad_provider_fails_start_up_with_its_key_path(
    provider: dict[str, Any], message: str
) -> None:
    pools = [{"pool_name": "default"}, {"pool_name": "gpu", "provider": provider}]
    assert message in _refused(resource_pools=pools)


def test_legacy_provisioner_errors_name_provisioner() -> None:
    text = _refused(provisioner={**AWS, "instance_type": "z9.huge"})
    assert "provisioner.instance_type: unknown instance type 'z9.huge'" in text


def test_master_yaml_with_a_spot_pool_and_its_fallback(tmp_path: Path) -> None:
    config = tmp_path / "master.yaml"
    config.write_text(
        """
resource_pools:
  - pool_name: default
  - pool_name: gpu-spot
    provider:
      type: aws
      region: us-east-1
      image_id: ami-0abc
      ssh_key_name: det
      instance_type: g4dn.12xlarge
      spot: true
      fallback_pool: gpu-on-demand
      max_idle_agent_period: 5m
  - pool_name: gpu-on-demand
    provider:
      type: aws
      region: us-east-1
      image_id: ami-0abc
      ssh_key_name: det
      instance_type: g4dn.12xlarge
      max_instances: 2
"""
    )
    settings = load_settings(config)
    spot = settings.providers["gpu-spot"]
    assert isinstance(spot, AwsProviderConfig)
    assert spot.fallback_pool == "gpu-on-demand"
    assert settings.providers["gpu-on-demand"].max_instances == 2


def _reference_examples() -> list[str]:
    text = (Path(__file__).parents[2] / "docs" / "provisioners.md").read_text()
    section = text.split("## Provider configuration reference", 1)[1].split("\n## ", 1)[0]
    return [block.split("```", 1)[0] for block in section.split("```yaml\n")[1:]]


@pytest.mark.parametrize("example", _reference_examples())
def test_docs_examples_are_valid_master_configs(example: str, tmp_path: Path) -> None:
    config = tmp_path / "master.yaml"
    config.write_text(example)
    assert load_settings(config).providers


def test_docs_have_examples() -> None:
    assert len(_reference_examples()) >= 2
