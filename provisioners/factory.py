"""A pool's provisioner from its provider block: the start-up script, then the cloud's class.

The cloud modules are imported only when a pool uses them, so a master without the `aws` or
`gcp` extra runs static pools and the other cloud.
"""

from __future__ import annotations

from typing import Any

from provisioners.agent_setup import AgentSetup, render_setup_script, slot_type_for
from provisioners.base import Provisioner
from provisioners.config import (
    AwsProviderConfig,
    GcpProviderConfig,
    ProviderConfig,
    aws_instance_type_slots,
)


def gpus_per_instance(cfg: ProviderConfig) -> int:
    if isinstance(cfg, AwsProviderConfig):
        if cfg.instance_slots is not None:
            return cfg.instance_slots
        return aws_instance_type_slots(cfg.instance_type) or 0
    return cfg.instance_type.gpu_num


def agent_setup_for(
    cfg: ProviderConfig, *, pool: str, master_url: str, master_cert: str = ""
) -> AgentSetup:
    """`master_cert` is the PEM the master serves HTTPS with: agents trust it (never the key)."""
    return AgentSetup(
        cloud=cfg.type,
        master_url=master_url,
        resource_pool=pool,
        slot_type=slot_type_for(gpus_per_instance(cfg), cfg.cpu_slots_allowed),
        master_cert=master_cert,
        master_cert_name=cfg.master_cert_name,
        agent_reconnect_attempts=cfg.agent_reconnect_attempts,
        agent_reconnect_backoff=cfg.agent_reconnect_backoff,
        startup_script=cfg.startup_script.get_secret_value(),
        agent_config_file_contents=cfg.agent_config_file_contents,
        container_startup_script=cfg.container_startup_script.get_secret_value(),
        agent_install_command=cfg.agent_install,
        agent_docker_image=cfg.agent_docker_image,
        agent_docker_network=cfg.agent_docker_network,
        agent_docker_runtime=cfg.agent_docker_runtime,
        metadata_url=cfg.metadata_url or None,
    )


def make_provisioner(
    cfg: ProviderConfig, *, pool: str, master_url: str, master_cert: str = "", **overrides: Any
) -> Provisioner:
    """The provisioner for `pool`; `overrides` are the cloud class's test seams."""
    setup = agent_setup_for(cfg, pool=pool, master_url=master_url, master_cert=master_cert)
    script = render_setup_script(setup)
    if isinstance(cfg, GcpProviderConfig):
        from provisioners.gcp_compute import GcpComputeProvisioner

        return GcpComputeProvisioner.from_config(
            cfg, pool=pool, master_url=master_url, setup_script=script, **overrides
        )
    from provisioners.aws_ec2 import AwsEc2Provisioner

    return AwsEc2Provisioner.from_config(
        cfg, pool=pool, master_url=master_url, setup_script=script, **overrides
    )
