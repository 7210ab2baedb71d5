"""One resource pool's EC2 instances, on demand or as one-time spot requests (reference §2.5-2.6).

The only module that imports boto3 or botocore. What it sends and how it reads the answers lives
in `provisioners.aws_mapping`; this module makes the calls and keeps the little state spot needs.

- Launch idempotency has two layers: EC2's ClientToken (the request id) covers a retried call that
  EC2 already answered, and the `determined-launch-request` tag lets a repeated launch find what
  the first one made where the token cannot help (a spot request's ValidFrom changes per call).
- Spot requests are tracked by id as well as found by tag, because a request just made may not be
  describable yet; a tracked request EC2 does not show stays listed as pending for a grace period.
- Everything is scoped by the pool's tags: `list` and `terminate` never see other instances.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    ParamValidationError,
    PartialCredentialsError,
)

from provisioners.aws_mapping import (
    LISTED_STATES,
    METADATA_OPTIONS,
    REQUEST_TAG,
    SPOT_REQUEST_PREFIX,
    Ec2LaunchSpec,
    FleetOverride,
    classify_error_code,
    client_token,
    fleet_request,
    instance_from_ec2,
    launch_tags,
    launch_template_data,
    launch_template_name,
    normalize_spot_price,
    pseudo_instance,
    read_fleet_answer,
    read_spot_requests,
    round_skew_up,
    run_instances_request,
    scope_filters,
    spot_request,
    tag_list,
    utc,
)
from provisioners.base import (
    Instance,
    InstanceState,
    LaunchFailure,
    LaunchFailureKind,
    OfferError,
    OfferLaunchResult,
)
from provisioners.config import pool_offers
from provisioners.config import slots_per_instance as config_slots
from provisioners.config_aws import AwsProviderConfig
from provisioners.offers import COLD_KINDS, Offer, offer_key

log = logging.getLogger(__name__)

SPOT_OFFSET = timedelta(seconds=10)  # ValidFrom lead; each InvalidTime answer adds this again
SPOT_INVALID_TIME_RETRIES = 5
SKEW_PROBE_LEAD = timedelta(hours=100)  # the probe request must never be fulfilled
SKEW_PROBE_CANCEL_TRIES = 5
SKEW_PROBE_CANCEL_WAIT_S = 2.0
SKEW_SANITY_LIMIT = timedelta(hours=1)  # a larger estimate is a broken answer, not a clock
UNSEEN_REQUEST_GRACE = timedelta(minutes=5)
_FILTER_VALUES_MAX = 200
# Codes that say "not this type here, now" for one offer, beyond classify_error_code's capacity
# and quota codes: an instance type an AZ does not offer, a fleet that could not be filled.
_OFFER_CAPACITY_CODES = frozenset(
    {"Unsupported", "UnfulfillableCapacity", "capacity-not-available", "InsufficientCapacity"}
)
_TEMPLATE_EXISTS = "InvalidLaunchTemplateName.AlreadyExistsException"
_NOT_FOUND_CODES = frozenset(
    {
        "InvalidInstanceID.NotFound",
        "InvalidInstanceID.Malformed",
        "InvalidSpotInstanceRequestID.NotFound",
        "InvalidSpotInstanceRequestID.Malformed",
    }
)


def _offer_kind(code: str | None, kind: LaunchFailureKind) -> LaunchFailureKind:
    """For an offer, an AZ that does not carry the type is as good as one out of capacity."""
    return LaunchFailureKind.CAPACITY if code in _OFFER_CAPACITY_CODES else kind


class Ec2Error(RuntimeError):
    """A list or terminate call that EC2 refused or that never reached it."""

    def __init__(self, kind: LaunchFailureKind, message: str) -> None:
        super().__init__(f"{kind.value}: {message}")
        self.kind = kind
        self.message = message


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _error_code(exc: BaseException) -> str | None:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", "Unknown"))
    return None


def _classify(exc: ClientError | BotoCoreError) -> tuple[LaunchFailureKind, str]:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "Unknown"))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return classify_error_code(code, status), f"{code}: {error.get('Message', '')}"
    if isinstance(exc, NoCredentialsError | PartialCredentialsError | ParamValidationError):
        return LaunchFailureKind.CONFIG, str(exc)
    # Endpoint unreachable, connection reset, timeouts, an answer that is not EC2's XML.
    return LaunchFailureKind.TRANSIENT, f"{type(exc).__name__}: {exc}"


def _chunks(values: Sequence[str]) -> Iterable[list[str]]:
    for start in range(0, len(values), _FILTER_VALUES_MAX):
        yield list(values[start : start + _FILTER_VALUES_MAX])


def default_client(region: str, endpoint_url: str | None) -> Any:
    """An EC2 client with the standard credential chain and botocore's standard retries."""
    session = boto3.session.Session(region_name=region)
    config = Config(
        retries={"mode": "standard", "max_attempts": 3}, connect_timeout=10, read_timeout=60
    )
    return session.client("ec2", endpoint_url=endpoint_url, config=config)


