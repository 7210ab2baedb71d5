"""Elastic pools end to end: cloud views for the instance runner, provider blocks, a sampler.

A real master (`det deploy local`, no static agents) gets a pool whose provider points at a fake
cloud on 127.0.0.1: moto in server mode for AWS (the master's own boto3 reaches it through the
provider's `endpoint_url`), the fake Compute server for GCP (`api_endpoint`). The instance
runner reads the same fake cloud through a *view* (below) and boots every running instance's
real start-up script, so the agents that register are the ones the master's launches made.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tests.support.fake_gce import FakeGCE
from tests.support.instance_runner import CloudView
from tests.support.moto_server import MotoEc2

POOL = "elastic"
GCE_PROJECT = "proj"
GCE_ZONE = "zone-a"


def moto_view(moto: MotoEc2) -> CloudView:
    """Every moto instance as (id, agent name = id, state, user data decoded)."""
    scripts: dict[str, str] = {}  # user data never changes: one attribute call per instance

    def view() -> list[tuple[str, str, str, str]]:
        out = []
        pages = moto.client().get_paginator("describe_instances").paginate()
        for page in pages:
            for reservation in page["Reservations"]:
                for instance in reservation["Instances"]:
                    iid, state = instance["InstanceId"], instance["State"]["Name"]
                    if state == "running" and iid not in scripts:
                        scripts[iid] = moto.user_data(iid)
                    out.append((iid, iid, state, scripts.get(iid, "")))
        return out

    return view


def gce_view(gce: FakeGCE) -> CloudView:
    """Every fake GCE instance as (name, name, status, metadata startup-script)."""

    def view() -> list[tuple[str, str, str, str]]:
        out = []
        for instance in gce.instances():
            items = instance.get("metadata", {}).get("items", [])
            script = next((i["value"] for i in items if i["key"] == "startup-script"), "")
            out.append((instance["name"], instance["name"], instance["status"], script))
        return out

    return view


def aws_provider(moto: MotoEc2, **extra: Any) -> dict[str, Any]:
    """An AWS provider block on this moto: 2 slots per instance, empty by default."""
    return {
        "type": "aws",
        "region": moto.region,
        "endpoint_url": moto.endpoint,
        "image_id": moto.image_id,
        "ssh_key_name": "agents",
        "instance_type": "c5.xlarge",
        "instance_slots": 2,
        "tag_value": "resolute-e2e",
        **_common(),
        **extra,
    }


def gcp_provider(gce: FakeGCE, **extra: Any) -> dict[str, Any]:
    """A GCP provider block on this fake GCE: 2 GPUs (so 2 slots) per instance."""
    return {
        "type": "gcp",
        "project": GCE_PROJECT,
        "zone": GCE_ZONE,
        "api_endpoint": gce.endpoint,
        "label_value": "resolute-e2e",
        "name_prefix": "elastic-",
        "instance_type": {
            "machine_type": "n1-standard-8",
            "gpu_type": "nvidia-tesla-t4",
            "gpu_num": 2,
        },
        **_common(),
        **extra,
    }


def _common() -> dict[str, Any]:
    return {
        "min_instances": 0,
        "max_instances": 2,
        "max_idle_agent_period": "3s",
        "max_agent_starting_period": "60s",
        "agent_reconnect_attempts": 2,
        "agent_reconnect_backoff": 1,
        # The runner links this repository's det-agent in place of any install.
        "agent_install": "true",
    }


def master_config(provider: dict[str, Any], *, interval_s: float = 0.5) -> str:
    """A master config whose only pool is the provider pool (JSON, which is YAML)."""
    return json.dumps(
        {
            "provisioner_interval_s": interval_s,
            "resource_manager": {
                "default_compute_resource_pool": POOL,
                "default_aux_resource_pool": POOL,
            },
            "resource_pools": [{"pool_name": POOL, "provider": provider}],
        }
    )


@dataclass
class LiveCount:
    """Samples the cloud's live instance count in a thread, to check min/max held throughout."""

    count: Callable[[], int]
    interval_s: float = 0.1
    samples: list[tuple[float, int]] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> LiveCount:
        self._thread = threading.Thread(target=self._loop, name="live-count", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.monotonic(), self.count()))
            except Exception as exc:  # kept for the test; a blip must not end the sampling
                self.errors.append(exc)
            self._stop.wait(self.interval_s)

    @property
    def counts(self) -> list[int]:
        return [n for _, n in self.samples]


def moto_live_count(moto: MotoEc2) -> Callable[[], int]:
    """Instances moto has not terminated (pending, running, stopping, ...)."""
    return lambda: len(moto.live_instance_ids())


def gce_live_count(gce: FakeGCE) -> Callable[[], int]:
    """Instances the fake GCE still lists that are not TERMINATED."""
    return lambda: sum(1 for i in gce.instances() if i["status"] != "TERMINATED")


def agents_of_allocations(tasks: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(allocation id, agent id) of every live allocation in a GET /api/v1/tasks answer."""
    for allocation_id, summary in tasks.get("allocationIdToSummary", {}).items():
        for resources in summary.get("resources", []):
            for agent_id in resources.get("agentDevices", {}):
                yield allocation_id, agent_id
