"""GCP Compute Engine provisioner (reference §2.7): bulkInsert, label-scoped list, delete.

With `gcp_clients` and `gcp_cluster`, the only modules that import google-cloud-compute (and
google.api_core / google.auth); importing it costs about 2 s, so the master imports it only for
a pool whose provider is GCP.

Every call goes to the configured `api_endpoint` (tests: a fake on 127.0.0.1 over plain HTTP).
Operations are polled with our own Zone/RegionOperationsClient: the library's
`ExtendedOperation` would poll through a hidden client bound to compute.googleapis.com whatever
endpoint we set.

`terminate` fires one delete per instance and does not wait for the operations: the next `list`
shows the instance STOPPING (ignored by the decider) and then gone, and a delete GCE failed
leaves the instance listed, so the decider asks again on a later tick.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from google.api_core import exceptions as api_exceptions
from google.cloud import compute_v1

from provisioners.base import (
    Instance,
    LaunchFailure,
    LaunchFailureKind,
    OfferError,
    OfferLaunchResult,
)
from provisioners.config import GcpProviderConfig, pool_offers, slots_per_instance
from provisioners.gcp_clients import CALL_TIMEOUT_S, Clients, launch_errors, launch_failure

# `det deploy gcp`'s calls, found here where they always were.
from provisioners.gcp_cluster import (  # noqa: F401
    GcpCallError,
    LabelledInstance,
    delete_instances,
    labelled_instances,
)
from provisioners.gcp_mapping import (
    REQUEST_LABEL,
    GcpLaunchSpec,
    MasterAddress,
    RegionalLaunch,
    failure_kind,
    gce_request_id,
    instance_properties,
    instance_state,
    label_filter,
    location_policy,
    name_pattern,
    regional_launch,
)
from provisioners.offers import COLD_KINDS, Offer, offer_key

log = logging.getLogger(__name__)

DEFAULT_SOURCE_IMAGE = "projects/determined-ai/global/images/det-environments-0736b6d"


class GcpComputeProvisioner:
    """Launches, lists and deletes one resource pool's agents on GCE (a `Provisioner`).

    Instance ids and agent names are GCE instance names. Keyword arguments mirror the GCP provider
    keys of the master config (reference §2.9); `clock` stamps instances GCE listed without a
    creation time, `rng` picks the name pattern's pet name, `sleep`/`monotonic` drive operation
    polling.
    """

    def __init__(
        self,
        *,
        project: str,
        zone: str,
        pool: str,
        master_url: str,
        startup_script: str,
        api_endpoint: str | None = None,
        credentials: Any = None,
        label_key: str = "managed-by",
        label_value: str = "determined-ai-determined",
        labels: Mapping[str, str] | None = None,
        name_prefix: str = "determined-ai-determined-",
        machine_type: str = "n1-standard-32",
        gpu_type: str = "nvidia-tesla-t4",
        gpu_num: int = 4,
        preemptible: bool = False,
        spot: bool = False,
        boot_disk_size: int = 200,
        boot_disk_source_image: str = DEFAULT_SOURCE_IMAGE,
        boot_disk_type: str | None = None,
        network: str | None = None,
        subnetwork: str | None = None,
        external_ip: bool = False,
        network_tags: Sequence[str] = (),
        service_account_email: str = "",
        service_account_scopes: Sequence[str] = (),
        base_config: Mapping[str, Any] | None = None,
        operation_timeout_period: float = 300.0,
        poll_interval: float = 1.0,
        slots_per_instance: int | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        rng: random.Random | None = None,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
        offers: Sequence[Offer] | None = None,
    ) -> None:
        self.project = project
        self.zone = zone
        self.offers = tuple(offers or ())
        # Every zone an offer names is listed; the first zone is where `launch` goes.
        self.zones = tuple(dict.fromkeys([zone, *(o.location for o in self.offers)]))
        # The default disk type names the zone: in another zone it names that one.
        self._default_disk_type = boot_disk_type in (None, "", _default_disk_type(project, zone))
        self.pool = pool
        self.name_prefix = name_prefix
        self.operation_timeout_period = operation_timeout_period
        self.poll_interval = poll_interval
        self._slots = gpu_num if slots_per_instance is None else slots_per_instance
        self._clock = clock
        self._rng = rng or random.Random()
        self._sleep = sleep
        self._monotonic = monotonic
        self.spec = GcpLaunchSpec(
            pool=pool,
            label_key=label_key,
            label_value=label_value,
            master=MasterAddress.parse(master_url),
            startup_script=startup_script,
            machine_type=machine_type,
            gpu_type=gpu_type,
            gpu_num=gpu_num,
            preemptible=preemptible,
            spot=spot,
            boot_disk_size=boot_disk_size,
            boot_disk_source_image=boot_disk_source_image,
            boot_disk_type=boot_disk_type
            or f"projects/{project}/zones/{zone}/diskTypes/pd-standard",
            network=network or f"projects/{project}/global/networks/default",
            subnetwork=subnetwork,
            external_ip=external_ip,
            network_tags=tuple(network_tags),
            service_account_email=service_account_email,
            service_account_scopes=tuple(service_account_scopes),
            labels=dict(labels or {}),
            base_config=dict(base_config) if base_config else None,
        )
        # A base_config GCE would not understand fails here, at start-up, not at the first launch.
        self._properties(launch_label="check")
        self._request_scope = (project, zone, label_key, label_value, pool)
        self._api_endpoint = api_endpoint
        self._credentials = credentials
        self._clients: Clients | None = None
        self._clients_lock = threading.Lock()

    @classmethod
    def from_config(
        cls,
        cfg: GcpProviderConfig,
        *,
        pool: str,
        master_url: str,
        setup_script: str,
        **overrides: Any,
    ) -> GcpComputeProvisioner:
        """The provisioner of a pool's `type: gcp` provider block.

        `master_url` is the resolved address agents dial (labels and metadata carry it),
        `setup_script` the rendered start-up script (GCE's startup-script metadata).
        `overrides` are the constructor's test seams: credentials, clock, rng, sleep, monotonic,
        poll_interval.
        """
        nic, account, kind = cfg.network_interface, cfg.service_account, cfg.offer_types[0]
        return cls(
            project=cfg.project,
            zone=cfg.zone,
            pool=pool,
            master_url=master_url,
            startup_script=setup_script,
            api_endpoint=cfg.api_endpoint,
            label_key=cfg.label_key,
            label_value=cfg.label_value,
            labels=cfg.labels,
            name_prefix=cfg.name_prefix,
            machine_type=kind.machine_type,
            gpu_type=kind.gpu_type,
            gpu_num=kind.gpu_num,
            preemptible=cfg.instance_type.preemptible,
            spot=cfg.spot,
            boot_disk_size=cfg.boot_disk_size,
            boot_disk_source_image=cfg.boot_disk_source_image,
            boot_disk_type=cfg.boot_disk_type or None,
            network=nic.network or None,
            subnetwork=nic.subnetwork or None,
            external_ip=nic.external_ip,
            network_tags=cfg.network_tags,
            service_account_email=account.email,
            service_account_scopes=account.scopes,
            base_config=cfg.base_config,
            operation_timeout_period=cfg.operation_timeout_period.total_seconds(),
            slots_per_instance=slots_per_instance(cfg),
            offers=pool_offers(cfg),
            **overrides,
        )

    @property
    def slots_per_instance(self) -> int:
        return self._slots

    @property
    def _instances(self) -> compute_v1.InstancesClient:
        return self._connect().instances

    @property
    def _operations(self) -> compute_v1.ZoneOperationsClient:
        return self._connect().operations

    def _connect(self) -> Clients:
        # Built at first use: with no endpoint and no credentials the library looks for
        # Application Default Credentials, which may ask a metadata server.
        with self._clients_lock:
            if self._clients is None:
                self._clients = Clients.make(self._api_endpoint, self._credentials)
            return self._clients

    # -- Provisioner -----------------------------------------------------------------------

    def launch(self, count: int, *, request_id: str) -> list[str]:
        """One bulkInsert of `count` instances (at least 1); returns the names GCE created.

        `request_id` becomes GCE's requestId (as a UUID derived from it), so repeating a launch
        after a crash is answered with the first call's operation and creates nothing new.
        """
        if count <= 0:
            return []
        return self._bulk_insert(count, request_id, self.zone, self.spec)

    def launch_offers(
        self, choices: Sequence[tuple[Offer, int]], *, request_id: str
    ) -> OfferLaunchResult:
        """The first choice, as one bulkInsert; a capacity or quota answer comes back as the
        offer's error (the caller marks it cold and tries the next zone or type).

        When the next choices are the same machine in other zones of the first one's region,
        the call is GCE's regional bulkInsert with a location policy over those zones (all
        instances in one zone): GCE picks a zone that has the machines, and only when none has
        do all of them come back refused. Otherwise (one zone, zones of other regions) it is
        the zonal bulkInsert, and the caller goes on zone by zone.
        """
        choices = [(offer, count) for offer, count in choices if count > 0]
        if not choices:
            return OfferLaunchResult({})
        offer, count = choices[0]
        shapes = [(_shape(o), o.location, n) for o, n in choices]
        regional = regional_launch(shapes)
        if regional is not None:
            group = [o for o, _ in choices if _shape(o) == shapes[0][0]]
            group = [o for o in dict.fromkeys(group) if o.location in regional.zones]
            return self._launch_regional(offer, group, regional, request_id)
        zone = offer.location
        spec = self._offer_spec(offer, self._disk_type(zone))
        try:
            names = self._bulk_insert(count, request_id, zone, spec)
        except LaunchFailure as failure:
            return _refused([offer], failure, self.pool)
        return OfferLaunchResult({offer.key: names})

    def _offer_spec(self, offer: Offer, disk_type: str) -> GcpLaunchSpec:
        return replace(
            self.spec,
            machine_type=offer.instance_type,
            gpu_type=offer.gpu_type,
            gpu_num=offer.gpu_num,
            spot=self.spec.spot and offer.spot,
            preemptible=self.spec.preemptible and offer.spot,
            boot_disk_type=disk_type,
        )

    def _launch_regional(
        self, offer: Offer, group: Sequence[Offer], launch: RegionalLaunch, request_id: str
    ) -> OfferLaunchResult:
        # In a regional call's instanceProperties a disk type is a bare name (GCE has no zone
        # to resolve a zonal URL in).
        spec = self._offer_spec(offer, self._disk_type(launch.zones[0]).rpartition("/")[2])
        scope = (self.project, launch.region, *self._request_scope[2:])
        gce_id = gce_request_id(scope, request_id)
        body = instance_properties(spec, launch_label=gce_id)
        resource = compute_v1.BulkInsertInstanceResource(
            count=launch.count,
            min_count=1,
            name_pattern=name_pattern(self.name_prefix, self._rng),
            instance_properties=compute_v1.InstanceProperties.from_json(json.dumps(body)),
            location_policy=compute_v1.LocationPolicy.from_json(
                json.dumps(location_policy(launch.zones))
            ),
        )
        request = compute_v1.BulkInsertRegionInstanceRequest(
            project=self.project,
            region=launch.region,
            bulk_insert_instance_resource_resource=resource,
            request_id=gce_id,
        )
        clients = self._connect()
        try:
            with launch_errors():
                operation = clients.region_instances.bulk_insert_unary(
                    request=request, timeout=CALL_TIMEOUT_S
                )
            operation = self._wait(operation, launch.region, regional=True)
            _raise_operation_error(operation)
            with launch_errors():
                listed = list(self._listed(launch_label=gce_id, zones=launch.zones))
        except LaunchFailure as failure:
            return _refused(group, failure, self.pool)
        by_zone = {o.location: o for o in group}
        launched: dict[str, list[str]] = {}
        for zone, instance in sorted(listed, key=lambda zi: zi[1].name):
            launched.setdefault(by_zone[zone].key, []).append(instance.name)
        log.info(
            "GCE created %d of %d instances for pool %s in region %s (zones %s): %s",
            sum(map(len, launched.values())),
            launch.count,
            self.pool,
            launch.region,
            ", ".join(launch.zones),
            launched,
        )
        return OfferLaunchResult(launched)

    def _disk_type(self, zone: str) -> str:
        if self._default_disk_type:
            return _default_disk_type(self.project, zone)
        return self.spec.boot_disk_type

    def _bulk_insert(
        self, count: int, request_id: str, zone: str, spec: GcpLaunchSpec
    ) -> list[str]:
        scope = (self.project, zone, *self._request_scope[2:])
        gce_id = gce_request_id(scope, request_id)
        body = instance_properties(spec, launch_label=gce_id)
        resource = compute_v1.BulkInsertInstanceResource(
            count=count,
            min_count=1,
            name_pattern=name_pattern(self.name_prefix, self._rng),
            instance_properties=compute_v1.InstanceProperties.from_json(json.dumps(body)),
        )
        request = compute_v1.BulkInsertInstanceRequest(
            project=self.project,
            zone=zone,
            bulk_insert_instance_resource_resource=resource,
            request_id=gce_id,
        )
        with launch_errors():
            operation = self._instances.bulk_insert_unary(request=request, timeout=CALL_TIMEOUT_S)
        operation = self._wait(operation, zone)
        _raise_operation_error(operation)
        for warning in operation.warnings:
            log.warning("GCE launch %s in pool %s: %s", gce_id, self.pool, warning.message)
        with launch_errors():
            names = sorted(i.name for _, i in self._listed(launch_label=gce_id, zones=(zone,)))
        log.info(
            "GCE created %d of %d instances for pool %s in %s: %s",
            len(names),
            count,
            self.pool,
            zone,
            names,
        )
        return names

    def list(self) -> list[Instance]:
        """This pool's instances, as GCE lists them under our labels."""
        return [self._instance(i, zone) for zone, i in self._listed()]

    def terminate(self, instance_ids: Sequence[str]) -> None:
        """Delete the given instances of this pool; names GCE does not list for it are skipped.

        The skip makes terminate safe with a name of another pool or master, and makes an
        already deleted one a no-op; an instance already STOPPING is left to finish.
        """
        if not instance_ids:
            return
        listed = {i.name: (zone, i.status) for zone, i in self._listed()}
        failures: list[Exception] = []
        for name in dict.fromkeys(instance_ids):
            zone, status = listed.get(name, (self.zone, None))
            if status is None or status == "STOPPING":
                log.debug("not deleting %s (listed as %s)", name, status)
                continue
            try:
                self._instances.delete_unary(
                    project=self.project, zone=zone, instance=name, timeout=CALL_TIMEOUT_S
                )
            except api_exceptions.NotFound:
                continue
            except (api_exceptions.GoogleAPICallError, OSError) as exc:
                log.warning("GCE refused to delete %s: %s", name, exc)
                failures.append(exc)
        if failures:
            raise failures[0]

    # -- helpers ---------------------------------------------------------------------------

    def _properties(self, *, launch_label: str) -> compute_v1.InstanceProperties:
        body = instance_properties(self.spec, launch_label=launch_label)
        try:
            return compute_v1.InstanceProperties.from_json(json.dumps(body))
        except Exception as exc:  # protobuf's ParseError names the offending key
            raise ValueError(f"GCP base_config is not valid InstanceProperties: {exc}") from exc

    def _listed(
        self, *, launch_label: str | None = None, zones: Sequence[str] | None = None
    ) -> Iterator[tuple[str, compute_v1.Instance]]:
        """(zone, instance) of this pool in each of its zones (one list call per zone)."""
        flt = label_filter(self.spec.label_key, self.spec.label_value, self.pool)
        if launch_label is not None:
            flt += f" AND (labels.{REQUEST_LABEL}={launch_label})"
        for zone in zones or self.zones:
            request = compute_v1.ListInstancesRequest(project=self.project, zone=zone, filter=flt)
            for instance in self._instances.list(request=request, timeout=CALL_TIMEOUT_S):
                yield zone, instance

    def _wait(
        self, operation: compute_v1.Operation, where: str, *, regional: bool = False
    ) -> compute_v1.Operation:
        """Poll a zone's (or a region's) operation every `poll_interval` until DONE, within
        the operation timeout."""
        deadline = self._monotonic() + self.operation_timeout_period
        while operation.status != compute_v1.Operation.Status.DONE:
            if self._monotonic() >= deadline:
                raise LaunchFailure(
                    LaunchFailureKind.TRANSIENT,
                    f"GCE operation {operation.name} not done after "
                    f"{self.operation_timeout_period:g} s",
                )
            self._sleep(self.poll_interval)
            try:
                operation = self._poll(operation.name, where, regional=regional)
            except (api_exceptions.ServerError, api_exceptions.TooManyRequests, OSError) as exc:
                log.warning("polling GCE operation %s: %s; retrying", operation.name, exc)
            except api_exceptions.GoogleAPICallError as exc:
                raise launch_failure(exc) from exc
        return operation

    def _poll(self, name: str, where: str, *, regional: bool) -> compute_v1.Operation:
        if regional:
            return self._connect().region_operations.get(
                project=self.project, region=where, operation=name, timeout=CALL_TIMEOUT_S
            )
        return self._operations.get(
            project=self.project, zone=where, operation=name, timeout=CALL_TIMEOUT_S
        )

    def _instance(self, inst: compute_v1.Instance, zone: str) -> Instance:
        created = inst.creation_timestamp
        scheduling = inst.scheduling
        spot = scheduling.provisioning_model == "SPOT" or bool(scheduling.preemptible)
        machine = inst.machine_type.rpartition("/")[2]
        return Instance(
            id=inst.name,
            agent_name=inst.name,
            state=instance_state(inst.status),
            launch_time=datetime.fromisoformat(created) if created else self._clock(),
            spot=spot,
            offer_key=offer_key(machine, zone, spot=spot) if machine else None,
        )


def _shape(offer: Offer) -> str:
    """What an instance of the offer is, wherever it lands."""
    return f"{offer.instance_type}/{offer.gpu_type}x{offer.gpu_num}/{offer.market}"


def _refused(offers: Sequence[Offer], failure: LaunchFailure, pool: str) -> OfferLaunchResult:
    """A capacity, quota or price answer as the error of each offer the call stood for; any
    other failure (bad config, network) is the call's and is raised."""
    if failure.kind not in COLD_KINDS:
        raise failure
    for offer in offers:
        log.warning("pool %s: %s refused: %s", pool, offer.label, failure.message)
    return OfferLaunchResult(
        {}, tuple(OfferError(o.key, failure.kind, failure.message) for o in offers)
    )


def _raise_operation_error(operation: compute_v1.Operation) -> None:
    """A launch's problems come back on its operation, not as an HTTP error."""
    if operation.error.errors:
        first = operation.error.errors[0]
        status = operation.http_error_status_code or None
        raise LaunchFailure(failure_kind(first.code, status), f"{first.code}: {first.message}")


def _default_disk_type(project: str, zone: str) -> str:
    return f"projects/{project}/zones/{zone}/diskTypes/pd-standard"