class AwsEc2Provisioner:
    """The Provisioner of one AWS pool; see provisioners/base.py for the contract.

    `endpoint_url` None means real AWS; tests point it at moto. `clock` gives aware datetimes.
    `clock_skew` None means estimate it (one throwaway spot request) before the first spot launch.
    """

    def __init__(
        self,
        *,
        region: str,
        pool: str,
        image_id: str,
        ssh_key_name: str,
        user_data: str,
        master_address: str,
        slots_per_instance: int,
        instance_type: str = "g4dn.metal",
        endpoint_url: str | None = None,
        tag_key: str = "managed_by",
        tag_value: str = "determined-ai-determined",
        instance_name: str = "determined-ai-agent",
        root_volume_size: int = 200,
        public_ip: bool = True,
        subnet_id: str = "",
        security_group_id: str = "",
        iam_instance_profile_arn: str = "",
        custom_tags: Mapping[str, str] | None = None,
        spot: bool = False,
        spot_max_price: str | None = None,
        clock: Callable[[], datetime] = _utc_now,
        client_factory: Callable[[], Any] | None = None,
        clock_skew: timedelta | None = None,
        sleep: Callable[[float], None] = time.sleep,
        offers: Sequence[Offer] | None = None,
    ) -> None:
        self.pool = pool
        self.spot = spot
        self.offers = tuple(offers or ()) or (
            Offer(instance_type, subnet_id, slots_per_instance, spot, 0.0),
        )
        self._subnets = {o.location for o in self.offers}
        # Several types or subnets: EC2 Fleet chooses among them; one of each: the one-type path.
        self.uses_fleet = len({(o.instance_type, o.location) for o in self.offers}) > 1
        self._template: str | None = None
        self._tag_value = tag_value
        self._slots_per_instance = slots_per_instance
        self._spec = Ec2LaunchSpec(
            instance_type=instance_type,
            image_id=image_id,
            ssh_key_name=ssh_key_name,
            user_data=user_data,
            root_volume_size=root_volume_size,
            public_ip=public_ip,
            subnet_id=subnet_id,
            security_group_id=security_group_id,
            iam_instance_profile_arn=iam_instance_profile_arn,
        )
        self._tags = launch_tags(
            instance_name=instance_name,
            tag_key=tag_key,
            tag_value=tag_value,
            pool=pool,
            master_address=master_address,
            custom_tags=custom_tags or {},
        )
        self._scope = scope_filters(tag_key, tag_value, pool)
        self._spot_max_price = normalize_spot_price(spot_max_price)
        self._clock = clock
        self._sleep = sleep
        self._client_factory = client_factory or (lambda: default_client(region, endpoint_url))
        self._client: Any = None
        self._lock = threading.Lock()
        self._clock_skew = clock_skew
        self._tracked: dict[str, datetime] = {}  # spot request id -> when we first knew of it
        self._reported: set[tuple[str, str]] = set()  # (request id, problem) already logged

    @classmethod
    def from_config(
        cls,
        cfg: AwsProviderConfig,
        *,
        pool: str,
        master_url: str,
        setup_script: str,
        **overrides: Any,
    ) -> AwsEc2Provisioner:
        """The provisioner of a pool's `type: aws` provider block.

        `master_url` is the resolved address agents dial (it becomes the master-address tag),
        `setup_script` the rendered start-up script (the user data). `overrides` are the
        constructor's test seams: clock, client_factory, clock_skew, sleep.
        """
        nic = cfg.network_interface
        return cls(
            region=cfg.region,
            endpoint_url=cfg.endpoint_url,
            pool=pool,
            tag_key=cfg.tag_key,
            tag_value=cfg.tag_value,
            instance_name=cfg.instance_name,
            instance_type=cfg.offer_types[0].type,
            image_id=cfg.image_id,
            ssh_key_name=cfg.ssh_key_name,
            root_volume_size=cfg.root_volume_size,
            public_ip=nic.public_ip,
            subnet_id=cfg.subnets[0],
            security_group_id=nic.security_group_id,
            iam_instance_profile_arn=cfg.iam_instance_profile_arn,
            custom_tags={tag.key: tag.value for tag in cfg.custom_tags},
            spot=cfg.spot,
            spot_max_price=cfg.spot_price_to_send,
            user_data=setup_script,
            master_address=master_url,
            slots_per_instance=config_slots(cfg),
            offers=pool_offers(cfg),
            **overrides,
        )

    @property
    def slots_per_instance(self) -> int:
        return self._slots_per_instance

    @property
    def tags(self) -> dict[str, str]:
        """The tags on every instance and spot request of this pool (request tag aside)."""
        return dict(self._tags)

    def _ec2(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._client_factory()
            return self._client

    # -- launch -----------------------------------------------------------------------------

    def launch(self, count: int, *, request_id: str) -> list[str]:
        """Start up to `count` instances (spot: request them); returns instance or request ids.

        Raises LaunchFailure. A spot request EC2 fulfilled at once is returned as its instance id.
        """
        if count <= 0:
            return []
        try:
            existing = self._launched_by(request_id)
            if existing is not None:
                log.info("pool %s: launch %s was already made: %s", self.pool, request_id, existing)
                return existing
            if self.spot:
                return self._request_spot(count, request_id)
            return self._run_instances(count, request_id)
        except (ClientError, BotoCoreError) as exc:
            kind, message = _classify(exc)
            failure = LaunchFailure(kind, message)
            if failure.capacity_unavailable or kind is LaunchFailureKind.TRANSIENT:
                log.warning("pool %s: launch of %d failed: %s", self.pool, count, failure)
            else:
                log.error("pool %s: launch of %d failed: %s", self.pool, count, failure)
            raise failure from exc

    def launch_offers(
        self, choices: Sequence[tuple[Offer, int]], *, request_id: str
    ) -> OfferLaunchResult:
        """Launch the first choice (one-type pools) or hand the choices to one EC2 Fleet call.

        Offers EC2 refused for capacity, quota, price or "Unsupported here" come back as errors
        (the caller marks them cold and tries the next); anything else raises LaunchFailure.
        """
        choices = [(offer, count) for offer, count in choices if count > 0]
        if not choices:
            return OfferLaunchResult({})
        first, count = choices[0]
        try:
            by_fleet = self.uses_fleet
            existing = self._launched_by(request_id, spot_requests=first.spot and not by_fleet)
            if existing is not None:
                log.info("pool %s: launch %s was already made: %s", self.pool, request_id, existing)
                return OfferLaunchResult({first.key: existing})
            if by_fleet:
                return self._create_fleet(choices, request_id)
            spec = replace(self._spec, instance_type=first.instance_type, subnet_id=first.location)
            if first.spot:
                ids = self._request_spot(count, request_id, spec)
            else:
                ids = self._run_instances(count, request_id, spec)
            return OfferLaunchResult({first.key: ids})
        except (ClientError, BotoCoreError) as exc:
            kind, message = _classify(exc)
            kind = _offer_kind(_error_code(exc), kind)
            if kind in COLD_KINDS:
                log.warning("pool %s: %s refused: %s", self.pool, first.label, message)
                return OfferLaunchResult({}, (OfferError(first.key, kind, message),))
            failure = LaunchFailure(kind, message)
            log.error("pool %s: launch over offers failed: %s", self.pool, failure)
            raise failure from exc

    def _create_fleet(
        self, choices: Sequence[tuple[Offer, int]], request_id: str
    ) -> OfferLaunchResult:
        """One instant EC2 Fleet over the choices that cover as many slots as the first and
        share its market; it picks one type in one AZ, all or nothing."""
        first, count = choices[0]
        units = count * max(first.slots, 1)
        same = [
            (offer, n)
            for offer, n in choices
            if offer.spot == first.spot and n * max(offer.slots, 1) >= units
        ]
        overrides = [
            FleetOverride(offer.instance_type, offer.location, offer.slots, priority)
            for priority, (offer, _) in enumerate(same)
        ]
        tags = {**self._tags, REQUEST_TAG: request_id}
        request = fleet_request(
            template_name=self._launch_template(),
            overrides=overrides,
            units=units,
            spot=first.spot,
            tags=tags,
            token=client_token(request_id),
            max_price=self._spot_max_price,
        )
        answer = read_fleet_answer(self._ec2().create_fleet(**request), spot=first.spot)
        keys = {(o.instance_type, o.location, o.spot): o.key for o, _ in same}
        launched = {self._key_of(where, keys): ids for where, ids in answer.launched.items() if ids}
        errors = tuple(
            OfferError(
                self._key_of(where, keys),
                _offer_kind(code, classify_error_code(code)),
                f"{code}: {message}",
            )
            for where, code, message in answer.errors
        )
        log.info(
            "pool %s: fleet of %d slots over %d offers: launched %s, errors %s",
            self.pool,
            units,
            len(same),
            launched,
            [(e.offer_key, e.message) for e in errors],
        )
        return OfferLaunchResult(launched, errors)

    def _key_of(
        self, where: tuple[str, str, bool], keys: Mapping[tuple[str, str, bool], str]
    ) -> str:
        if where in keys:
            return keys[where]
        instance_type, subnet, spot = where
        return offer_key(instance_type, subnet, spot=spot)

    def _launch_template(self) -> str:
        """The pool's launch template, made on first use; its name follows its content."""
        if self._template is not None:
            return self._template
        data = launch_template_data(self._spec)
        name = launch_template_name(self._tag_value, self.pool, data)
        try:
            self._ec2().create_launch_template(
                LaunchTemplateName=name,
                LaunchTemplateData=data,
                TagSpecifications=[
                    {"ResourceType": "launch-template", "Tags": tag_list(self._tags)}
                ],
            )
        except ClientError as exc:
            if _error_code(exc) != _TEMPLATE_EXISTS:
                raise
        self._template = name
        return name

    def _launched_by(
        self, request_id: str, *, spot_requests: bool | None = None
    ) -> list[str] | None:
        """Ids of what an earlier launch with this request id made; None if there was none."""
        filters = [*self._scope, {"Name": f"tag:{REQUEST_TAG}", "Values": [request_id]}]
        if self.spot if spot_requests is None else spot_requests:
            requests = self._describe_spot_requests(filters)
            if not requests:
                return None
            self._track(requests)
            return read_spot_requests(requests).launched_ids()
        described = self._describe_instances(filters)  # terminated ones too: still "made"
        if not described:
            return None
        return [d["InstanceId"] for d in described if d["State"]["Name"] in LISTED_STATES]

    def _run_instances(
        self, count: int, request_id: str, spec: Ec2LaunchSpec | None = None
    ) -> list[str]:
        tags = {**self._tags, REQUEST_TAG: request_id}
        request = run_instances_request(spec or self._spec, tags, count, client_token(request_id))
        answer = self._ec2().run_instances(**request)
        ids = [i["InstanceId"] for i in answer["Instances"]]
        log.info("pool %s: launched %d of %d on-demand: %s", self.pool, len(ids), count, ids)
        return ids

    def _request_spot(
        self, count: int, request_id: str, spec: Ec2LaunchSpec | None = None
    ) -> list[str]:
        try:
            answer = self._send_spot_request(count, request_id, spec or self._spec)
        except ClientError as exc:
            if _error_code(exc) != "IdempotentParameterMismatch":
                raise
            # A first call with this token went through, with another ValidFrom.
            existing = self._launched_by(request_id)
            if existing is None:
                raise
            return existing
        requests = answer["SpotInstanceRequests"]
        self._track(requests)
        ids = [r.get("InstanceId") or r["SpotInstanceRequestId"] for r in requests]
        log.info("pool %s: requested %d spot instances: %s", self.pool, count, ids)
        return ids

    def _send_spot_request(
        self, count: int, request_id: str, spec: Ec2LaunchSpec
    ) -> dict[str, Any]:
        """RequestSpotInstances, moving ValidFrom later while EC2 answers InvalidTime."""
        skew = self._ensure_clock_skew()
        tags = {**self._tags, REQUEST_TAG: request_id}
        offset = SPOT_OFFSET
        for attempt in range(SPOT_INVALID_TIME_RETRIES + 1):
            request = spot_request(
                spec,
                tags,
                count,
                token=client_token(request_id),
                valid_from=self._clock() + skew + offset,
                max_price=self._spot_max_price,
            )
            try:
                answer: dict[str, Any] = self._ec2().request_spot_instances(**request)
                return answer
            except ClientError as exc:
                if _error_code(exc) != "InvalidTime" or attempt == SPOT_INVALID_TIME_RETRIES:
                    raise
            offset += SPOT_OFFSET  # EC2's clock is further ahead than we thought
        raise AssertionError("unreachable: the last attempt returns or raises")

    # -- clock skew -------------------------------------------------------------------------

    def _ensure_clock_skew(self) -> timedelta:
        if self._clock_skew is None:
            try:
                self._clock_skew = self.estimate_clock_skew()
            except (ClientError, BotoCoreError) as exc:
                log.warning("pool %s: could not estimate EC2's clock skew: %s", self.pool, exc)
                self._clock_skew = timedelta(0)
        return self._clock_skew

    def estimate_clock_skew(self) -> timedelta:
        """EC2's clock minus ours, from the create time of a throwaway spot request.

        The request is valid only 100 h ahead, is cancelled at once, and carries no pool tags.
        """
        sent = self._clock()
        probe = spot_request(
            self._spec,
            {},
            1,
            token=None,
            valid_from=sent + SKEW_PROBE_LEAD,
            max_price=self._spot_max_price,
        )
        created = self._ec2().request_spot_instances(**probe)["SpotInstanceRequests"][0]
        skew = round_skew_up(utc(created["CreateTime"]) - sent)
        self._discard_probe(created)
        if abs(skew) > SKEW_SANITY_LIMIT:
            log.warning("pool %s: ignoring an EC2 clock skew of %s", self.pool, skew)
            skew = timedelta(0)
        log.info("pool %s: EC2 clock skew estimated at %s", self.pool, skew)
        return skew

    def _discard_probe(self, probe: Mapping[str, Any]) -> None:
        request_id = probe["SpotInstanceRequestId"]
        for attempt in range(SKEW_PROBE_CANCEL_TRIES):
            try:
                self._ec2().cancel_spot_instance_requests(SpotInstanceRequestIds=[request_id])
                break
            except ClientError as exc:
                # EC2 may not know the request it just made yet.
                if _error_code(exc) not in _NOT_FOUND_CODES:
                    raise
                if attempt == SKEW_PROBE_CANCEL_TRIES - 1:
                    log.error("pool %s: could not cancel spot request %s", self.pool, request_id)
                    return
                self._sleep(SKEW_PROBE_CANCEL_WAIT_S)
        if probe.get("InstanceId"):  # fulfilled despite its ValidFrom (emulators do that)
            self._terminate_instances([probe["InstanceId"]])

    # -- list -------------------------------------------------------------------------------

    def list(self) -> list[Instance]:
        """This pool's instances, and in spot mode one pseudo-instance per unfulfilled request.

        Raises Ec2Error when EC2 cannot be asked.
        """
        try:
            tagged = {i.id: i for i in self._tagged_instances()}
            if not self.spot:
                return list(tagged.values())
            return [*tagged.values(), *self._spot_instances(tagged)]
        except (ClientError, BotoCoreError) as exc:
            raise Ec2Error(*_classify(exc)) from exc

    def _tagged_instances(self) -> list[Instance]:
        states = {"Name": "instance-state-name", "Values": list(LISTED_STATES)}
        described = self._describe_instances([*self._scope, states])
        listed = []
        for d in described:
            instance = instance_from_ec2(d)
            if instance is not None:
                listed.append(replace(instance, offer_key=self._offer_of(d, instance.spot)))
        return listed

    def _offer_of(self, described: Mapping[str, Any], spot: bool) -> str:
        """The offer an instance came from; one in a subnet the config does not name was
        launched into the default subnet ('')."""
        subnet = str(described.get("SubnetId") or "")
        if subnet not in self._subnets and "" in self._subnets:
            subnet = ""
        return offer_key(str(described.get("InstanceType", "")), subnet, spot=spot)

    def _spot_instances(self, tagged: Mapping[str, Instance]) -> list[Instance]:
        now = self._clock()
        live = {"Name": "state", "Values": ["open", "active"]}
        requests = {
            r["SpotInstanceRequestId"]: r
            for r in self._describe_spot_requests([*self._scope, live])
        }
        self._track(requests.values())  # also finds the requests of a master before a restart
        missing = sorted(self._tracked_ids() - requests.keys())
        for ids in _chunks(missing):
            by_id = [{"Name": "spot-instance-request-id", "Values": ids}]
            requests.update(
                (r["SpotInstanceRequestId"], r) for r in self._describe_spot_requests(by_id)
            )
        view = read_spot_requests(list(requests.values()))
        self._report(view.problems)
        self._untrack(view.finished)
        if view.orphaned:
            log.info("pool %s: terminating instances of cancelled requests", self.pool)
            self._terminate_instances(view.orphaned)
        adopted = self._adopt({k: v for k, v in view.fulfilled.items() if k not in tagged})
        unseen = self._unseen(set(missing) - requests.keys(), now)
        return [*view.pseudo, *adopted, *unseen]

    def _adopt(self, fulfilled: Mapping[str, Mapping[str, str]]) -> list[Instance]:
        """Instances of fulfilled requests that lack the pool's tags yet: tag them, list them."""
        adopted = []
        for ids in _chunks(sorted(fulfilled)):
            for described in self._describe_instances([{"Name": "instance-id", "Values": ids}]):
                instance = instance_from_ec2(described)
                if instance is None or instance.state is InstanceState.TERMINATING:
                    continue
                self._label_spot_instance(instance.id, fulfilled[instance.id])
                adopted.append(replace(instance, offer_key=self._offer_of(described, True)))
        return adopted

    def _label_spot_instance(self, instance_id: str, tags: Mapping[str, str]) -> None:
        self._ec2().create_tags(Resources=[instance_id], Tags=tag_list(tags))
        try:
            # A spot LaunchSpecification cannot ask for IMDSv2, so it is set once fulfilled.
            self._ec2().modify_instance_metadata_options(InstanceId=instance_id, **METADATA_OPTIONS)
        except ClientError as exc:
            log.warning("pool %s: IMDSv2 not set on %s: %s", self.pool, instance_id, exc)

    def _unseen(self, request_ids: Iterable[str], now: datetime) -> list[Instance]:
        """Tracked requests EC2 does not show: pending for a while, then forgotten."""
        shown = []
        with self._lock:
            for request_id in request_ids:
                since = self._tracked.get(request_id)  # a terminate may have dropped it since
                if since is None:
                    continue
                if now - since < UNSEEN_REQUEST_GRACE:
                    shown.append(pseudo_instance(request_id, since))
                else:
                    del self._tracked[request_id]
        return shown

    def _report(self, problems: Mapping[str, str]) -> None:
        for request_id, problem in problems.items():
            if (request_id, problem) not in self._reported:
                self._reported.add((request_id, problem))
                log.error("pool %s: spot request %s: %s", self.pool, request_id, problem)

    # -- terminate --------------------------------------------------------------------------

    def terminate(self, instance_ids: Sequence[str]) -> None:
        """Terminate this pool's instances and cancel its spot requests (`sir-` ids).

        Ids that are unknown, already gone or not this pool's are skipped. Raises Ec2Error.
        """
        requests = [i for i in instance_ids if i.startswith(SPOT_REQUEST_PREFIX)]
        instances = [i for i in instance_ids if not i.startswith(SPOT_REQUEST_PREFIX)]
        try:
            if requests:
                self._cancel_spot_requests(requests)
            if instances:
                ours = self._describe_instances(
                    [
                        *self._scope,
                        {"Name": "instance-id", "Values": instances},
                        {"Name": "instance-state-name", "Values": list(LISTED_STATES)},
                    ]
                )
                self._terminate_instances([d["InstanceId"] for d in ours])
        except (ClientError, BotoCoreError) as exc:
            raise Ec2Error(*_classify(exc)) from exc

    def _cancel_spot_requests(self, request_ids: Sequence[str]) -> None:
        by_id = {"Name": "spot-instance-request-id", "Values": list(request_ids)}
        ours = self._describe_spot_requests([*self._scope, by_id])
        live = [r["SpotInstanceRequestId"] for r in ours if r["State"] in ("open", "active")]
        if live:
            self._ignoring_not_found(
                lambda ids: self._ec2().cancel_spot_instance_requests(SpotInstanceRequestIds=ids),
                live,
            )
            log.info("pool %s: cancelled spot requests %s", self.pool, live)
        # A request fulfilled since the last list: its instance goes too.
        self._terminate_instances([r["InstanceId"] for r in ours if r.get("InstanceId")])
        self._untrack(r["SpotInstanceRequestId"] for r in ours)

    def _terminate_instances(self, instance_ids: Sequence[str]) -> None:
        if not instance_ids:
            return
        self._ignoring_not_found(
            lambda ids: self._ec2().terminate_instances(InstanceIds=ids), list(instance_ids)
        )
        log.info("pool %s: terminating %s", self.pool, list(instance_ids))

    @staticmethod
    def _ignoring_not_found(call: Callable[[list[str]], Any], ids: list[str]) -> None:
        """One call for all ids; if EC2 knows one not, one call each, skipping those."""
        try:
            call(ids)
            return
        except ClientError as exc:
            if _error_code(exc) not in _NOT_FOUND_CODES:
                raise
        for one in ids:
            try:
                call([one])
            except ClientError as exc:
                if _error_code(exc) not in _NOT_FOUND_CODES:
                    raise

    # -- describe and tracking --------------------------------------------------------------

    def _describe_instances(self, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        pages = self._ec2().get_paginator("describe_instances").paginate(Filters=filters)
        return [i for page in pages for r in page["Reservations"] for i in r["Instances"]]

    def _describe_spot_requests(self, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        paginator = self._ec2().get_paginator("describe_spot_instance_requests")
        return [
            r for page in paginator.paginate(Filters=filters) for r in page["SpotInstanceRequests"]
        ]

    def _track(self, requests: Iterable[Mapping[str, Any]]) -> None:
        now = self._clock()
        with self._lock:
            for request in requests:
                if request["State"] in ("open", "active"):
                    self._tracked.setdefault(request["SpotInstanceRequestId"], now)

    def _untrack(self, request_ids: Iterable[str]) -> None:
        with self._lock:
            for request_id in request_ids:
                self._tracked.pop(request_id, None)

    def _tracked_ids(self) -> set[str]:
        with self._lock:
            return set(self._tracked)
