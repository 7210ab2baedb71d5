"""Cluster-wide Compute calls of `det deploy gcp` (no pool: every instance under a label)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions
from google.cloud import compute_v1

from provisioners.gcp_clients import CALL_TIMEOUT_S, zonal_clients


class GcpCallError(RuntimeError):
    """A Compute call of `det deploy gcp` failed; the message is Google's, plus what was asked."""


@contextmanager
def _cluster_call(what: str) -> Iterator[None]:
    try:
        yield
    except (api_exceptions.GoogleAPICallError, api_exceptions.RetryError) as exc:
        raise GcpCallError(f"{what}: {exc}") from exc
    except auth_exceptions.GoogleAuthError as exc:
        raise GcpCallError(
            f"{what}: no usable Google credentials ({exc}); run "
            "`gcloud auth application-default login`"
        ) from exc


@dataclass(frozen=True)
class LabelledInstance:
    """An instance as `det deploy gcp list|down` see it."""

    name: str
    zone: str
    status: str
    labels: dict[str, str]
    external_ip: str


def labelled_instances(
    *,
    project: str,
    labels: Mapping[str, str],
    zone: str | None = None,
    api_endpoint: str | None = None,
    credentials: Any = None,
) -> list[LabelledInstance]:
    """Instances carrying all of `labels`, in `zone` or (None) in every zone of the project."""
    flt = " AND ".join(f"(labels.{key}={value})" for key, value in sorted(labels.items()))
    with _cluster_call(f"listing the instances labelled {flt} in project {project}"):
        found = _labelled(project, flt, zone, zonal_clients(api_endpoint, credentials)[0])
    return sorted(
        (
            LabelledInstance(
                name=i.name,
                zone=z,
                status=i.status,
                labels=dict(i.labels),
                external_ip=next(
                    (c.nat_i_p for n in i.network_interfaces for c in n.access_configs), ""
                ),
            )
            for z, i in found
        ),
        key=lambda i: (i.zone, i.name),
    )


def _labelled(
    project: str, flt: str, zone: str | None, instances: compute_v1.InstancesClient
) -> list[tuple[str, compute_v1.Instance]]:
    found: list[tuple[str, compute_v1.Instance]] = []
    if zone:
        request = compute_v1.ListInstancesRequest(project=project, zone=zone, filter=flt)
        found = [(zone, i) for i in instances.list(request=request, timeout=CALL_TIMEOUT_S)]
    else:
        request = compute_v1.AggregatedListInstancesRequest(project=project, filter=flt)
        for scope, listed in instances.aggregated_list(request=request, timeout=CALL_TIMEOUT_S):
            found += [(scope.rpartition("/")[2], i) for i in listed.instances]
    return found


def delete_instances(
    *,
    project: str,
    instances: Sequence[LabelledInstance],
    api_endpoint: str | None = None,
    credentials: Any = None,
) -> None:
    """One delete per instance, without waiting; one already gone is no error."""
    client, _ = zonal_clients(api_endpoint, credentials)
    for instance in instances:
        if instance.status == "STOPPING":
            continue
        with _cluster_call(f"deleting {instance.name} in {instance.zone}"):
            try:
                client.delete_unary(
                    project=project,
                    zone=instance.zone,
                    instance=instance.name,
                    timeout=CALL_TIMEOUT_S,
                )
            except api_exceptions.NotFound:
                continue
