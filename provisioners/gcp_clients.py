"""The google-cloud-compute clients of the GCP provisioner and what their errors mean.

Imports google-cloud-compute (about 2 s): only `gcp_compute` and `gcp_cluster` import this.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from google.api_core import exceptions as api_exceptions
from google.api_core.client_options import ClientOptions
from google.auth import exceptions as auth_exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1

from provisioners.base import LaunchFailure, LaunchFailureKind
from provisioners.gcp_mapping import failure_kind

# Longest a single HTTP call may take; operations have their own, longer deadline.
CALL_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Clients:
    instances: compute_v1.InstancesClient
    operations: compute_v1.ZoneOperationsClient
    region_instances: compute_v1.RegionInstancesClient
    region_operations: compute_v1.RegionOperationsClient

    @classmethod
    def make(cls, api_endpoint: str | None, credentials: Any) -> Clients:
        instances, operations = zonal_clients(api_endpoint, credentials)
        kwargs = _client_kwargs(api_endpoint, credentials)
        return cls(
            instances,
            operations,
            compute_v1.RegionInstancesClient(transport="rest", **kwargs),
            compute_v1.RegionOperationsClient(transport="rest", **kwargs),
        )


def _client_kwargs(api_endpoint: str | None, credentials: Any) -> dict[str, Any]:
    options = ClientOptions(api_endpoint=api_endpoint) if api_endpoint else None
    # A plain-HTTP endpoint is never Google's: do not look for real credentials (which on a
    # developer machine could mean asking a metadata server).
    if credentials is None and api_endpoint and api_endpoint.startswith("http://"):
        credentials = AnonymousCredentials()
    return {"credentials": credentials, "client_options": options}


def zonal_clients(
    api_endpoint: str | None, credentials: Any
) -> tuple[compute_v1.InstancesClient, compute_v1.ZoneOperationsClient]:
    kwargs = _client_kwargs(api_endpoint, credentials)
    return (
        compute_v1.InstancesClient(transport="rest", **kwargs),
        compute_v1.ZoneOperationsClient(transport="rest", **kwargs),
    )


def launch_failure(exc: api_exceptions.GoogleAPICallError) -> LaunchFailure:
    reasons = [e.get("reason", "") for e in exc.errors or () if isinstance(e, dict)]
    code = exc.code if isinstance(exc.code, int) else None
    kinds = [failure_kind(r, code) for r in reasons] or [failure_kind("", code)]
    return LaunchFailure(kinds[0], f"{type(exc).__name__}: {exc.message}")


@contextmanager
def launch_errors() -> Iterator[None]:
    """Turns what a GCE call raises during a launch into a LaunchFailure."""
    try:
        yield
    except api_exceptions.GoogleAPICallError as exc:
        raise launch_failure(exc) from exc
    except (api_exceptions.RetryError, OSError, auth_exceptions.TransportError) as exc:
        raise LaunchFailure(LaunchFailureKind.TRANSIENT, str(exc)) from exc
    except auth_exceptions.GoogleAuthError as exc:
        raise LaunchFailure(LaunchFailureKind.CONFIG, f"GCP credentials: {exc}") from exc
